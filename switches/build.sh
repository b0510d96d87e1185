#!/usr/bin/env bash
# Builds the switches and NF frameworks Debian does not package (VPP, Snabb,
# Click) from their pinned sources (switches/sources.lock) into a cache of
# builds that every checkout of the same user shares, and links each into one
# prefix; a build whose sources, patches and recipe are unchanged is not redone.
#
#   switches/build.sh [--check | --prune] [NAME ...]
#                               NAME: snabb click click-dpdk vpp (default: all)
#
# --check   build nothing: say per NAME whether it is up to date, cached (built
#           by another checkout: linking it is all a build does), stale or not
#           built; exit 1 if any is not up to date
# --prune   remove the cached builds and downloads that this checkout would not
#           use (another checkout of other sources rebuilds its own when asked)
# CNFPERF_SOURCES      a mirror folder of the sources: NAME.tar.xz, NAME.tar.gz
#                      or NAME/ (default: ../shared/sources beside this checkout,
#                      if it exists); click-dpdk is built from click's sources
# CNFPERF_SOURCES_URL  download from here instead of upstream (a mirror folder
#                      over HTTP or file://, files named as in it)
# CNFPERF_SWITCHES     the prefix (default: .switches in this checkout);
#                      $CNFPERF_SWITCHES/NAME links to NAME's build, with
#                      NAME.stamp and the log of its last build here beside it
# XDG_CACHE_HOME       the cache (default: ~/.cache): builds in
#                      cnfperf/switches/NAME-STAMP, downloads in cnfperf/sources
# JOBS                 parallel compile jobs (default: the number of cores)
# KEEP_BUILD=1         keep a failed or interrupted build's tree
#                      (cnfperf/switches/.build/NAME-STAMP)
#
# switches/sources.py finds each source (a mirror, the download cache, or a
# download) and checks it against the lock; a copy that does not match stops
# the build with one line. A source to be had nowhere skips its builds with one
# line naming the URL it needs (under CI=true that is an error). A stamp holds
# the checksum of the lock's tree hash and version, the patches, the recipe and
# the compilers' versions (and DPDK's, for a build that links it), so a source
# mirrored and the same source downloaded give one stamp, and an upgraded
# compiler or DPDK another.
# A build is staged beside the cache's builds and moved in only when it
# succeeded, and the prefix is relinked only then: a failed or interrupted
# build leaves the last good one (and its stamp) in place, and neither its tree
# nor its stage (SIGINT, SIGTERM, SIGHUP: exit 130, 143, 129). One build runs
# at a time (a lock in the cache). Local patches are switches/patches/NAME/*.patch,
# applied in order; each says why it exists.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
prefix=${CNFPERF_SWITCHES:-$repo/.switches}
jobs=${JOBS:-$(nproc)}
ALL=(snabb click click-dpdk vpp)

die() { echo "switches: $*" >&2; exit 2; }

[ -n "${XDG_CACHE_HOME:-}${HOME:-}" ] ||
	die "neither XDG_CACHE_HOME nor HOME is set: the cache of builds is below one"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cnfperf/switches

# The sources NAME is built from (click-dpdk is Click built another way).
origin() { [ "$1" = click-dpdk ] && echo click || echo "$1"; }

sources() { python3 "$here/sources.py" "$@"; }

# NAME's sources, checked, into $2, then its patches. The status of
# sources.py unpack (3: no sources to be had), or 1 if a patch failed.
unpack() {
	local from dir=$2 p; from=$(origin "$1")
	sources unpack "$from" "$dir" || return $?
	for p in "$here/patches/$from"/*.patch; do
		[ -e "$p" ] || continue
		echo "switches: $1: applying $(basename "$p")"
		patch -s -d "$dir" -p1 < "$p" || return 1
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

# --- one build -----------------------------------------------------------------

# The build under way: its name, tree and stage, and the process group of the
# step (in_group) running in it.
building= work= out= step=

# "$@" (unpacking, a recipe) with set -e, in a process group of its own, and
# waited for. Bash runs a trap only between commands, and a signal ends a
# `wait`: so a signal to build.sh alone is handled at once, and stop() ends the
# step's whole group (make, the compilers). Not `in_group … || …`: bash ignores
# set -e in a command on the left of ||, so a failing step inside would go
# unnoticed; run it under set +e instead.
in_group() {
	set -m
	( set -e; "$@" ) < /dev/null &
	step=$!
	set +m
	local rc=0
	wait "$step" || rc=$?
	step=
	return "$rc"
}

# "${@:2}" with its output to the file $1 (inside in_group: a redirection of
# in_group itself would take stop()'s message too).
logged() {
	"${@:2}" > "$1" 2>&1
}

# On a signal: the step under way ended, the build's tree (unless KEEP_BUILD=1)
# and stage removed, exit 128 + the signal's number. The last good build stays.
stop() {
	trap '' INT TERM HUP
	if [ -n "$step" ]; then
		kill -TERM -- "-$step" 2>/dev/null || true
		wait "$step" 2>/dev/null || true
		local n         # what the step started may take a moment to end
		for n in $(seq 50); do kill -0 -- "-$step" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$step" 2>/dev/null || true
	fi
	[ -z "$work" ] || [ "${KEEP_BUILD:-}" = 1 ] || rm -rf "$work"
	[ -z "$out" ] || rm -rf "$out"
	[ -z "$building" ] || echo "switches: $building: interrupted; not built" >&2
	exit "$1"
}

# The builds that link the system's DPDK (VPP's, without its dpdk plugin, does not).
LINKS_DPDK=(click-dpdk)

# What NAME is built with besides its sources, patches and recipe: the C and
# C++ compilers' versions, and DPDK's for a build that links it. Builds are
# shared by every checkout of the user, so one made before an `apt upgrade` of
# either must not be reused after it.
toolchain() {
	local c
	for c in "${CC:-cc}" "${CXX:-c++}"; do
		echo "$c: $("$c" --version 2>/dev/null | sed -n 1p || echo none)"
	done
	[[ " ${LINKS_DPDK[*]} " != *" $1 "* ]] ||
		echo "libdpdk: $(pkg-config --modversion libdpdk 2>/dev/null || echo none)"
}

# The checksum a build of NAME is stamped with: its sources' tree hash and
# version (the lock's), its patches, how they are applied, its recipe, and
# what it is built with.
sum_of() {
	local name=$1 from; from=$(origin "$1")
	local tree version; tree=$(sources tree "$from"); version=$(sources version "$from")
	{ echo "$tree"; echo "$version"; cat "$here/patches/$from"/*.patch 2>/dev/null || true
	  declare -f unpack "recipe_${name//-/_}"; toolchain "$name"; } | sha256sum | cut -d' ' -f1
}

# Where the cache keeps NAME's build of checksum $2.
entry() { echo "$cache/$1-${2:0:16}"; }

# What stands: "up to date", "cached", "stale" or "not built".
state() {
	local name=$1 sum; sum=$(sum_of "$1")
	if [ "$(cat "$prefix/$name.stamp" 2>/dev/null)" = "$sum" ] && [ -d "$prefix/$name" ]; then
		echo "up to date"
	elif [ -d "$(entry "$name" "$sum")" ]; then
		echo cached
	elif [ -e "$prefix/$name" ] || [ -L "$prefix/$name" ]; then
		echo stale
	else
		echo "not built"
	fi
}

# $prefix/NAME made a link to the cached build $2, stamped $3. The stamp goes
# last: a build without one is not a build. A directory there (a build made
# in place by an older build.sh) is replaced.
link() {
	local name=$1 dest=$prefix/$1
	rm -f "$dest.stamp" "$dest.new"
	ln -s "$2" "$dest.new"
	if [ -d "$dest" ] && [ ! -L "$dest" ]; then
		rm -rf "$dest.old"
		mv "$dest" "$dest.old"
	fi
	mv -T "$dest.new" "$dest"
	rm -rf "$dest.old"
	echo "$3" > "$dest.stamp"
}

build() {
	local name=$1 sum; sum=$(sum_of "$1")
	local built; built=$(entry "$name" "$sum")
	if [ "$(state "$name")" = "up to date" ]; then
		echo "switches: $name: up to date ($prefix/$name)"
		return
	fi
	if [ -d "$built" ]; then
		link "$name" "$built" "$sum"
		echo "switches: $name: reusing the cached build $built (linked at $prefix/$name)"
		return
	fi
	echo "switches: $name: building into $built (log: $prefix/$name.log)"
	local t0=$SECONDS rc
	building=$name work=$cache/.build/${built##*/} out=$cache/.stage/${built##*/}
	rm -rf "$out"
	set +e
	in_group unpack "$name" "$work"
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		rm -rf "$work"
		# 3: no sources to be had (sources.py said which URL it needs)
		[ $rc -eq 3 ] || exit $rc
		[ "${CI:-}" = true ] && die "$name: no sources, and CI=true: not skipped"
		echo "switches: $name: skipped (its data planes and tests say it is not built)"
		building=
		return
	fi
	set +e
	in_group logged "$prefix/$name.log" "recipe_${name//-/_}"
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		echo "switches: $name: build failed; the last lines of $prefix/$name.log:" >&2
		tail -n 20 "$prefix/$name.log" >&2
		[ "${KEEP_BUILD:-}" = 1 ] || rm -rf "$work"
		rm -rf "$out"
		exit 1
	fi
	rm -rf "$work"
	mv "$out" "$built"
	link "$name" "$built" "$sum"
	building= work= out=
	echo "switches: $name: built in $((SECONDS - t0)) s ($(du -sh "$built" | cut -f1))"
}

# The cached builds no NAME of this checkout would use, and their leftovers,
# removed; then the downloads its lock no longer names.
prune() {
	local keep=() d n
	for n in "${ALL[@]}"; do keep+=("$(entry "$n" "$(sum_of "$n")")"); done
	for d in "$cache"/*-* "$cache/.build" "$cache/.stage"; do
		[ -e "$d" ] || continue
		[[ " ${keep[*]} " == *" $d "* ]] && continue
		rm -rf "$d"
		echo "switches: removed $d"
	done
	sources prune
}

mode=build
case "${1:-}" in
	--check) mode=check; shift ;;
	--prune) mode=prune; shift ;;
esac
[ $mode != prune ] || [ $# -eq 0 ] || die "--prune takes no NAME"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
for n in "${names[@]}"; do
	[[ " ${ALL[*]} " == *" $n "* ]] || die "unknown build $n (one of: ${ALL[*]})"
done

if [ $mode = check ]; then
	rc=0
	for n in "${names[@]}"; do
		s=$(state "$n")
		echo "switches: $n: $s"
		[ "$s" = "up to date" ] || rc=1
	done
	exit $rc
fi

mkdir -p "$prefix" "$cache"
exec 9>"$cache/.lock"
flock -n 9 || { echo "switches: another build holds $cache/.lock; waiting"; flock 9; }
# where builds are made and staged: left empty by every build, whatever its end
trap 'rmdir "$cache/.build" "$cache/.stage" 2>/dev/null || true' EXIT
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP
if [ $mode = prune ]; then
	prune
	exit
fi
for n in "${names[@]}"; do
	build "$n"
done
