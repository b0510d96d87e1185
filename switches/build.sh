#!/usr/bin/env bash
# Builds the switches and NF frameworks Debian does not package (VPP, Snabb,
# Click) from their pinned sources (switches/sources.lock) into a cache of
# builds that every checkout of the same user shares, and links each into one
# prefix; a build whose sources, patches and recipe are unchanged is not redone.
#
#   switches/build.sh [--check | --prune] [NAME ...]
#                               NAME: a folder of switches/ with a recipe.sh
#                               (snabb click click-dpdk vpp; default: all)
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
# at a time (a lock in the cache). Local patches are switches/patches/SOURCE/*.patch
# (a source's: every build of it applies them), applied in order; each says why
# it exists.
#
# A build is a folder, switches/NAME/, whose recipe.sh defines recipe_NAME
# (dashes as underscores): it builds in $work (the unpacked, patched source)
# and installs into $out, a staging directory that becomes $prefix/NAME when it
# succeeded. Each recipe's settings live inside it: the stamp covers its own
# function's text, so editing one recipe rebuilds that one alone. A recipe.sh
# may set SOURCE (the sources.lock entry it builds from; default NAME: pinned in
# switches/sources.lock or in the folder's own sources.lock), ALSO (more
# entries it needs, each unpacked and patched in $work/_sources/ENTRY) and
# LINKS_DPDK=yes (it links the system's DPDK, whose version its stamp covers).
# Every folder with a recipe.sh is a build: nothing here lists them.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
prefix=${CNFPERF_SWITCHES:-$repo/.switches}
jobs=${JOBS:-$(nproc)}

what=switches
# shellcheck source=../builds/cache.sh
. "$repo/builds/cache.sh"

# Every build: the folders holding a recipe.sh, each sourced for its recipe,
# its SOURCE and LINKS_DPDK.
ALL=()
declare -A FROM=() EXTRA=() DPDK=()
for recipe in "$here"/*/recipe.sh; do
	[ -e "$recipe" ] || continue
	n=$(basename "$(dirname "$recipe")")
	SOURCE= ALSO= LINKS_DPDK=
	# shellcheck source=/dev/null
	. "$recipe"
	declare -F "recipe_${n//-/_}" > /dev/null || die "$recipe defines no recipe_${n//-/_}"
	ALL+=("$n")
	FROM[$n]=${SOURCE:-$n}
	EXTRA[$n]=$ALSO
	DPDK[$n]=$LINKS_DPDK
done
unset n recipe SOURCE ALSO LINKS_DPDK

[ -n "${XDG_CACHE_HOME:-}${HOME:-}" ] ||
	die "neither XDG_CACHE_HOME nor HOME is set: the cache of builds is below one"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cnfperf/switches

# The sources NAME is built from (its recipe's SOURCE).
origin() { echo "${FROM[$1]}"; }

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

# NAME's other sources (its recipe's ALSO), each as unpack does its first,
# into $2/_sources/ENTRY. (Not through unpack: its text is in every build's
# stamp, and a change to it would rebuild them all.)
unpack_also() {
	local from p
	for from in ${EXTRA[$1]}; do
		sources unpack "$from" "$2/_sources/$from" || return $?
		for p in "$here/patches/$from"/*.patch; do
			[ -e "$p" ] || continue
			echo "switches: $1: applying $(basename "$p")"
			patch -s -d "$2/_sources/$from" -p1 < "$p" || return 1
		done
	done
}

unpack_all() { unpack "$@" && unpack_also "$@"; }

# --- one build -----------------------------------------------------------------

# The build under way: its name, tree and stage, and the process group of the
# step (in_group) running in it.
building= work= out= step=

# On a signal: the step under way ended, the build's tree (unless KEEP_BUILD=1)
# and stage removed, exit 128 + the signal's number. The last good build stays.
stop() {
	trap '' INT TERM HUP
	end_step
	[ -z "$work" ] || [ "${KEEP_BUILD:-}" = 1 ] || rm -rf "$work"
	[ -z "$out" ] || rm -rf "$out"
	[ -z "$building" ] || echo "switches: $building: interrupted; not built" >&2
	exit "$1"
}

# What NAME is built with besides its sources, patches and recipe: the C and
# C++ compilers' versions, and DPDK's for a build that links it. Builds are
# shared by every checkout of the user, so one made before an `apt upgrade` of
# either must not be reused after it.
toolchain() {
	local c
	for c in "${CC:-cc}" "${CXX:-c++}"; do
		echo "$c: $("$c" --version 2>/dev/null | sed -n 1p || echo none)"
	done
	[ "${DPDK[$1]}" != yes ] ||
		echo "libdpdk: $(pkg-config --modversion libdpdk 2>/dev/null || echo none)"
}

# The checksum a build of NAME is stamped with: its sources' tree hash and
# version (the lock's), its patches, how they are applied, its recipe, and
# what it is built with.
sum_of() {
	local name=$1 from; from=$(origin "$1")
	local tree version; tree=$(sources tree "$from"); version=$(sources version "$from")
	{ echo "$tree"; echo "$version"; cat "$here/patches/$from"/*.patch 2>/dev/null || true
	  declare -f unpack "recipe_${name//-/_}"; toolchain "$name"
	  for from in ${EXTRA[$name]}; do   # (none: a stamp as before there were any)
		sources tree "$from"; sources version "$from"
		cat "$here/patches/$from"/*.patch 2>/dev/null || true
		declare -f unpack_also
	  done; } | sha256sum | cut -d' ' -f1
}

build() {
	local name=$1 sum; sum=$(sum_of "$1")
	local built; built=$(entry "$name" "$sum")
	reuse "$name" "$sum"
	[ -z "$reused" ] || return 0
	echo "switches: $name: building into $built (log: $prefix/$name.log)"
	local t0=$SECONDS rc
	building=$name work=$cache/.build/${built##*/} out=$cache/.stage/${built##*/}
	rm -rf "$out"
	set +e
	in_group unpack_all "$name" "$work"
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
	prune_cached
	sources prune
}

SCRATCH=("$cache/.build" "$cache/.stage")
cached_main "$@"
