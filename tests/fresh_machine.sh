#!/bin/bash
# What a new user's Debian 12 machine makes of this checkout: a clean root file
# system (debootstrap, minbase, plus make, git and CA certificates, as a machine
# to clone onto has), a fresh clone of HEAD in it, and a command run there,
# `CI=true make test` unless told otherwise. Not part of the suite: it downloads
# every package, builds the switches from source (about 25 minutes on 2 cores)
# and takes about an hour. As root:
#
#   tests/fresh_machine.sh DIR [COMMAND]      e.g. tests/fresh_machine.sh /srv/fresh 'make demo'
#
# DIR is made once and reused (its packages stay, and so does the per-user cache
# of switch builds, DIR/root/.cache/cnfperf: rm -rf it for a cold build; the
# clone is made afresh). The switches' sources: a copy of the mirror folder
# (CNFPERF_SOURCES, default ../shared/sources) beside the clone, or with
# CNFPERF_SOURCES_URL set no mirror and that URL (e.g. a local HTTP server on
# 127.0.0.1: the root shares this host's network), or with neither a download
# from upstream.
# The root is entered the way a container is (its own mount namespace, then
# pivot_root), not with chroot: runc, which the tests run, needs a real root
# (inside a chroot `runc exec` does not join the container's namespaces).
set -euo pipefail
dir=${1:?usage: $0 DIR [COMMAND]}
cmd=${2:-CI=true make test}
repo=$(cd "$(dirname "$0")/.." && pwd)

if [ ! -x "$dir/usr/bin/make" ]; then
	command -v debootstrap >/dev/null || { echo "needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
	debootstrap --variant=minbase bookworm "$dir"
	# No init runs in there: package scripts must not try to start services.
	printf '#!/bin/sh\nexit 101\n' > "$dir/usr/sbin/policy-rc.d"
	chmod +x "$dir/usr/sbin/policy-rc.d"
	first="apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends make git ca-certificates && "
else
	first=""
fi
rm -rf "$dir/root/cnfperf"
git clone -q "$repo" "$dir/root/cnfperf"
# The switches' sources (make switches) where a clone looks for them by default:
# beside it, as ../shared/sources; none there when they are to be downloaded.
sources=${CNFPERF_SOURCES:-$repo/../shared/sources}
rm -rf "$dir/root/shared/sources"
if [ -z "${CNFPERF_SOURCES_URL:-}" ] && [ -d "$sources" ]; then
	mkdir -p "$dir/root/shared"
	cp -rL "$sources" "$dir/root/shared/sources"
fi

exec unshare -m --propagation private bash -s "$dir" "$first cd /root/cnfperf && $cmd" \
	"${CNFPERF_SOURCES_URL:-}" <<'EOF'
set -e
R=$1
mount --bind "$R" "$R"
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount --rbind /dev "$R/dev"
mount -t tmpfs tmpfs "$R/run"
mount -t tmpfs tmpfs "$R/tmp"
mkdir -p "$R/run/lock" "$R/.oldroot"
cp /etc/resolv.conf "$R/etc/resolv.conf"
# pip (and curl, which downloads the switches' sources) trust what this host
# trusts, in case its network inspects TLS.
cp /etc/ssl/certs/ca-certificates.crt "$R/tmp/host-ca.crt"
cd "$R"
pivot_root . .oldroot
exec /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb ${3:+CNFPERF_SOURCES_URL=$3} \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	SSL_CERT_FILE=/tmp/host-ca.crt PIP_CERT=/tmp/host-ca.crt CURL_CA_BUNDLE=/tmp/host-ca.crt \
	/bin/bash -c "umount -l /.oldroot && cd / && $2" </dev/null
EOF
