# FD.io VPP (switches/build.sh sources this: its recipe_vpp builds in $work and
# installs into $out; the stamp covers the function's text).

# VPP's top-level make downloads DPDK and other externals: CMake is driven
# directly, for the programs and plugins cnfperf runs only: VPP's own
# vhost-user and memif plugins, and af_packet (a wire's NIC taken as a port,
# for a node on another host); its dpdk plugin needs DPDK's driver SDK
# headers, which Debian does not ship. No device drivers or crypto engines
# (their many CPU variants are most of a full build's time). Libraries go to
# lib/ (not lib/<multiarch>) and find each other relative to themselves
# ($ORIGIN), so the build runs from the cache, through the prefix's link.
# An archive has no git metadata to tell VPP its version: the lock's version
# does, always. VPP's version script runs git all the same, which is why a
# mirror directory's .git is never copied (sources.py); and git must not look
# above the build's tree, or it describes whatever repository holds the cache
# (a home directory kept in git) instead.
# VPP's API generator (#!/usr/bin/env python3) needs ply: Debian's python3 has
# it (python3-ply), whatever other python3 comes first on PATH.
recipe_vpp() (
	export PATH=/usr/bin:$PATH GIT_CEILING_DIRECTORIES=${work%/*}
	local targets="vpp vppctl vhost_plugin memif_plugin af_packet_plugin"
	local libs="vppinfra svm vlib vlibapi vlibmemory vnet"
	local version; version=$(sources version vpp)
	[ -n "$version" ] || { echo "switches/sources.lock names no version of vpp" >&2; return 1; }
	echo "$version" > "$work/src/scripts/.version"
	cmake -G Ninja -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=release \
		-DCMAKE_INSTALL_LIBDIR=lib -DVPP_USE_SYSTEM_DPDK=ON -DVPP_USE_LTO=OFF \
		-DVPP_MARCH_VARIANT_X86_64_V3=OFF -DVPP_MARCH_VARIANT_X86_64_V4=OFF \
		-DVPP_PLUGINS=vhost,memif,af_packet -DVPP_DRIVERS=none -DVPP_CRYPTO_ENGINES=none \
		-DVPP_SET_RPATH=OFF -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
		-DCMAKE_INSTALL_RPATH='$ORIGIN/../lib:$ORIGIN'
	ninja -C "$work/build" -j"$jobs" $targets
	local l p
	mkdir -p "$out/bin" "$out/lib/vpp_plugins"
	install -m 755 "$work/build/bin/vpp" "$work/build/bin/vppctl" "$out/bin/"
	for l in $libs; do
		cp -a "$work/build/lib/lib$l.so"* "$out/lib/"
	done
	for p in vhost memif af_packet; do
		install -m 644 "$work/build/lib/vpp_plugins/${p}_plugin.so" "$out/lib/vpp_plugins/"
	done
	strip --strip-unneeded "$out/bin/"* "$out/lib/"*.so.* "$out/lib/vpp_plugins/"*.so
)
