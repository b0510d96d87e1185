#!/usr/bin/env bash
# Builds the switches and NF frameworks Debian does not package (VPP, Snabb,
# Click) from source snapshots, offline, each into its own directory under one
# prefix, and skips a build whose sources, patches and recipe are unchanged.
#
#   switches/build.sh [NAME ...]        NAME: vpp snabb click click-dpdk (default: all)
#
# CNFPERF_SOURCES  where NAME.tar.xz / NAME.tar.gz / NAME/ are (default: ../shared/sources
#                  beside this checkout); click-dpdk is built from click's sources
# CNFPERF_SWITCHES the prefix (default: .switches in this checkout); NAME goes to
#                  $CNFPERF_SWITCHES/NAME, with NAME.stamp beside it
# JOBS             parallel compile jobs (default: the number of cores)
#
# A stamp holds the checksum of the sources, the patches and the recipe; a
# build whose stamp matches prints "up to date" and does nothing. Local patches
# are switches/patches/NAME/*.patch, applied in order; each says why it exists.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
sources=${CNFPERF_SOURCES:-$repo/../shared/sources}
prefix=${CNFPERF_SWITCHES:-$repo/.switches}
jobs=${JOBS:-$(nproc)}
ALL=(snabb click click-dpdk vpp)

die() { echo "switches: $*" >&2; exit 2; }

# The source of NAME: a tarball or a directory under $sources.
source_of() {
	local name=$1 s
	for s in "$sources/$name.tar.xz" "$sources/$name.tar.gz" "$sources/$name"; do
		[ -e "$s" ] && { echo "$s"; return; }
	done
	die "no sources for $name in $sources (NAME.tar.xz, NAME.tar.gz or NAME/; set CNFPERF_SOURCES)"
}

# A checksum of a tarball, or of every file of a directory checkout.
checksum() {
	if [ -d "$1" ]; then
		(cd "$1" && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z |
			xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
	else
		sha256sum "$1" | cut -d' ' -f1
	fi
}

# Unpack (or copy) the sources into $2, one top directory stripped, then patch.
unpack() {
	local src=$1 dir=$2 patches=$3 p
	rm -rf "$dir"
	mkdir -p "$dir"
	if [ -d "$src" ]; then
		cp -a "$src/." "$dir/"
	else
		tar -xf "$src" -C "$dir" --strip-components=1
	fi
	for p in "$here/patches/$patches"/*.patch; do
		[ -e "$p" ] || continue
		echo "switches: $patches: applying $(basename "$p")"
		patch -s -d "$dir" -p1 < "$p"
	done
}

# --- recipes: each builds in $work and installs into $dest --------------------

recipe_snabb() {
	make -C "$work" -j"$jobs"
	install -D -m 755 "$work/src/snabb" "$dest/bin/snabb"
}

recipe_click() {
	(cd "$work" && ./configure --prefix="$dest" --disable-linuxmodule --enable-etherswitch \
		--disable-dynamic-linking)
	make -C "$work" -j"$jobs"
	make -C "$work" install-userlevel
	strip "$dest/bin/click"
}

# DPDK 22.11 removed the names defined below; Click still uses them (the RTE_
# prefixed ones mean the same).
recipe_click_dpdk() {
	local names="-DETH_MQ_RX_RSS=RTE_ETH_MQ_RX_RSS -DETH_RSS_IP=RTE_ETH_RSS_IP
		-DETH_RSS_UDP=RTE_ETH_RSS_UDP -DETH_RSS_TCP=RTE_ETH_RSS_TCP
		-DETH_LINK_FULL_DUPLEX=RTE_ETH_LINK_FULL_DUPLEX
		-DRTE_LCORE_FOREACH_SLAVE=RTE_LCORE_FOREACH_WORKER"
	(cd "$work" && CXXFLAGS="-g -O2 $(echo $names)" ./configure --prefix="$dest" \
		--disable-linuxmodule --enable-user-multithread --enable-dpdk --enable-etherswitch)
	make -C "$work" -j"$jobs"
	make -C "$work" install-userlevel
	strip "$dest/bin/click"
}

# VPP's top-level make downloads DPDK and other externals: CMake is driven
# directly, for the programs and plugins cnfperf runs only: VPP's own
# vhost-user, memif and af_packet plugins (its dpdk plugin needs DPDK's driver
# SDK headers, which Debian does not ship), no device drivers or crypto engines
# (their many CPU variants are most of a full build's time). The libraries'
# search path is relative ($ORIGIN: bin/'s ../lib for the programs, their own
# directory for the libraries), so the install can move with its prefix.
# VPP's API generator (#!/usr/bin/env python3) needs ply: Debian's python3 has
# it (python3-ply), whatever other python3 comes first on PATH.
recipe_vpp() (
	export PATH=/usr/bin:$PATH
	local targets="vpp vppctl vhost_plugin memif_plugin af_packet_plugin"
	local libs="vppinfra svm vlib vlibapi vlibmemory vnet"
	[ -f "$work/src/scripts/.version" ] || echo "26.10-rc0" > "$work/src/scripts/.version"
	cmake -G Ninja -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=release \
		-DVPP_USE_SYSTEM_DPDK=ON -DVPP_USE_LTO=OFF \
		-DVPP_MARCH_VARIANT_X86_64_V3=OFF -DVPP_MARCH_VARIANT_X86_64_V4=OFF \
		-DVPP_PLUGINS=vhost,memif,af_packet -DVPP_DRIVERS=none -DVPP_CRYPTO_ENGINES=none \
		-DVPP_SET_RPATH=OFF -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
		-DCMAKE_INSTALL_RPATH='$ORIGIN/../lib/x86_64-linux-gnu:$ORIGIN'
	ninja -C "$work/build" -j"$jobs" $targets
	local lib=lib/x86_64-linux-gnu l p
	mkdir -p "$dest/bin" "$dest/$lib/vpp_plugins"
	install -m 755 "$work/build/bin/vpp" "$work/build/bin/vppctl" "$dest/bin/"
	for l in $libs; do
		cp -a "$work/build/$lib/lib$l.so"* "$dest/$lib/"
	done
	for p in vhost memif af_packet; do
		install -m 644 "$work/build/$lib/vpp_plugins/${p}_plugin.so" "$dest/$lib/vpp_plugins/"
	done
	strip --strip-unneeded "$dest/bin/"* "$dest/$lib/"*.so.* "$dest/$lib/vpp_plugins/"*.so
)

# --- one build -----------------------------------------------------------------

build() {
	local name=$1 from=$1
	[ "$name" = click-dpdk ] && from=click
	local recipe=recipe_${name//-/_}
	declare -F "$recipe" >/dev/null || die "unknown build $name (one of: ${ALL[*]})"
	local src; src=$(source_of "$from")
	dest=$prefix/$name
	local stamp=$prefix/$name.stamp
	local sum; sum=$( { checksum "$src"; cat "$here/patches/$from"/*.patch 2>/dev/null || true;
		declare -f "$recipe"; } | sha256sum | cut -d' ' -f1)
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && [ -d "$dest" ]; then
		echo "switches: $name: up to date ($dest)"
		return
	fi
	echo "switches: $name: building from $src into $dest"
	local t0=$SECONDS
	work=$prefix/.build/$name
	rm -f "$stamp"
	rm -rf "$dest"
	unpack "$src" "$work" "$from"
	# Not `recipe || …`: bash ignores set -e in a command on the left of ||,
	# so a failing step inside the recipe would go unnoticed.
	local rc=0
	set +e
	( set -e; "$recipe" ) > "$prefix/$name.log" 2>&1
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		echo "switches: $name: build failed; the last lines of $prefix/$name.log:" >&2
		tail -n 20 "$prefix/$name.log" >&2
		exit 1
	fi
	rm -rf "$work"
	echo "$sum" > "$stamp"
	echo "switches: $name: built in $((SECONDS - t0)) s ($(du -sh "$dest" | cut -f1))"
}

mkdir -p "$prefix"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
for n in "${names[@]}"; do
	build "$n"
done
