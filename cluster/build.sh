#!/usr/bin/env bash
# Builds the test cluster's daemons (Kubernetes, etcd, Multus' thin plugin,
# crictl) from the Go module proxy at the versions pinned in each folder's
# go.mod and go.sum (the lock: a module whose checksum differs stops the
# build), into a cache of builds every checkout of the same user shares, and
# links each into one prefix. A build whose lock, recipe and toolchain are
# unchanged is not redone.
#
#   cluster/build.sh [--check | --prune] [NAME ...]
#                               NAME: a folder of cluster/ with a recipe.sh
#                               (crictl etcd kubernetes multus; default: all)
#
# --check   build nothing: say per NAME whether it is up to date, cached (built
#           by another checkout: linking it is all a build does), stale or not
#           built; exit 1 if any is not up to date
# --prune   remove the cached builds this checkout would not use
# CNFPERF_CLUSTER_BUILDS  the prefix (default: .cluster in this checkout);
#                      $CNFPERF_CLUSTER_BUILDS/NAME links to NAME's build, with
#                      NAME.stamp and the log of its last build beside it
# XDG_CACHE_HOME       the cache (default: ~/.cache): builds in
#                      cnfperf/cluster/NAME-STAMP
# GO                   the Go toolchain (default: go on PATH, else
#                      /usr/local/go/bin/go); it must be at least the version
#                      each go.mod names: nothing is downloaded in its place.
#                      Without one nothing is built, in one line (under CI=true
#                      that is an error)
# GOPROXY, GOMODCACHE, GOCACHE   as Go reads them (the modules and the
#                      compiled packages are Go's own per-user caches)
#
# A build is a folder, cluster/NAME/, holding a Go module (go.mod, go.sum, and
# main.go where the command is not a package of its dependency) and a
# recipe.sh defining recipe_NAME: it runs in that folder and installs into
# $out/bin. The stamp covers the folder's files, the recipe's text and the
# Go and C compilers' versions. A build is staged beside the cache's builds
# and moved in only when it succeeded, and the prefix relinked only then: a
# failed or interrupted one leaves the last good build in place (SIGINT,
# SIGTERM, SIGHUP: exit 130, 143, 129). One build runs at a time (a lock in
# the cache).
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
prefix=${CNFPERF_CLUSTER_BUILDS:-$repo/.cluster}

what=cluster
# shellcheck source=../builds/cache.sh
. "$repo/builds/cache.sh"

ALL=()
for recipe in "$here"/*/recipe.sh; do
	[ -e "$recipe" ] || continue
	n=$(basename "$(dirname "$recipe")")
	# shellcheck source=/dev/null
	. "$recipe"
	declare -F "recipe_$n" > /dev/null || die "$recipe defines no recipe_$n"
	ALL+=("$n")
done
unset n recipe

[ -n "${XDG_CACHE_HOME:-}${HOME:-}" ] ||
	die "neither XDG_CACHE_HOME nor HOME is set: the cache of builds is below one"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cnfperf/cluster

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
# The pinned versions are built with this toolchain, never a downloaded one,
# and from the lock as it stands: a go.mod or go.sum the build would change
# is an error, not an update.
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
gover=$("$GO" env GOVERSION 2>/dev/null || echo none)

# Without Go nothing is built: one line, and the cluster's tests and
# `cnfperf cluster` name what is missing (under CI=true it is an error).
no_go() {
	local why="no Go toolchain ($GO): the cluster's daemons are built with Go 1.24 or later"
	[ "${CI:-}" != true ] || die "$why, and CI=true: not skipped"
	echo "$what: $1: skipped: $why"
}

# The version a go.mod asks for ("go 1.24.0"), checked against the toolchain's.
check_go() {
	local want; want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$here/$1/go.mod")
	printf '%s\n%s\n' "$want" "${gover#go}" | sort -V -C ||
		die "$1 needs Go $want or later; $GO is $gover"
}

building= out=
stop() {
	trap '' INT TERM HUP
	end_step
	[ -z "$out" ] || rm -rf "$out"
	[ -z "$building" ] || echo "cluster: $building: interrupted; not built" >&2
	exit "$1"
}

sum_of() {
	local name=$1
	{ cd "$here/$name" && for f in $(ls -A | LC_ALL=C sort); do echo "$f"; cat "$f"; done
	  declare -f "recipe_$name"; echo "$gover"; "${CC:-cc}" --version 2>/dev/null | sed -n 1p; } |
		sha256sum | cut -d' ' -f1
}

# The recipe of NAME run in its folder, installing into $out.
recipe() {
	cd "$here/$1"
	"recipe_$1"
}

build() {
	local name=$1 sum; sum=$(sum_of "$1")
	local built; built=$(entry "$name" "$sum")
	reuse "$name" "$sum"
	[ -z "$reused" ] || return 0
	[ "$gover" != none ] || { no_go "$name"; return 0; }
	check_go "$name"
	echo "cluster: $name: building into $built (log: $prefix/$name.log)"
	local t0=$SECONDS rc=0
	building=$name out=$cache/.stage/${built##*/}
	rm -rf "$out"
	mkdir -p "$out/bin"
	export out
	set +e
	in_group logged "$prefix/$name.log" recipe "$name"
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		echo "cluster: $name: build failed; the last lines of $prefix/$name.log:" >&2
		tail -n 20 "$prefix/$name.log" >&2
		rm -rf "$out"
		exit 1
	fi
	mv "$out" "$built"
	link "$name" "$built" "$sum"
	building= out=
	echo "cluster: $name: built in $((SECONDS - t0)) s ($(du -sh "$built" | cut -f1))"
}

prune() { prune_cached; }

SCRATCH=("$cache/.stage")
cached_main "$@"
