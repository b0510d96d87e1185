# etcd's server from main.go.
recipe_etcd() {
	$GO build -trimpath -ldflags "-s -w" -o "$out/bin/etcd" .
}
