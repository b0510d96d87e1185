"""A disk image of the user's as a VM's root for their commands (vm_image):
what is taken, how QEMU and the guest are told, where commands run. No root,
no QEMU: the e2e test boots one."""
from __future__ import annotations

from pathlib import Path

import pytest

from cnfperf import UserError
from cnfperf.runtimes.vm import guest, qemu
from cnfperf.runtimes.vm.runtime import CHROOT, USER_ROOT, VmContainer, VmRuntime
from harness import scenarios


def _image(path: Path, head: bytes, at: int = 0) -> str:
    data = bytearray(4096)
    data[at:at + len(head)] = head
    path.write_bytes(bytes(data))
    return str(path)


def test_a_disk_image_is_qcow2_or_a_raw_ext4_file_system_or_disk(tmp_path):
    assert guest.disk_format(_image(tmp_path / "a.qcow2", b"QFI\xfb")) == "qcow2"
    assert guest.disk_format(_image(tmp_path / "fs.img", b"\x53\xef", at=1080)) == "raw"
    assert guest.disk_format(_image(tmp_path / "disk.img", b"\x55\xaa", at=510)) == "raw"
    with pytest.raises(ValueError, match="neither a qcow2 image nor a raw ext4"):
        guest.disk_format(_image(tmp_path / "junk.img", b"hello"))
    with pytest.raises(ValueError, match="No such file"):
        guest.disk_format(str(tmp_path / "missing.qcow2"))
    with pytest.raises(ValueError, match="no commas"):
        VmRuntime.image_format(str(tmp_path / "a,b.qcow2"))


def test_qemu_reads_it_as_a_snapshot_and_init_is_told(tmp_path):
    disk = _image(tmp_path / "root.qcow2", b"QFI\xfb")
    spec = qemu.Spec("cnfp1234n000", 1, "tcg", tmp_path / "k", tmp_path / "i", "/usr/bin/python3",
                     tmp_path, disk=disk, disk_format="qcow2")
    argv = qemu.argv(["qemu"], spec)
    drive = argv[argv.index("-drive") + 1]
    assert drive == f"file={disk},if=none,id=disk,format=qcow2,snapshot=on"
    assert "virtio-blk-pci,drive=disk,addr=0x4" in argv
    assert "cnfperf_disk=1" in qemu.cmdline(spec).split()
    plain = qemu.Spec("cnfp1234n000", 1, "tcg", tmp_path / "k", tmp_path / "i",
                      "/usr/bin/python3", tmp_path)
    assert "-drive" not in qemu.argv(["qemu"], plain)
    assert "cnfperf_disk" not in qemu.cmdline(plain)




def test_the_users_commands_run_in_their_root_the_engine_in_the_hosts(tmp_path):
    def container(user_root: bool) -> VmContainer:
        return VmContainer(None, "cnfp1234n000", (1,), "cnfp1234n000", "/usr/bin/engine",
                           proc=None, vm_dir=tmp_path, groups=[], nics=(), hugepages_mb=0,
                           ready_s=1.0, accel="tcg", user_root=user_root)
    theirs = container(True)._command(["vnf", "--port", "0"], {})
    assert theirs[theirs.index("--") + 1:] == [CHROOT, USER_ROOT, "vnf", "--port", "0"]
    ours = container(False)._command(["/usr/bin/engine", "nf"], {})
    assert ours[ours.index("--") + 1:] == ["/usr/bin/engine", "nf"]


def test_a_vm_image_that_is_no_disk_image_is_refused_naming_the_field(tmp_path):
    junk = _image(tmp_path / "junk.img", b"hello")
    with pytest.raises(UserError) as e:
        scenarios(None, {"switch": "bridge", "nfs": 1, "nf_in": "vm", "vm_image": junk})
    assert e.value.field == "vm_image" and "or host" in str(e.value)
    good = _image(tmp_path / "root.img", b"\x53\xef", at=1080)
    [s] = scenarios(None, {"switch": "bridge", "nfs": 1, "nf_in": "vm", "vm_image": good})
    assert s.vm_image == good
