# The per-user cache of builds from source, as switches/build.sh and
# cluster/build.sh share it (sourced by both). A build of NAME whose checksum
# (the caller's `sum_of NAME`) is SUM lives in $cache/NAME-<SUM's first 16>,
# and $prefix/NAME links to it, with $prefix/NAME.stamp (SUM) beside it,
# written last: a build without its stamp is not a build. One build runs at
# a time (a lock in the cache).
#
# The caller sets `what` (its messages' prefix), `prefix`, `cache`, ALL
# (every build's name) and SCRATCH (the cache's folders where builds are
# made and staged, left empty by every build), and defines `sum_of NAME`,
# `build NAME`, `prune` (--prune) and `stop STATUS` (a signal's end: it ends
# the group of the step under way, $step), then
# calls `cached_main "$@"`.

die() { echo "$what: $*" >&2; exit 2; }

# The process group of the step under way (in_group), for stop() to end.
step=

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

# The step under way, if any, ended: its whole group, given 5 s after SIGTERM.
end_step() {
	[ -n "$step" ] || return 0
	kill -TERM -- "-$step" 2>/dev/null || true
	wait "$step" 2>/dev/null || true
	local n         # what the step started may take a moment to end
	for n in $(seq 50); do kill -0 -- "-$step" 2>/dev/null || break; sleep 0.1; done
	kill -KILL -- "-$step" 2>/dev/null || true
}

# "${@:2}" with its output to the file $1 (inside in_group: a redirection of
# in_group itself would take stop()'s message too).
logged() {
	"${@:2}" > "$1" 2>&1
}


# Where the cache keeps NAME's build of checksum $2.
entry() { echo "$cache/$1-${2:0:16}"; }

# What stands: "up to date", "cached" (built by another checkout: linking it
# is all a build does), "stale" or "not built".
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
# last. A directory there (a build made in place by an older script) is replaced.
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

# NAME up to date already (said), or linked to the build another checkout
# cached: `reused` says which ("" when a build is due). Not a condition:
# under one, set -e would not stop a failing link.
reuse() {
	local name=$1 sum=$2 built; built=$(entry "$1" "$2")
	reused=
	case "$(state "$name")" in
		"up to date")
			reused=yes
			echo "$what: $name: up to date ($prefix/$name)" ;;
		cached)
			link "$name" "$built" "$sum"
			reused=yes
			echo "$what: $name: reusing the cached build $built (linked at $prefix/$name)" ;;
	esac
}

# The cached builds no NAME of this checkout would use, and the scratch
# folders' leftovers, removed.
prune_cached() {
	local keep=() d n
	for n in "${ALL[@]}"; do keep+=("$(entry "$n" "$(sum_of "$n")")"); done
	for d in "$cache"/*-* "${SCRATCH[@]}"; do
		[ -e "$d" ] || continue
		[[ " ${keep[*]} " == *" $d "* ]] && continue
		rm -rf "$d"
		echo "$what: removed $d"
	done
}

# [--check | --prune] [NAME ...]: the modes both scripts take.
cached_main() {
	local mode=build n s rc
	case "${1:-}" in
		--check) mode=check; shift ;;
		--prune) mode=prune; shift ;;
	esac
	[ $mode != prune ] || [ $# -eq 0 ] || die "--prune takes no NAME"
	local names=("$@")
	[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
	for n in "${names[@]}"; do
		[[ " ${ALL[*]} " == *" $n "* ]] || die "unknown build $n (one of: ${ALL[*]})"
	done
	if [ $mode = check ]; then
		rc=0
		for n in "${names[@]}"; do
			s=$(state "$n")
			echo "$what: $n: $s"
			[ "$s" = "up to date" ] || rc=1
		done
		exit $rc
	fi
	mkdir -p "$prefix" "$cache"
	exec 9>"$cache/.lock"
	flock -n 9 || { echo "$what: another build holds $cache/.lock; waiting"; flock 9; }
	# where builds are made and staged: left empty by every build, whatever its end
	trap 'rmdir "${SCRATCH[@]}" 2>/dev/null || true' EXIT
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
}
