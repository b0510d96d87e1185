"""What the tests of switches/build.sh and switches/sources.py share: a copy of
both scripts with a lock of the test's own, source trees made on the spot and
packed as a mirror or an upstream host would, and a local HTTP server.

A module with a name of its own, not conftest.py (see harness.py)."""
from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import io
import shutil
import sys
import tarfile
import threading
from pathlib import Path
from typing import Iterator

from harness import REPO

SWITCHES = REPO / "switches"
COMMIT = "0123456789abcdef0123456789abcdef01234567"

# A made-up tree: path -> text, or ("x", text) for an executable, ("l", target)
# for a link, ("d", "") for an empty directory.
Tree = dict[str, "str | tuple[str, str]"]


@functools.lru_cache(maxsize=None)
def module():
    """switches/sources.py, imported (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("switch_sources_script", SWITCHES / "sources.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def pack(path: Path, tree: Tree, top: str, mode: int = 0o644, mtime: int = 0,
         hardlinks: bool = False) -> Path:
    """`tree` as a tar archive below `top`/ (compressed as path's suffix says);
    `hardlinks`: a second file with the same content is stored as a hard link."""
    compression = {".gz": "gz", ".xz": "xz"}.get(path.suffix, "")
    path.parent.mkdir(parents=True, exist_ok=True)
    seen: dict[str, str] = {}
    with tarfile.open(path, f"w:{compression}") as tar:
        top_dir = tarfile.TarInfo(top)
        top_dir.type, top_dir.mode, top_dir.mtime = tarfile.DIRTYPE, 0o755, mtime
        tar.addfile(top_dir)
        for rel, what in tree.items():
            kind, text = what if isinstance(what, tuple) else ("f", what)
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.mtime, info.uname = mtime, "someone"
            if kind in ("l", "d"):
                info.type, info.linkname = (tarfile.SYMTYPE, text) if kind == "l" else \
                    (tarfile.DIRTYPE, "")
                tar.addfile(info)
                continue
            info.mode = mode | (0o111 if kind == "x" else 0)
            if hardlinks and (kind, text) in seen.values():
                first = next(k for k, v in seen.items() if v == (kind, text))
                info.type, info.linkname = tarfile.LNKTYPE, f"{top}/{first}"
                tar.addfile(info)
                continue
            seen[rel] = (kind, text)
            data = text.encode()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def unpacked(root: Path, tree: Tree) -> Path:
    """`tree` as a directory."""
    for rel, what in tree.items():
        kind, text = what if isinstance(what, tuple) else ("f", what)
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if kind == "l":
            p.symlink_to(text)
        elif kind == "d":
            p.mkdir()
        else:
            p.write_text(text)
            p.chmod(0o755 if kind == "x" else 0o644)
    return root


def tree_hash(path: Path, exclude=frozenset()) -> str:
    return module().tree_hash(path, frozenset(exclude))


def lock_entry(name: str, tree: str, upstream: str, file: str | None = None,
               exclude: tuple[str, ...] = (), version: str = "", debian: str = "") -> str:
    lines = [f"[{name}]", f'commit = "{COMMIT}"', f'upstream = "{upstream}"',
             f'file = "{file or name + ".tar.gz"}"', f'tree = "{tree}"']
    if version:
        lines.append(f'version = "{version}"')
    if debian:
        lines.append(f'debian = "{debian}"')
    if exclude:
        lines.append("exclude = [" + ", ".join(f'"{e}"' for e in exclude) + "]")
    return "\n".join(lines) + "\n"


def scripts(root: Path, lock: str, build: bool = False) -> Path:
    """root/switches/ holding sources.py (and build.sh with the recipe folders,
    and root/builds/cache.sh) and this lock, without the project's patches; returns the directory."""
    d = root / "switches"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SWITCHES / "sources.py", d)
    if build:
        shutil.copy(SWITCHES / "build.sh", d)
        (root / "builds").mkdir(exist_ok=True)     # the cache's rules build.sh sources
        shutil.copy(REPO / "builds" / "cache.sh", root / "builds")
        for recipe in SWITCHES.glob("*/recipe.sh"):
            (d / recipe.parent.name).mkdir(exist_ok=True)
            for f in (recipe, recipe.parent / "sources.lock"):   # a folder may pin its own
                if f.exists():
                    shutil.copy(f, d / recipe.parent.name)
    (d / "sources.lock").write_text(lock)
    return d


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def http_server(folder: Path) -> Iterator[str]:
    """`folder` served on 127.0.0.1 (a port of its own) while inside; yields its URL."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
