recipe_crictl() {
	local v; v=$($GO list -m -f '{{.Version}}' sigs.k8s.io/cri-tools)
	$GO build -trimpath -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$v" \
		-o "$out/bin/crictl" sigs.k8s.io/cri-tools/cmd/crictl
}
