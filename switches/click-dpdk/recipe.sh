# Click with DPDK (switches/build.sh sources this: its recipe_click_dpdk builds
# in $work and installs into $out; the stamp covers the function's text). It
# repeats click's few steps rather than sharing them: editing one recipe
# rebuilds that one alone.

SOURCE=click        # built from Click's sources (sources.lock's [click], patches/click/)
LINKS_DPDK=yes      # it links the system's DPDK: its stamp covers DPDK's version

# DPDK 22.11 removed the names defined below; Click still uses them (the RTE_
# prefixed ones mean the same).
recipe_click_dpdk() {
	local names="-DETH_MQ_RX_RSS=RTE_ETH_MQ_RX_RSS -DETH_RSS_IP=RTE_ETH_RSS_IP
		-DETH_RSS_UDP=RTE_ETH_RSS_UDP -DETH_RSS_TCP=RTE_ETH_RSS_TCP
		-DETH_LINK_FULL_DUPLEX=RTE_ETH_LINK_FULL_DUPLEX
		-DRTE_LCORE_FOREACH_SLAVE=RTE_LCORE_FOREACH_WORKER"
	(cd "$work" && CXXFLAGS="-g -O2 $(echo $names)" ./configure --disable-linuxmodule \
		--enable-tools=no --enable-user-multithread --enable-dpdk --enable-etherswitch)
	make -C "$work" -j"$jobs"
	install -D -m 755 "$work/userlevel/click" "$out/bin/click"
	strip "$out/bin/click"
}
