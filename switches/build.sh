#!/usr/bin/env bash
# Builds the switches and NF frameworks Debian does not package (VPP, Snabb,
# Click) from source snapshots, offline, each into its own directory under one
# prefix, and skips a build whose sources, patches and recipe are unchanged.
#
#   switches/build.sh [--check] [NAME ...]   NAME: snabb click click-dpdk vpp (default: all)
#
# --check          build nothing: say per NAME whether it is up to date; exit 1 if any is not
# CNFPERF_SOURCES  where NAME.tar.xz / NAME.tar.gz / NAME/ are (default: ../shared/sources
#                  beside this checkout); click-dpdk is built from click's sources
# CNFPERF_SWITCHES the prefix (default: .switches in this checkout); NAME goes to
#                  $CNFPERF_SWITCHES/NAME, with NAME.stamp beside it
# JOBS             parallel compile jobs (default: the number of cores)
# KEEP_BUILD=1     keep a failed build's tree ($CNFPERF_SWITCHES/.build/NAME)
#
# A stamp holds the checksum of the sources, the patches and the recipe; a
# build whose stamp matches prints "up to date" and does nothing. A build is
# staged beside the prefix and replaces the installed one only when it
# succeeded, so a failed or interrupted build leaves the last good one (and its
# stamp) in place; one build runs at a time (a lock in the prefix). Missing
# sources skip their build with one line (under CI=true they are an error).
# Local patches are switches/patches/NAME/*.patch, applied in order; each says
# why it exists.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
sources=${CNFPERF_SOURCES:-$repo/../shared/sources}
prefix=${CNFPERF_SWITCHES:-$repo/.switches}
jobs=${JOBS:-$(nproc)}
ALL=(snabb click click-dpdk vpp)

die() { echo "switches: $*" >&2; exit 2; }

# The sources NAME is built from (click-dpdk is Click built another way).
origin() { [ "$1" = click-dpdk ] && echo click || echo "$1"; }

# The source of NAME: a tarball or a directory under $sources, or nothing.
source_of() {
	local s
	for s in "$sources/$1.tar.xz" "$sources/$1.tar.gz" "$sources/$1"; do
		[ -e "$s" ] && { echo "$s"; return; }
	done
	return 0
}

# A checksum of a tarball, or of a directory checkout's files (a git
# checkout's tracked files only, so its own build products do not count).
checksum() {
	if [ -d "$1/.git" ]; then
		(cd "$1" && git ls-files -z | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
	elif [ -d "$1" ]; then
		(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z |
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

# --- recipes: each builds in $work and installs into $out -----------------------
# $out is a staging directory that becomes $prefix/NAME when the recipe
# succeeded. Each recipe's settings live inside it: its stamp covers its own
# text only, so editing one recipe rebuilds that one alone (which is also why
# click and click-dpdk repeat their few steps).

recipe_snabb() {
	make -C "$work" -j"$jobs"
	install -D -m 755 "$work/src/snabb" "$out/bin/snabb"
}

# Click's userlevel driver with every element built in (no dynamic
# linking), no tools; only the `click` program is installed (it needs no
# other file at run time).
recipe_click() {
	(cd "$work" && ./configure --disable-linuxmodule --enable-tools=no --enable-etherswitch \
		--disable-dynamic-linking)
	make -C "$work" -j"$jobs"
	install -D -m 755 "$work/userlevel/click" "$out/bin/click"
	strip "$out/bin/click"
}

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

# VPP's top-level make downloads DPDK and other externals: CMake is driven
# directly, for the programs and plugins cnfperf runs only: VPP's own
# vhost-user and memif plugins (its dpdk plugin needs DPDK's driver SDK
# headers, which Debian does not ship), no device drivers or crypto engines
# (their many CPU variants are most of a full build's time). Libraries go to
# lib/ (not lib/<multiarch>) and find each other relative to themselves
# ($ORIGIN), so the install can move with its prefix.
# A tarball has no git metadata to tell VPP its version: VPP_VERSION does
# (default: the snapshot's, 26.10-rc0); a git checkout says its own. Git
# must not look above the prefix, or it describes cnfperf's checkout instead.
# VPP's API generator (#!/usr/bin/env python3) needs ply: Debian's python3 has
# it (python3-ply), whatever other python3 comes first on PATH.
recipe_vpp() (
	export PATH=/usr/bin:$PATH GIT_CEILING_DIRECTORIES=$prefix
	local targets="vpp vppctl vhost_plugin memif_plugin"
	local libs="vppinfra svm vlib vlibapi vlibmemory vnet"
	[ -d "$work/.git" ] || [ -f "$work/src/scripts/.version" ] ||
		echo "${VPP_VERSION:-26.10-rc0}" > "$work/src/scripts/.version"
	cmake -G Ninja -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=release \
		-DCMAKE_INSTALL_LIBDIR=lib -DVPP_USE_SYSTEM_DPDK=ON -DVPP_USE_LTO=OFF \
		-DVPP_MARCH_VARIANT_X86_64_V3=OFF -DVPP_MARCH_VARIANT_X86_64_V4=OFF \
		-DVPP_PLUGINS=vhost,memif -DVPP_DRIVERS=none -DVPP_CRYPTO_ENGINES=none \
		-DVPP_SET_RPATH=OFF -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
		-DCMAKE_INSTALL_RPATH='$ORIGIN/../lib:$ORIGIN'
	ninja -C "$work/build" -j"$jobs" $targets
	local l p
	mkdir -p "$out/bin" "$out/lib/vpp_plugins"
	install -m 755 "$work/build/bin/vpp" "$work/build/bin/vppctl" "$out/bin/"
	for l in $libs; do
		cp -a "$work/build/lib/lib$l.so"* "$out/lib/"
	done
	for p in vhost memif; do
		install -m 644 "$work/build/lib/vpp_plugins/${p}_plugin.so" "$out/lib/vpp_plugins/"
	done
	strip --strip-unneeded "$out/bin/"* "$out/lib/"*.so.* "$out/lib/vpp_plugins/"*.so
)

# --- one build -----------------------------------------------------------------

# The checksum a build of NAME from $src would be stamped with.
sum_of() {
	local name=$1 src=$2
	{ checksum "$src"; cat "$here/patches/$(origin "$name")"/*.patch 2>/dev/null || true
	  declare -f unpack "recipe_${name//-/_}"; } | sha256sum | cut -d' ' -f1
}

# What stands: "up to date", "stale", "not built" or "no sources".
state() {
	local name=$1 src; src=$(source_of "$(origin "$name")")
	[ -n "$src" ] || { echo "no sources"; return; }
	local stamp=$prefix/$name.stamp
	[ -f "$stamp" ] && [ -d "$prefix/$name" ] || { echo "not built"; return; }
	[ "$(cat "$stamp")" = "$(sum_of "$name" "$src")" ] && echo "up to date" || echo stale
}

build() {
	local name=$1 from; from=$(origin "$1")
	local src; src=$(source_of "$from")
	if [ -z "$src" ]; then
		local why="no sources for $name in $sources (NAME.tar.xz, NAME.tar.gz or NAME/; set CNFPERF_SOURCES)"
		[ "${CI:-}" = true ] && die "$why"
		echo "switches: $why: skipped (its data planes and tests say it is not built)"
		return
	fi
	local dest=$prefix/$name stamp=$prefix/$name.stamp
	local sum; sum=$(sum_of "$name" "$src")
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && [ -d "$dest" ]; then
		echo "switches: $name: up to date ($dest)"
		return
	fi
	echo "switches: $name: building from $src into $dest (log: $prefix/$name.log)"
	local t0=$SECONDS
	work=$prefix/.build/$name
	out=$prefix/.stage/$name
	rm -rf "$out"
	unpack "$src" "$work" "$from"
	# Not `recipe || …`: bash ignores set -e in a command on the left of ||,
	# so a failing step inside the recipe would go unnoticed.
	local rc=0
	set +e
	( set -e; "recipe_${name//-/_}" ) > "$prefix/$name.log" 2>&1
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		echo "switches: $name: build failed; the last lines of $prefix/$name.log:" >&2
		tail -n 20 "$prefix/$name.log" >&2
		[ "${KEEP_BUILD:-}" = 1 ] || rm -rf "$work"
		rm -rf "$out"
		exit 1
	fi
	rm -rf "$work" "$dest.old"
	# The stamp goes last: a build without one is not a build.
	rm -f "$stamp"
	[ ! -e "$dest" ] || mv "$dest" "$dest.old"
	mv "$out" "$dest"
	rm -rf "$dest.old"
	echo "$sum" > "$stamp"
	echo "switches: $name: built in $((SECONDS - t0)) s ($(du -sh "$dest" | cut -f1))"
}

check=false
[ "${1:-}" = --check ] && { check=true; shift; }
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
for n in "${names[@]}"; do
	[[ " ${ALL[*]} " == *" $n "* ]] || die "unknown build $n (one of: ${ALL[*]})"
done

if $check; then
	rc=0
	for n in "${names[@]}"; do
		s=$(state "$n")
		echo "switches: $n: $s"
		[ "$s" = "up to date" ] || rc=1
	done
	exit $rc
fi

mkdir -p "$prefix"
exec 9>"$prefix/.lock"
flock -n 9 || { echo "switches: another build holds $prefix/.lock; waiting"; flock 9; }
for n in "${names[@]}"; do
	build "$n"
done
