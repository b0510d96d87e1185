# Kubernetes' daemons, stamped with the version of the module they come from
# (kubelet and the API server report it, and the node's facts store it), and
# the pause image's program from the same module: a static binary the node's
# sandbox image is made of (no image registry is needed).
recipe_kubernetes() {
	local v; v=$($GO list -m -f '{{.Version}}' k8s.io/kubernetes)
	local minor=${v#v1.}; minor=${minor%%.*}
	local pkg=k8s.io/component-base/version
	$GO build -trimpath -o "$out/bin/" \
		-ldflags "-s -w -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
	local src; src=$($GO list -m -f '{{.Dir}}' k8s.io/kubernetes)
	${CC:-cc} -Os -static -DVERSION="$v" -o "$out/bin/pause" "$src/build/pause/linux/pause.c"
	strip "$out/bin/pause"
}
