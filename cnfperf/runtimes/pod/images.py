"""Images for the cluster's node, made here. A folder (a root file system)
becomes an OCI image archive of one layer, which `ctr images import` puts in
the node's containerd, or skopeo pushes to a registry the nodes pull from
(`registry`). Files are stored with fixed times and owners, so the same
folder gives the same image digest, and an import or a push of an image
already there is a no-op.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from pathlib import Path

from cnfperf.host.system import run
from cnfperf.runtimes import rootfs

REGISTRY = "localhost/cnfperf"     # the references' prefix: no registry answers for it
LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def reference(name: str, tag: str) -> str:
    return f"{REGISTRY}/{name}:{tag}"


def _layer(root: Path) -> bytes:
    """The folder as an uncompressed tar, in name order, with times and owners zeroed."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                path = Path(dirpath, name)
                info = tar.gettarinfo(str(path), str(path.relative_to(root)))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                if info.isreg():
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
    return buf.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes, media: str) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
    return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}


def archive(out: Path, ref: str, root: Path, entrypoint: list[str]) -> str:
    """`root` as the image `ref` in the OCI archive `out`; returns the
    manifest's digest."""
    layer = _layer(root)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Entrypoint": entrypoint, "WorkingDir": "/"},
              "rootfs": {"type": "layers",
                         "diff_ids": [f"sha256:{hashlib.sha256(layer).hexdigest()}"]}}
    with tarfile.open(out, "w") as tar:
        layer_d = _blob(tar, layer, LAYER)
        config_d = _blob(tar, json.dumps(config, sort_keys=True).encode(), CONFIG)
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": config_d,
                    "layers": [layer_d]}
        manifest_d = _blob(tar, json.dumps(manifest, sort_keys=True).encode(), MANIFEST)
        # containerd names the image it imports by this annotation
        manifest_d["annotations"] = {"io.containerd.image.name": ref,
                                     "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1]}
        manifest_d["platform"] = {"architecture": "amd64", "os": "linux"}
        for name, data in (("oci-layout", {"imageLayoutVersion": "1.0.0"}),
                           ("index.json", {"schemaVersion": 2, "manifests": [manifest_d]})):
            raw = json.dumps(data).encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return manifest_d["digest"]


def ctr(socket: Path, *args: str, timeout: float = 120) -> str:
    """containerd's CLI on the node's containerd, in Kubernetes' namespace."""
    return run(["ctr", "--address", str(socket), "--namespace", "k8s.io", *args],
               timeout=timeout, what="the node's containerd")


def load(socket: Path, ref: str, root: Path, entrypoint: list[str]) -> str:
    """The folder `root` imported into the node's containerd as `ref`."""
    with tempfile.TemporaryDirectory(prefix="cnfperf-image-") as tmp:
        path = Path(tmp) / "image.tar"
        archive(path, ref, root, entrypoint)
        ctr(socket, "images", "import", str(path))
    return ref


def load_image(socket: Path, spec: rootfs.ImageSpec, base: Path | None = None) -> str:
    """One of cnfperf's images (runtimes/images.py: the engine's, the tools')
    built as the runtimes build it and imported into the node; its reference,
    named by its content's digest, so a node holds one copy per content."""
    info = rootfs.build(spec, rootfs.images_dir(base))
    return load(socket, reference(spec.image.name, spec.digest()[:16]), Path(info.path),
                list(spec.init))


def push(registry: str, spec: rootfs.ImageSpec, base: Path | None = None) -> str:
    """One of cnfperf's images, built as load_image builds it, pushed to
    `registry` ([http://]HOST[:PORT][/PATH]; http: without TLS) as
    NAME:DIGEST; its reference there."""
    where = registry.split("://", 1)[-1].rstrip("/")
    ref = f"{where}/{spec.image.name}:{spec.digest()[:16]}"
    info = rootfs.build(spec, rootfs.images_dir(base))
    plain = ["--dest-tls-verify=false"] if registry.startswith("http://") else []
    with tempfile.TemporaryDirectory(prefix="cnfperf-image-") as tmp:
        path = Path(tmp) / "image.tar"
        archive(path, ref, Path(info.path), list(spec.init))
        run(["skopeo", "copy", "--quiet", *plain, f"oci-archive:{path}", f"docker://{ref}"],
            timeout=600, what=f"pushing image {ref}")
    return ref


def remove_imported(socket: Path, keep: tuple[str, ...] = ()) -> list[str]:
    """cnfperf's images imported into the node's containerd (load_image's,
    named under REGISTRY; but `keep`: a sandbox image), removed with the
    `sha256:` aliases the CRI gives them; their references. Those pulled
    from a registry are the node's, as any image it pulled."""
    listed = [line.split() for line in ctr(socket, "images", "ls").splitlines()[1:]]
    targets = {words[0]: words[2] for words in listed if len(words) > 2}
    ours = [r for r in targets if r.startswith(REGISTRY + "/") and r not in keep]
    digests = {targets[r] for r in ours}
    aliases = [r for r, d in targets.items() if r.startswith("sha256:") and d in digests]
    if ours:
        ctr(socket, "images", "rm", *ours, *aliases)
    return ours
