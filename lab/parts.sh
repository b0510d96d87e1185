#!/bin/bash
# The lab's parts, from Debian's own archive (make deps runs this; idempotent):
#   - a guest kernel new enough for the lab's hardware paths (6.12: igb's
#     VFs, openvswitch, act_police, netem; netkit built in), installed beside
#     linux-image-amd64 as a package of its own (bookworm-security has it);
#   - QEMU >= 8 (its emulated igb NIC has SR-IOV virtual functions) and
#     iproute2 >= 6.7 (its `ip` makes netkit links), from the bookworm-backports
#     suite, unpacked into $CNFPERF_LAB_PARTS (never installed: the host keeps
#     Debian 12's QEMU, which the vm runtime uses, and its own iproute2).
# The backports suite is added, from the archive the host already uses, when
# it is not configured; apt installs nothing from it unless asked by name.
set -euo pipefail
PARTS=${CNFPERF_LAB_PARTS:-/var/lib/cnfperf/lab}
SUITE=bookworm-backports
QEMU_PACKAGES=(qemu-system-x86 qemu-system-common qemu-system-data seabios)
export DEBIAN_FRONTEND=noninteractive

say() { echo "lab parts: $*"; }

# The archive the host's bookworm suite comes from: the backports suite is beside it.
archive() {
    apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 'Created-By: Packages' |
        awk '$1 == "bookworm" { print $2; exit }'
}

add_backports() {
    if apt-get indextargets --format '$(RELEASE)' | grep -qx "$SUITE"; then
        return
    fi
    local uri
    uri=$(archive)
    [ -n "$uri" ] || { echo "lab parts: no bookworm suite in apt's sources to add $SUITE beside" >&2; exit 1; }
    say "adding the $SUITE suite of $uri"
    cat > /etc/apt/sources.list.d/cnfperf-backports.sources <<SOURCES
Types: deb
URIs: $uri
Suites: $SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    apt-get update -q
}

# The newest 6.12 kernel image package bookworm's suites carry.
kernel_package() {
    apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' |
        awk '{ print $1 }' | sort -V | tail -n 1
}

install_kernel() {
    if compgen -G "/boot/vmlinuz-6.12.*-amd64" > /dev/null; then
        return
    fi
    local package
    package=$(kernel_package)
    [ -n "$package" ] || { apt-get update -q; package=$(kernel_package); }
    [ -n "$package" ] || { echo "lab parts: no linux-image-6.12.*+deb12-amd64 in apt's sources" >&2; exit 1; }
    say "installing $package (a guests' kernel)"
    apt-get install -y -q --no-install-recommends "$package"
}

# unpack NAME PACKAGE...: the suite's PACKAGEs unpacked into $PARTS/NAME-VERSION
# (VERSION: the first package's), $PARTS/NAME linked to it.
unpack() {
    local name=$1 version
    shift
    version=$(apt-cache madison "$1" |
        awk -F' *[|] *' -v s=" $SUITE/" 'index($3, s) { print $2; exit }')
    [ -n "$version" ] || { echo "lab parts: no $1 in $SUITE" >&2; exit 1; }
    local dir="$PARTS/$name-${version//[:~+]/_}"
    if [ -e "$dir/.unpacked" ]; then
        ln -sfn "${dir##*/}" "$PARTS/$name"
        return
    fi
    say "unpacking $* $version from $SUITE into $dir"
    local tmp
    tmp=$(mktemp -d)
    chmod 755 "$tmp"    # apt downloads as its own user
    trap 'rm -rf "$tmp"' RETURN
    (cd "$tmp" && apt-get download -q "${@/%//$SUITE}" > /dev/null)
    mkdir -p "$tmp/root"
    for deb in "$tmp"/*.deb; do
        dpkg-deb -x "$deb" "$tmp/root"
    done
    touch "$tmp/root/.unpacked"
    mkdir -p "$PARTS"
    rm -rf "$dir"
    mv "$tmp/root" "$dir"
    ln -sfn "${dir##*/}" "$PARTS/$name"
}

add_backports
install_kernel
unpack qemu "${QEMU_PACKAGES[@]}"
unpack iproute2 iproute2
say "ready: $(readlink "$PARTS/qemu"), $(readlink "$PARTS/iproute2"), kernel $(ls /boot | sed -n 's/^vmlinuz-\(6\.12\..*\)/\1/p' | sort -V | tail -n 1)"
