"""A VM probe's answers kept for the host's boot (runtimes/vm/probe.py): read
back while its key holds, asked again when anything in the key changed."""
from __future__ import annotations

from cnfperf.runtimes.vm import probe

FOUND = {"kvm": "hung: no guest came up in 5 s, 2 times tcg's boot", "tcg": None}


def _key(tmp_path, timeout=20.0):
    kernel, initramfs, qemu = (tmp_path / n for n in ("vmlinux", "initramfs.gz", "qemu"))
    for f in (kernel, initramfs, qemu):
        if not f.exists():
            f.write_bytes(b"x")
    return probe.probe_key(str(qemu), kernel, initramfs, timeout=timeout)


def test_a_kept_probe_is_read_back_while_its_key_holds(tmp_path):
    kept = tmp_path / probe.PROBED
    key = _key(tmp_path)
    assert probe.recall(kept, key) is None          # nothing kept yet
    probe.keep(kept, key, FOUND)
    assert probe.recall(kept, _key(tmp_path)) == FOUND
    assert not list(tmp_path.glob(".probe.json.*"))  # written whole, no stray temporary


def test_a_changed_guest_qemu_or_timeout_asks_again(tmp_path):
    kept = tmp_path / probe.PROBED
    probe.keep(kept, _key(tmp_path), FOUND)
    assert probe.recall(kept, _key(tmp_path, timeout=30.0)) is None
    (tmp_path / "vmlinux").write_bytes(b"another kernel")
    assert probe.recall(kept, _key(tmp_path)) is None
    probe.keep(kept, _key(tmp_path), FOUND)
    (tmp_path / "qemu").write_bytes(b"an upgraded qemu")
    assert probe.recall(kept, _key(tmp_path)) is None


def test_no_boot_id_or_a_torn_file_asks_again(tmp_path, monkeypatch):
    kept = tmp_path / probe.PROBED
    kept.write_text('{"key": ')
    assert probe.recall(kept, _key(tmp_path)) is None
    monkeypatch.setattr(probe, "BOOT_ID", str(tmp_path / "no-boot-id"))
    key = _key(tmp_path)
    probe.keep(kept, key, FOUND)
    assert key["boot"] is None and probe.recall(kept, key) is None
