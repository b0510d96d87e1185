#!/usr/bin/env python3
"""The sources switches/build.sh builds from: pinned by switches/sources.lock
(or by a build folder's own, switches/NAME/sources.lock: a new build's source
pinned beside its recipe), taken from a mirror or downloaded, and checked
against the lock before a build uses them.

  sources.py unpack NAME DIR     NAME's source, checked, unpacked into DIR (emptied first)
  sources.py fetch NAME          the path of a checked copy of NAME's source (downloaded if need be)
  sources.py tree NAME           the lock's tree hash of NAME (a build's stamp covers it)
  sources.py version NAME        the version the lock names NAME's commit by ('' if none)
  sources.py hash [--as NAME] PATH...   the tree hash of archives or directories (to pin
                                 a source; --as: leaving out what the lock excludes of NAME)
  sources.py prune               remove the downloads the lock no longer names

Where a source comes from, the first that has it:
  1. a mirror folder: CNFPERF_SOURCES, else ../shared/sources beside this
     checkout when it exists; NAME.tar.xz, NAME.tar.gz or a directory NAME/;
  2. the download cache, ${XDG_CACHE_HOME:-~/.cache}/cnfperf/sources/ (a copy
     there that no longer matches, corrupted since, is removed and downloaded again);
  3. a download, from CNFPERF_SOURCES_URL/FILE when that is set (a mirror
     folder served over HTTP, or file://), or else from the Debian archive
     apt uses (its sources list's) when the lock names the source's copy there
     (`debian`: a Debian package's upstream tarball, the project's tree
     unchanged), then from the lock's upstream archive; it is written to a
     temporary file, checked, then renamed into the cache, so the cache never
     holds a half-written or unchecked file.
Whichever it is, its tree must hash to the lock's, or nothing is built. What
unpack leaves is that tree alone: neither a mirror directory's own .git nor the
lock's `exclude` paths (the hash does not vouch for them).

The tree hash: sha256 over one line per regular file and symbolic link,
sorted by path, `KIND SHA256 PATH\\n`, where KIND is `x` for a file with an
execute bit, `f` for another file, `l` for a link, SHA256 is the hex digest of
the file's content or of the link's target, and PATH is relative to the
tree's root ('/'-separated, sorted as UTF-8 bytes). An archive's root is its
one top directory (GitHub's `vpp-<commit>/`, a mirror's `vpp/`). Left out: the
top directory's name, directories themselves (so empty ones), owners, times,
permission bits other than execute, how the files are packed (tar, xz, gzip,
hard links), a directory's own `.git`, and the lock's `exclude` paths (one
ending in `/`: all below that directory). So a repacked copy of a tree hashes
as the original does.

Exit status: 0 done; 1 a source does not match the lock, or is not a tree, or
a file could not be written (said in one line, as every failure is);
2 bad usage, lock or setting; 3 no source to be had (no mirror has it and it
could not be downloaded).
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
LOCK = HERE / "sources.lock"
DEFAULT_MIRROR = HERE.parent.parent / "shared" / "sources"
MIRROR_FORMS = ("{}.tar.xz", "{}.tar.gz", "{}")    # what a mirror folder may hold of NAME
CHUNK = 1 << 20
# A download slower than 1 KB/s for this many seconds is given up (and retried
# as curl retries): a stalled transfer must not hang a build.
STALL = 60


class Mismatch(Exception):
    """A copy that is not the pinned tree (exit 1)."""


class BadSetting(Exception):
    """A lock or setting that cannot be used (exit 2)."""


class Unavailable(Exception):
    """No mirror has the source and it could not be downloaded (exit 3)."""


@dataclass(frozen=True)
class Source:
    name: str
    commit: str
    upstream: str      # the archive its project publishes of the commit
    file: str          # its name in a mirror folder and under CNFPERF_SOURCES_URL
    tree: str          # the tree hash every copy must have
    exclude: frozenset[str] = frozenset()   # paths the tree hash leaves out
    version: str = ""  # what its project calls the commit, for a build that must be told
    debian: str = ""   # its copy in the Debian archive: a path below the archive's root


def locks() -> list[Path]:
    """Where sources are pinned: sources.lock, and a build folder's own
    (switches/NAME/sources.lock: a build's source pinned beside its recipe)."""
    return [p for p in (LOCK, *sorted(HERE.glob("*/sources.lock"))) if p.is_file()]


def lock(paths: list[Path] | None = None) -> dict[str, Source]:
    """Every pinned source; a source pinned twice is an error."""
    found: dict[str, Source] = {}
    for path in locks() if paths is None else paths:
        for name, src in _lock(path).items():
            if name in found:
                raise BadSetting(f"{path}: {name} is pinned twice (also in another sources.lock)")
            found[name] = src
    return found


def _lock(path: Path) -> dict[str, Source]:
    try:
        table = tomllib.loads(path.read_text())
        return {name: Source(name=name, commit=s["commit"], upstream=s["upstream"], file=s["file"],
                             tree=s["tree"], exclude=frozenset(s.get("exclude", ())),
                             version=s.get("version", ""), debian=s.get("debian", ""))
                for name, s in table.items()}
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as e:
        raise BadSetting(f"{path}: {e}") from None


# --- the tree hash ---------------------------------------------------------------

def tree_hash(path: Path, exclude: frozenset[str] = frozenset()) -> str:
    """The tree hash (module docstring) of an archive or a directory."""
    entries = _dir_entries(path) if path.is_dir() else _archive_entries(path)
    h = hashlib.sha256()
    for rel in sorted(entries, key=lambda p: p.encode("utf-8", "surrogateescape")):
        if not excluded(rel, exclude):
            kind, digest = entries[rel]
            h.update(f"{kind} {digest} {rel}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def excluded(rel: str, exclude: frozenset[str]) -> bool:
    """Whether the lock leaves a path out: named, or below a directory named
    with a trailing `/`."""
    return rel in exclude or any(rel.startswith(e) for e in exclude if e.endswith("/"))


def _sha256(stream) -> str:
    h = hashlib.sha256()
    while chunk := stream.read(CHUNK):
        h.update(chunk)
    return h.hexdigest()


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _file_kind(mode: int) -> str:
    return "x" if mode & 0o111 else "f"


def _walk(root: Path) -> Iterator[tuple[str, Path, os.stat_result]]:
    """Every path below root, a directory before what it holds, but root's own
    .git (a checkout's, not the tree's): relative path ('/'-separated), path, lstat."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root and ".git" in dirnames:
            dirnames.remove(".git")
        for name in dirnames + filenames:
            p = here / name
            yield p.relative_to(root).as_posix(), p, p.lstat()


def _dir_entries(root: Path) -> dict[str, tuple[str, str]]:
    entries = {}
    for rel, p, st in _walk(root):
        if stat.S_ISLNK(st.st_mode):
            entries[rel] = ("l", _text_sha256(os.readlink(p)))
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                entries[rel] = (_file_kind(st.st_mode), _sha256(f))
        elif not stat.S_ISDIR(st.st_mode):
            raise Mismatch(f"{p}: neither a file, a link nor a directory")
    return entries


def _below_top(name: str, top: list[str], archive: Path) -> str:
    """A member's path below the archive's one top directory ('' for that directory)."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts:
        return ""
    if not top:
        top.append(parts[0])
    if parts[0] != top[0] or ".." in parts:
        raise Mismatch(f"{archive}: {name} is not below the one top directory {top[0]}/")
    return "/".join(parts[1:])


def _archive_entries(archive: Path) -> dict[str, tuple[str, str]]:
    entries, top = {}, []
    try:
        with tarfile.open(archive, "r|*") as tar:
            for m in tar:
                rel = _below_top(m.name, top, archive)
                if m.isdir():
                    continue
                if not rel:
                    raise Mismatch(f"{archive}: {m.name} is not below one top directory")
                if m.isreg():
                    entries[rel] = (_file_kind(m.mode), _sha256(tar.extractfile(m)))
                elif m.issym():
                    entries[rel] = ("l", _text_sha256(m.linkname))
                elif m.islnk():
                    target = _below_top(m.linkname, top, archive)
                    if target not in entries:
                        raise Mismatch(f"{archive}: {m.name} links to {m.linkname}, not before it")
                    entries[rel] = entries[target]
                else:
                    raise Mismatch(f"{archive}: {m.name}: neither a file, a link nor a directory")
    except (tarfile.TarError, EOFError, OSError) as e:
        raise Mismatch(f"{archive}: not a readable archive ({e})") from None
    return entries


# --- where a source comes from -----------------------------------------------------

def mirror() -> Path | None:
    """The mirror folder: CNFPERF_SOURCES (which must exist), else the default if it exists."""
    env = os.environ.get("CNFPERF_SOURCES")
    if env:
        if not Path(env).is_dir():
            raise BadSetting(f"CNFPERF_SOURCES: {env} is not a directory")
        return Path(env)
    return DEFAULT_MIRROR if DEFAULT_MIRROR.is_dir() else None


def cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or \
        (f"{os.environ['HOME']}/.cache" if os.environ.get("HOME") else None)
    if not base:
        raise BadSetting("neither XDG_CACHE_HOME nor HOME is set: the download cache is below one")
    return Path(base) / "cnfperf" / "sources"


def download_urls(src: Source) -> list[str]:
    """Where it may be downloaded from, in turn."""
    if mirrored := _mirror_url(src):
        return [mirrored]
    archive = debian_archive() if src.debian else None
    return [*([f"{archive.rstrip('/')}/{src.debian}"] if archive else []), src.upstream]


def _mirror_url(src: Source) -> str | None:
    """Its file under CNFPERF_SOURCES_URL, when that is set."""
    base = os.environ.get("CNFPERF_SOURCES_URL")
    return f"{base.rstrip('/')}/{src.file}" if base else None


def debian_archive() -> str | None:
    """The root of the Debian archive apt takes Debian's own packages from
    (its sources list's URI with the label Debian), None without apt or one."""
    try:
        out = subprocess.run(["apt-get", "indextargets", "--format", "$(REPO_URI)",
                              "Label: Debian"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return next(iter(sorted(set(out.split()))), None)


def _in_mirror(src: Source, folder: Path | None) -> Path | None:
    if folder is None:
        return None
    return next((p for form in MIRROR_FORMS if (p := folder / form.format(src.name)).exists()),
                None)


def _cached(src: Source) -> Path | None:
    """A download of it (a temporary file's name starts with a dot: never this)."""
    return next(iter(sorted(cache().glob(f"{src.name}-{src.tree[:16]}*"))), None)


def _suffix(url: str) -> str:
    name = url.rsplit("/", 1)[-1]
    return next((s for s in (".tar.xz", ".tar.gz", ".tar.bz2", ".tgz", ".tar") if name.endswith(s)),
                "")


def verify(src: Source, copy: Path, called: str | None = None) -> None:
    """Mismatch unless the copy (`called` so: its URL) has the lock's tree hash."""
    try:
        got = tree_hash(copy, src.exclude)
    except Mismatch as e:
        raise Mismatch(f"{src.name}: {str(e).replace(str(copy), called or str(copy))}") from None
    if got != src.tree:
        raise Mismatch(f"{src.name}: {called or copy} is not the pinned source: its tree hash is "
                       f"{got}, switches/sources.lock wants {src.tree}")


def download(src: Source) -> Path:
    """The source downloaded into the cache and checked, from the first of
    its URLs that serves it; Unavailable if none does."""
    failed = []
    for url in download_urls(src):
        try:
            return _download(src, url)
        except Unavailable as e:
            failed.append(str(e))
    raise Unavailable("; ".join(failed))


def _download(src: Source, url: str) -> Path:
    folder = cache()
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{src.name}-", suffix=".part")
    os.close(fd)
    tmp = Path(tmp)
    try:
        say(f"{src.name}: downloading {url}")
        t0 = time.monotonic()
        if failed := _curl(url, tmp):
            raise Unavailable(f"{url} could not be downloaded ({failed})")
        say(f"{src.name}: downloaded {tmp.stat().st_size / 1e6:.1f} MB in "
            f"{time.monotonic() - t0:.0f} s; checking it")
        verify(src, tmp, url)
        final = folder / f"{src.name}-{src.tree[:16]}{_suffix(url)}"
        tmp.rename(final)
        return final
    finally:
        tmp.unlink(missing_ok=True)


def _curl(url: str, to: Path) -> str | None:
    """url saved to `to`; None, or why not. A terminal shows curl's progress bar."""
    tty = sys.stderr.isatty()
    try:
        done = subprocess.run(["curl", "--fail", "--location", "--retry", "2", "--connect-timeout",
                               "20", "--speed-limit", "1024", "--speed-time", str(STALL),
                               *(["--progress-bar"] if tty else ["--silent", "--show-error"]),
                               "--output", str(to), url],
                              stderr=None if tty else subprocess.PIPE, text=True)
    except FileNotFoundError:
        return "curl not found (Debian package curl)"
    if done.returncode == 0:
        return None
    said = (done.stderr or "").strip().splitlines()
    return said[-1] if said else f"curl's exit status {done.returncode}"


def fetch(src: Source) -> Path:
    """A copy of the source that matches the lock: mirrored, cached or downloaded."""
    folder = mirror()
    if found := _in_mirror(src, folder):
        verify(src, found)
        return found
    if found := _cached(src):
        try:
            verify(src, found)
            return found
        except Mismatch as e:       # the cache is ours: a bad copy there is dropped
            found.unlink()
            say(f"{e}; removed from the cache")
    try:
        return download(src)
    except Unavailable as e:
        where = f"none in {folder}" if folder else \
            "no mirror folder (CNFPERF_SOURCES unset, no ../shared/sources beside the checkout)"
        raise Unavailable(f"{src.name}: no sources: {where}, and {e}; save it as "
                          f"{_saved_as(src)} in a folder and set CNFPERF_SOURCES to that "
                          "folder") from None


def _saved_as(src: Source) -> str:
    """The name a mirror folder must give the archive a mirror URL or upstream
    serves (upstream's is named after the commit; MIRROR_FORMS say what is
    looked for)."""
    suffix = _suffix(_mirror_url(src) or src.upstream)
    forms = [f.format(src.name) for f in MIRROR_FORMS if f.endswith(suffix)] if suffix else []
    return forms[0] if forms else " or ".join(f.format(src.name) for f in MIRROR_FORMS[:2])


def unpack(src: Source, into: Path) -> Path:
    """The checked source unpacked (or copied) into `into`, its top directory
    stripped, without what the tree hash leaves out; then what was unpacked is
    checked again, since that is what a build uses (a copy could change after
    its check, and the hash sees neither owners nor most permission bits:
    neither is unpacked)."""
    found = fetch(src)
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    try:
        if found.is_dir():
            _copy(found, into)
        else:
            _extract(found, into)
        _drop(into, src.exclude)
        verify(src, into, f"{found}, unpacked,")
    except Mismatch:
        shutil.rmtree(into, ignore_errors=True)
        raise
    return found


def _extract(archive: Path, into: Path) -> None:
    """The archive below its one top directory extracted into `into` by the
    parser the hash read it with, as the hash sees it: files (their content
    and execute bit), directories, and links that stay in the tree; no owners,
    no other permission bits (setuid, group or other write), nothing else.
    tarfile's data filter would do as much, but Debian 12's python3 (3.11.2)
    predates it."""
    top: list[str] = []
    root = into.resolve()
    try:
        with tarfile.open(archive, "r|*") as tar:
            for member in tar:
                if rel := _below_top(member.name, top, archive):
                    _extract_one(tar, member, rel, root, top, archive)
    except (tarfile.TarError, EOFError) as e:
        raise Mismatch(f"{archive}: not unpacked ({e})") from None


def _extract_one(tar: tarfile.TarFile, member: tarfile.TarInfo, rel: str, root: Path,
                 top: list[str], archive: Path) -> None:
    """One member written at `rel` below `root`, a hard link as a copy of what it links to."""
    to = root / rel
    if not to.parent.resolve().is_relative_to(root):     # through a link made before it
        raise Mismatch(f"{archive}: {member.name} is below a link out of the tree")
    if member.isdir():
        to.mkdir(parents=True, exist_ok=True)
        return
    to.parent.mkdir(parents=True, exist_ok=True)
    if to.is_symlink() or to.is_file():         # an archive may hold a path twice: the last wins
        to.unlink()
    if member.isreg():
        with tar.extractfile(member) as data, open(to, "xb") as out:
            shutil.copyfileobj(data, out, CHUNK)
        to.chmod(0o755 if _file_kind(member.mode) == "x" else 0o644)
    elif member.issym():
        # where it lands as the kernel will follow it: through the links
        # unpacked before it too (a/b -> . makes a/b/../.. leave from a)
        lands = Path(os.path.realpath(to.parent / member.linkname))
        if posixpath.isabs(member.linkname) or not lands.is_relative_to(root):
            raise Mismatch(f"{archive}: {member.name} links out of the tree ({member.linkname})")
        os.symlink(member.linkname, to)
    elif member.islnk():
        # a file unpacked before it (the hash says so), so inside the tree
        target = root / _below_top(member.linkname, top, archive)
        if target.is_symlink():
            os.symlink(os.readlink(target), to)
        else:
            shutil.copyfile(target, to)
            to.chmod(target.stat().st_mode & 0o777)
    else:
        raise Mismatch(f"{archive}: {member.name}: neither a file, a link nor a directory")


def _copy(root: Path, into: Path) -> None:
    """A directory's tree copied as the tree hash sees it: its files' content
    and execute bits, its links, its directories; not its .git, owners or
    other permission bits (a mirror's .git/config could run commands in a
    build that asks git, and the hash does not cover it)."""
    for rel, p, st in _walk(root):
        to = into / rel
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(p), to)
        elif stat.S_ISDIR(st.st_mode):
            to.mkdir()
        elif stat.S_ISREG(st.st_mode):
            shutil.copyfile(p, to)
            to.chmod(0o755 if _file_kind(st.st_mode) == "x" else 0o644)
        else:
            raise Mismatch(f"{p}: neither a file, a link nor a directory")


def _drop(into: Path, exclude: frozenset[str]) -> None:
    """The lock's excluded paths removed: a copy may hold anything there."""
    for rel in exclude:
        p = into / rel
        if not p.parent.resolve().is_relative_to(into.resolve()):
            continue                    # below a link out of the tree: not the tree's
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)


def prune() -> list[Path]:
    """The downloads (and leftover temporary files) the lock does not name, removed."""
    keep = {p for s in lock().values() if (p := _cached(s))}
    gone = [p for p in cache().glob("*") if p.is_file() and p not in keep] \
        if cache().is_dir() else []
    for p in gone:
        p.unlink()
    return gone


def say(line: str) -> None:
    print(f"switches: {line}", file=sys.stderr, flush=True)


USAGE = ("usage: sources.py unpack NAME DIR | fetch NAME | tree NAME | version NAME "
         "| hash [--as NAME] PATH... | prune")


def main(argv: list[str]) -> int:
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    try:
        if cmd == "unpack" and len(args) == 2:
            found = unpack(_named(args[0]), Path(args[1]))
            say(f"{args[0]}: sources from {found}")
        elif cmd == "fetch" and len(args) == 1:
            print(fetch(_named(args[0])))
        elif cmd == "tree" and len(args) == 1:
            print(_named(args[0]).tree)
        elif cmd == "version" and len(args) == 1:
            print(_named(args[0]).version)
        elif cmd == "hash" and (paths := args[2:] if args[:1] == ["--as"] else args):
            exclude = _named(args[1]).exclude if args[:1] == ["--as"] else frozenset()
            for p in paths:
                print(f"{tree_hash(Path(p), exclude)}  {p}")
        elif cmd == "prune" and not args:
            for p in prune():
                say(f"removed {p}")
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except Mismatch as e:
        say(str(e))
        return 1
    except BadSetting as e:
        say(str(e))
        return 2
    except Unavailable as e:
        say(str(e))
        return 3
    except OSError as e:            # a cache or tree that cannot be written: a full disk, ...
        say(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e))
        return 1
    return 0


def _named(name: str) -> Source:
    sources = lock()
    if name not in sources:
        raise BadSetting(f"no source {name} in {LOCK} or a build folder's sources.lock "
                         f"(one of: {', '.join(sources)})")
    return sources[name]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
