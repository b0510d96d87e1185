# The thin plugin (not the daemon-set's thick one: a CNI binary on the node
# is all a single node needs), and the NetworkAttachmentDefinition CRD from
# the same module's deployment (share/multus-daemonset.yml: the node applies
# the CRD from it, the rest is the daemon-set's).
recipe_multus() {
	local mod=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
	$GO build -trimpath -ldflags "-s -w" -o "$out/bin/multus" "$mod/cmd/multus"
	mkdir -p "$out/share"
	cp "$($GO list -m -f '{{.Dir}}' "$mod")/deployments/multus-daemonset.yml" "$out/share/"
}
