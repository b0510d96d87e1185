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
# switches/sources.lock or in the folder's own sources.lock) and
# LINKS_DPDK=yes (it links the system's DPDK, whose version its stamp covers).
# Every folder with a recipe.sh is a build: nothing here lists them.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
prefix=${CNFPERF_SWITCHES:-$repo/.switches}
jobs=${JOBS:-$(nproc)}

die() { echo "switches: $*" >&2; exit 2; }

# Every build: the folders holding a recipe.sh, each sourced for its recipe,
# its SOURCE and LINKS_DPDK.
ALL=()
declare -A FROM=() DPDK=()
for recipe in "$here"/*/recipe.sh; do
	[ -e "$recipe" ] || continue
	n=$(basename "$(dirname "$recipe")")
	SOURCE= LINKS_DPDK=
	# shellcheck source=/dev/null
	. "$recipe"
	declare -F "recipe_${n//-/_}" > /dev/null || die "$recipe defines no recipe_${n//-/_}"
	ALL+=("$n")
	FROM[$n]=${SOURCE:-$n}
	DPDK[$n]=$LINKS_DPDK
done
unset n recipe SOURCE LINKS_DPDK

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
