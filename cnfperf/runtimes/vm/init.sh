#!/bin/sh
# The guest's /init (guest.py packs it with BusyBox, the modules and the exec
# server): the modules, the host's root read-only over 9p with memory where the
# guest writes, the NICs, then the exec server. What it is told comes on the
# kernel's command line (cnfperf_*=, written by qemu.py).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# each step's guest uptime: where a VM's start time goes
since_boot() { cut -d' ' -f1 /proc/uptime; }
echo "cnfperf-guest: init $(since_boot) s"
for word in $(cat /proc/cmdline); do
	case "$word" in
	cnfperf_probe=*) poweroff -f ;;
	cnfperf_name=*) name="${word#*=}" ;;
	cnfperf_python=*) python="${word#*=}" ;;
	cnfperf_nics=*) nics="$(echo "${word#*=}" | tr , ' ')" ;;
	cnfperf_mounts=*) mounts="$(echo "${word#*=}" | tr , ' ')" ;;
	cnfperf_disk=*) disk=1 ;;
	esac
done
fail() {
	echo "cnfperf-guest: failed: $*"
	poweroff -f
}
# Modules in dependency order, one "name file" a line; one loaded as a
# dependency of an earlier group is there already.
load() {
	while read -r module file; do
		[ -d "/sys/module/$module" ] || insmod "/lib/modules/$file" || fail "insmod $file"
	done < "/etc/modules.$1"
}

# A NIC is SLOT/MAC/NAME/MTU/KIND, KIND k (the kernel's virtio_net) or d
# (DPDK's: uio_pci_generic, named before virtio_pci can take it).
for nic in $nics; do
	set -- $(echo "$nic" | tr / ' ')
	[ "$5" = i ] && igb=1
	if [ "$5" = d ]; then
		echo uio_pci_generic > "/sys/bus/pci/devices/0000:00:$1.0/driver_override" ||
			fail "PCI slot $1"
		dpdk=1
	else
		net=1
	fi
done
load base
[ -n "$net" ] && load net
[ -n "$dpdk" ] && load dpdk
[ -n "$disk" ] && load disk
[ -n "$igb" ] && load igb
hostname "$name"
# IPv6 would send router solicitations and MLD reports into the measurement.
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
ip link set lo up

# /host: the host's root as it is (a 9p channel takes one mount); /root: the
# same with memory file systems where the guest writes, and the mounts a
# container would have bound there seen through (their source is their target).
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 root /host ||
	fail "the host's root over 9p"
mount --bind /host /root
mount -t proc proc /root/proc
mount -t sysfs sysfs /root/sys
mount -t devtmpfs devtmpfs /root/dev
mkdir -p /root/dev/shm /root/dev/hugepages /root/dev/pts
mount -t devpts devpts /root/dev/pts
mount -t tmpfs tmpfs /root/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /root/tmp
mount -t tmpfs -o mode=1777 tmpfs /root/var/tmp
mount -t tmpfs -o mode=755 tmpfs /root/run
[ -n "$dpdk" ] && mount -t hugetlbfs hugetlbfs /root/dev/hugepages
for path in $mounts; do
	case "$path" in
	/tmp/* | /var/tmp/* | /run/* | /dev/*)
		if [ -d "/host$path" ]; then mkdir -p "/root$path"; else
			mkdir -p "$(dirname "/root$path")" && touch "/root$path"; fi
		mount --bind "/host$path" "/root$path" || fail "mount $path" ;;
	esac
done
# A disk image of the user's (vm_image): the root their commands run in,
# chrooted (VmContainer), with the guest's own /proc, /sys, /dev (hugepages
# among them) and /tmp. Its first partition, or the whole disk. QEMU keeps
# what is written (mount points) in a throwaway overlay.
if [ -n "$disk" ]; then
	user=/root/run/cnfperf-user
	mkdir -p "$user"
	mount -t ext4 /dev/vda1 "$user" 2>/dev/null || mount -t ext4 /dev/vda "$user" ||
		fail "the disk image: no ext4 file system on /dev/vda1 or /dev/vda"
	for dir in proc sys dev tmp; do
		mkdir -p "$user/$dir" && mount --rbind "/root/$dir" "$user/$dir" || fail "$dir in the disk image"
	done
fi

for nic in $nics; do
	set -- $(echo "$nic" | tr / ' ')
	[ "$5" = d ] && continue
	dev=
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address")" = "$2" ] && dev="${d##*/}"
	done
	[ -n "$dev" ] || fail "no NIC with MAC $2"
	ip link set dev "$dev" name "$3" && ip link set dev "$3" mtu "$4" up || fail "NIC $3"
done

mkdir /root/run/cnfperf-exec && cp /exec/*.py /root/run/cnfperf-exec/ || fail "exec server"
echo "cnfperf-guest: starting the exec server $(since_boot) s"
# /root becomes the guest's root, as switch_root makes a booted system's:
# moved over the initramfs, then init's own root (the kernel's threads share
# it, so its module requests, a tc action's or openvswitch's netlink family,
# run the host's /sbin/modprobe, which finds this kernel's modules where the
# host has its package). A container runtime pivots into its image from
# here: from a chroot, runc's `exec` would land in the initramfs.
cd /root && mount --move . / || fail "the host's root as the guest's"
# -E -s -S: the standard library only, whatever the host's environment holds
exec chroot . /bin/busybox sh -c '"$0" -E -s -S -u /run/cnfperf-exec/server.py
echo "cnfperf-guest: the exec server exited ($?)"
/bin/busybox poweroff -f' "$python"
