"""The test cluster's parts that need no root: its certificates, its image
archives, what says a build is missing."""
from __future__ import annotations

import hashlib
import os
import json
import tarfile

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from cnfperf.cluster import builds, pki
from cnfperf.runtimes.pod import images


def test_certificates_are_signed_by_the_authority_and_name_their_hosts(tmp_path):
    ca = pki.Authority(tmp_path)
    pair = ca.issue("apiserver", "kube-apiserver", server=True, hosts=("127.0.0.1", "kubernetes"))
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    ca.cert.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                                ec.ECDSA(cert.signature_hash_algorithm))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert names.get_values_for_type(x509.DNSName) == ["kubernetes"]
    assert pair.key.stat().st_mode & 0o077 == 0
    client = ca.issue("admin", "someone", "system:masters", client=True)
    subject = x509.load_pem_x509_certificate(client.cert.read_bytes()).subject
    assert subject.rfc4514_string() == "O=system:masters,CN=someone"


def test_a_loaded_authority_signs_for_the_running_cluster_and_keeps_its_ca(tmp_path):
    """Another host's node certificates (cluster/node.member) come from the
    CA the cluster runs with: loading it neither replaces nor rewrites it."""
    made = pki.Authority(tmp_path)
    before = made.pair.cert.read_bytes(), made.pair.key.read_bytes()
    loaded = pki.Authority(tmp_path, load=True)
    assert (loaded.pair.cert.read_bytes(), loaded.pair.key.read_bytes()) == before
    pair = loaded.issue("member-dut-node", "system:node:dut", "system:nodes", client=True)
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    made.cert.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                                  ec.ECDSA(cert.signature_hash_algorithm))
    assert cert.issuer == made.cert.subject


def test_an_image_archive_is_an_oci_layout_named_for_containerd(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "pause").write_bytes(b"\x7fELF not really")
    (root / "pause").chmod(0o755)
    ref = images.reference("pause", "3.10")
    digest = images.archive(tmp_path / "a.tar", ref, root, ["/pause"])
    again = images.archive(tmp_path / "b.tar", ref, root, ["/pause"])
    assert digest == again, "the same folder gives the same image"
    with tarfile.open(tmp_path / "a.tar") as tar:
        index = json.load(tar.extractfile("index.json"))
        (manifest_d,) = index["manifests"]
        assert manifest_d["digest"] == digest
        assert manifest_d["annotations"]["io.containerd.image.name"] == ref
        blobs = {m.name: tar.extractfile(m).read() for m in tar.getmembers()
                 if m.name.startswith("blobs/")}
    for name, data in blobs.items():
        assert name == "blobs/sha256/" + hashlib.sha256(data).hexdigest()
    manifest = json.loads(blobs["blobs/sha256/" + digest.split(":")[1]])
    config = json.loads(blobs["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    assert config["config"]["Entrypoint"] == ["/pause"]
    layer = blobs["blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]]
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]


def test_a_missing_build_names_make_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv(builds.PREFIX_ENV, str(tmp_path))
    found = builds.problems()
    assert len(found) == len(builds.BUILDS)
    assert all("make cluster" in line for line in found)
    (tmp_path / "etcd/bin").mkdir(parents=True)
    (tmp_path / "etcd/bin/etcd").write_text("")
    assert any("no " in line and "etcd.stamp" in line for line in builds.problems())
    (tmp_path / "etcd.stamp").write_text("x")
    assert not any(line.startswith("etcd ") for line in builds.problems())


def test_cluster_without_root_or_with_one_running_is_one_line(capsys, monkeypatch, tmp_path):
    from cnfperf.cli import main
    from cnfperf.cluster import node
    from cnfperf.host.keeper import Keeper
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["cluster"]) == 2
    err = capsys.readouterr().err
    assert "cluster: needs root" in err and err.count("\n") == 1, err
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(node, "KEEPER", Keeper("a test cluster", tmp_path / "owner",
                                               tmp_path / "journal"))
    with node.KEEPER.owned():
        assert main(["cluster"]) == 3
    err = capsys.readouterr().err
    assert f"a test cluster runs already (pid {os.getpid()})" in err and err.count("\n") == 1
