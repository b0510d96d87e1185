"""switches/sources.py: the tree hash a repacked copy keeps, the lock, and
where a source comes from (a mirror folder, the download cache, or a download
from a local HTTP server standing in for upstream or a company mirror), with
a corrupted or missing source refused in one line."""
from __future__ import annotations

import http.server
import io
import os
import re
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
from pathlib import Path

import pytest

import switch_sources as ss
from harness import REPO

TREE: ss.Tree = {"README": "a tree\n", "src/main.c": "int main(void) { return 0; }\n",
                 "src/build.sh": ("x", "#!/bin/sh\nmake\n"),
                 "src/copy.c": "int main(void) { return 0; }\n",
                 "docs/latest": ("l", "../README"), "data/empty": ("d", "")}


def test_a_tree_hashes_the_same_however_it_is_packed(tmp_path):
    """GitHub's archive (gzip, a top directory named after the commit), a
    mirror's repack (xz, another top directory, other modes, times and hard
    links) and an unpacked copy: one tree, one hash."""
    upstream = ss.pack(tmp_path / "up.tar.gz", TREE, f"t-{ss.COMMIT}")
    mirror = ss.pack(tmp_path / "t.tar.xz", TREE, "t", mode=0o664, mtime=1_700_000_000,
                     hardlinks=True)
    copy = ss.unpacked(tmp_path / "t", TREE)
    (copy / ".git").mkdir()                           # a checkout's own: left out
    (copy / ".git" / "HEAD").write_text(ss.COMMIT)
    hashes = {ss.tree_hash(p) for p in (upstream, mirror, copy)}
    assert len(hashes) == 1 and re.fullmatch(r"[0-9a-f]{64}", hashes.pop())


@pytest.mark.parametrize("change", [
    {"src/main.c": "int main(void) { return 1; }\n"},     # content
    {"src/build.sh": "#!/bin/sh\nmake\n"},                 # the execute bit
    {"docs/latest": ("l", "README")},                      # a link's target
    {"src/new.c": ""},                                     # a file more
])
def test_content_execute_bits_links_and_files_count(tmp_path, change):
    assert ss.tree_hash(ss.pack(tmp_path / "a.tar.gz", TREE, "t")) != \
        ss.tree_hash(ss.pack(tmp_path / "b.tar.gz", {**TREE, **change}, "t"))


def test_excluded_paths_count_neither_present_nor_absent(tmp_path):
    without = {k: v for k, v in TREE.items() if k != "src/copy.c"}
    full = ss.tree_hash(ss.pack(tmp_path / "a.tar.gz", TREE, "t"), {"src/copy.c"})
    assert full == ss.tree_hash(ss.pack(tmp_path / "b.tar.gz", without, "t"), {"src/copy.c"})
    assert full != ss.tree_hash(tmp_path / "a.tar.gz")
    # a folder (a trailing /): all below it
    no_src = {k: v for k, v in TREE.items() if not k.startswith("src/")}
    assert ss.tree_hash(tmp_path / "a.tar.gz", {"src/"}) == \
        ss.tree_hash(ss.pack(tmp_path / "c.tar.gz", no_src, "t"), {"src/"})


@pytest.mark.parametrize("names", [["a/x", "b/y"], ["x"], ["a/../../etc/passwd"]])
def test_an_archive_not_below_one_top_directory_is_refused(tmp_path, names):
    archive = tmp_path / "bad.tar"
    import tarfile
    with tarfile.open(archive, "w") as tar:
        for n in names:
            tar.addfile(tarfile.TarInfo(n))
    with pytest.raises(ss.module().Mismatch, match="top directory"):
        ss.tree_hash(archive)


def test_the_lock_pins_every_source_build_sh_builds():
    lock = {name: s for path in [REPO / "switches" / "sources.lock",
                                 *sorted((REPO / "switches").glob("*/sources.lock"))]
            for name, s in tomllib.loads(path.read_text()).items()}
    # click-dpdk is built from click's; frr needs libyang too, bess its own DPDK
    assert set(lock) == {"vpp", "snabb", "click", "frr", "libyang", "bess", "dpdk-19.11.4"}
    for name, s in lock.items():
        assert re.fullmatch(r"[0-9a-f]{40}", s["commit"]) and s["commit"] in s["upstream"], name
        assert re.fullmatch(r"[0-9a-f]{64}", s["tree"]) and s["file"] == f"{name}.tar.xz", name
    # the three test data files some copies lack, and the file export-subst rewrites
    assert len(lock["snabb"]["exclude"]) == 4
    # Debian's tarballs of FRR and libyang, FRR's without its own packaging
    assert lock["frr"]["debian"].startswith("pool/main/f/frr/")
    assert lock["frr"]["exclude"] == ["debian/"]
    # every build's sources (its recipe's SOURCE, else its folder's name, and
    # its ALSO) are pinned, and every pinned source is built
    recipes = {r.parent.name: r.read_text() for r in (REPO / "switches").glob("*/recipe.sh")}
    assert sorted(recipes) == ["bess", "click", "click-dpdk", "frr", "snabb", "vpp"]
    used = set()
    for name, text in recipes.items():
        source, also = (re.search(rf"^{k}=(\S+)", text, re.M) for k in ("SOURCE", "ALSO"))
        used |= {source[1] if source else name, *(also[1].split() if also else ())}
    assert used == set(lock)


# --- where a source comes from --------------------------------------------------------

def _setup(tmp: Path, upstream: str = "http://127.0.0.1:9/t.tar.gz") -> Path:
    """A copy of the scripts whose lock pins TREE as source `t`; returns sources.py."""
    tree = ss.tree_hash(ss.pack(tmp / "pinned.tar.gz", TREE, "t"))
    return ss.scripts(tmp, ss.lock_entry("t", tree, upstream)) / "sources.py"


def _sources(script: Path, *args: str, python: str = sys.executable,
             **env: str) -> subprocess.CompletedProcess:
    tmp = script.parent.parent
    full = {k: v for k, v in os.environ.items()
            if k not in ("CNFPERF_SOURCES", "CNFPERF_SOURCES_URL")}
    full.update({"XDG_CACHE_HOME": str(tmp / "cache"), **env})
    return subprocess.run([python, str(script), *args], capture_output=True, text=True,
                          env=full, timeout=60)


def _downloads(tmp: Path) -> list[str]:
    d = tmp / "cache" / "cnfperf" / "sources"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_a_download_from_a_mirror_url_is_checked_cached_and_reused_offline(tmp_path):
    script = _setup(tmp_path)
    served = tmp_path / "served"
    ss.pack(served / "t.tar.gz", TREE, "t", mode=0o600)
    with ss.http_server(served) as url:
        done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES_URL=url)
    assert done.returncode == 0, done.stderr
    assert f"switches: t: downloading {url}/t.tar.gz" in done.stderr
    assert (tmp_path / "work" / "src" / "main.c").read_text() == TREE["src/main.c"]
    assert os.access(tmp_path / "work" / "src" / "build.sh", os.X_OK)
    [cached] = _downloads(tmp_path)
    # the server is gone: the cache serves, checked again
    again = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES_URL=url)
    assert again.returncode == 0 and "downloading" not in again.stderr
    assert again.stderr.strip().endswith(f"sources from {tmp_path}/cache/cnfperf/sources/{cached}")


def test_upstream_s_archive_serves_when_no_mirror_url_is_set(tmp_path):
    served = tmp_path / "served"
    ss.pack(served / "archive" / f"{ss.COMMIT}.tar.gz", TREE, f"t-{ss.COMMIT}")
    with ss.http_server(served) as url:
        script = _setup(tmp_path, upstream=f"{url}/archive/{ss.COMMIT}.tar.gz")
        done = _sources(script, "unpack", "t", str(tmp_path / "work"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "work" / "README").is_file()


def _apt(tmp: Path, archive: str) -> str:
    """A PATH whose apt-get says the Debian archive is `archive` (apt-get
    indextargets' REPO_URI); the PATH's other programs as they were."""
    bin_ = tmp / "bin"
    bin_.mkdir(exist_ok=True)
    (bin_ / "apt-get").write_text(f"#!/bin/sh\necho '{archive}/'\n")
    (bin_ / "apt-get").chmod(0o755)
    return f"{bin_}:{os.environ['PATH']}"


def test_a_source_in_the_debian_archive_is_downloaded_from_apt_s_before_upstream(tmp_path):
    served = tmp_path / "served"
    ss.pack(served / "debian" / "pool" / "t_1.0.orig.tar.gz", TREE, "t-1.0")
    tree = ss.tree_hash(served / "debian" / "pool" / "t_1.0.orig.tar.gz")
    with ss.http_server(served) as url:
        script = ss.scripts(tmp_path, ss.lock_entry("t", tree, f"{url}/gone.tar.gz",
                                                    debian="pool/t_1.0.orig.tar.gz")) / "sources.py"
        done = _sources(script, "unpack", "t", str(tmp_path / "work"),
                        PATH=_apt(tmp_path, f"{url}/debian"))
        assert done.returncode == 0, done.stderr
        assert f"downloading {url}/debian/pool/t_1.0.orig.tar.gz" in done.stderr
        assert (tmp_path / "work" / "README").is_file()
        # not there: upstream's, here gone too; both are named
        (served / "debian" / "pool" / "t_1.0.orig.tar.gz").unlink()
        for p in (tmp_path / "cache").rglob("t-*"):
            p.unlink()
        gone = _sources(script, "unpack", "t", str(tmp_path / "work"),
                        PATH=_apt(tmp_path, f"{url}/debian"))
    assert gone.returncode == 3
    assert f"{url}/debian/pool/t_1.0.orig.tar.gz could not be downloaded" in gone.stderr
    assert f"{url}/gone.tar.gz could not be downloaded" in gone.stderr


def test_a_corrupted_download_is_refused_in_one_line_and_not_kept(tmp_path):
    script = _setup(tmp_path)
    served = tmp_path / "served"
    ss.pack(served / "t.tar.gz", {**TREE, "src/main.c": "int main(void) { return 2; }\n"}, "t")
    with ss.http_server(served) as url:
        done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES_URL=url)
    assert done.returncode == 1
    [line] = [l for l in done.stderr.splitlines() if "download" not in l]
    assert line.startswith(f"switches: t: {url}/t.tar.gz is not the pinned source: "
                           "its tree hash is")
    assert _downloads(tmp_path) == [] and not (tmp_path / "work").exists()


def test_a_truncated_download_is_refused(tmp_path):
    script = _setup(tmp_path)
    served = tmp_path / "served"
    whole = ss.pack(tmp_path / "whole.tar.gz", TREE, "t").read_bytes()
    served.mkdir()
    (served / "t.tar.gz").write_bytes(whole[: len(whole) // 2])
    with ss.http_server(served) as url:
        done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES_URL=url)
    assert done.returncode == 1 and done.stderr.splitlines()[-1].startswith(
        f"switches: t: {url}/t.tar.gz")     # is not the pinned source, or not a readable archive
    assert _downloads(tmp_path) == []


@pytest.mark.parametrize("served", [True, False])
def test_a_source_to_be_had_nowhere_names_its_url_and_the_way_to_a_copy(tmp_path, served):
    """Upstream's archive is named after the commit; a mirror folder looks for
    the source's name: the advice names the file as a mirror folder wants it."""
    script = ss.scripts(tmp_path, ss.lock_entry(
        "t", "0" * 64, f"http://127.0.0.1:9/archive/{ss.COMMIT}.tar.gz", file="t.tar.xz")) \
        / "sources.py"
    (tmp_path / "empty").mkdir()
    if served:                              # a mirror URL without the file: 404
        with ss.http_server(tmp_path / "empty") as url:
            done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES_URL=url)
        wanted, saved = f"{url}/t.tar.xz", "t.tar.xz"
    else:                                   # nothing listens upstream: no network, as it were
        done = _sources(script, "unpack", "t", str(tmp_path / "work"))
        wanted, saved = f"http://127.0.0.1:9/archive/{ss.COMMIT}.tar.gz", "t.tar.gz"
    assert done.returncode == 3
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("switches: t: no sources: no mirror folder")
    assert f"and {wanted} could not be downloaded (" in last
    assert last.endswith(f"; save it as {saved} in a folder and set CNFPERF_SOURCES to that folder")
    assert _downloads(tmp_path) == []


def test_a_mirror_folder_comes_first_and_a_wrong_copy_there_is_refused(tmp_path):
    script = _setup(tmp_path)
    mirror = tmp_path / "mirror"
    ss.unpacked(mirror / "t", TREE)                      # a directory will do
    done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES=str(mirror))
    assert done.returncode == 0 and f"sources from {mirror}/t" in done.stderr
    (mirror / "t" / "README").write_text("changed\n")
    served = tmp_path / "served"
    ss.pack(served / "t.tar.gz", TREE, "t")
    with ss.http_server(served) as url:                  # no falling back to a download
        done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES=str(mirror),
                        CNFPERF_SOURCES_URL=url)
    assert done.returncode == 1 and "downloading" not in done.stderr
    assert done.stderr.startswith(f"switches: t: {mirror}/t is not the pinned source")


def test_the_mirror_beside_the_checkout_is_used_by_default(tmp_path):
    script = _setup(tmp_path / "clone")
    ss.pack(tmp_path / "shared" / "sources" / "t.tar.xz", TREE, "t")
    done = _sources(script, "unpack", "t", str(tmp_path / "work"))
    assert done.returncode == 0
    assert f"sources from {tmp_path}/shared/sources/t.tar.xz" in done.stderr


def test_a_mirror_folder_that_is_not_there_is_a_bad_setting(tmp_path):
    done = _sources(_setup(tmp_path), "unpack", "t", str(tmp_path / "work"),
                    CNFPERF_SOURCES=str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert done.stderr == f"switches: CNFPERF_SOURCES: {tmp_path}/nowhere is not a directory\n"


def test_prune_keeps_the_downloads_the_lock_names_only(tmp_path):
    script = _setup(tmp_path)
    served = tmp_path / "served"
    ss.pack(served / "t.tar.gz", TREE, "t")
    with ss.http_server(served) as url:
        done = _sources(script, "unpack", "t", str(tmp_path / "w"), CNFPERF_SOURCES_URL=url)
    assert done.returncode == 0
    [kept] = _downloads(tmp_path)
    old = tmp_path / "cache" / "cnfperf" / "sources" / "t-00000000deadbeef.tar.gz"
    old.write_bytes(b"an older pin")
    done = _sources(script, "prune")
    assert done.returncode == 0 and done.stderr == f"switches: removed {old}\n"
    assert _downloads(tmp_path) == [kept]


def test_hash_prints_what_to_pin_leaving_out_a_source_s_excludes(tmp_path):
    archive = ss.pack(tmp_path / "t.tar.gz", TREE, "t")
    script = ss.scripts(tmp_path, ss.lock_entry("t", "0" * 64, "http://127.0.0.1:9/t",
                                                exclude=("README",))) / "sources.py"
    assert _sources(script, "hash", str(archive)).stdout == f"{ss.tree_hash(archive)}  {archive}\n"
    assert _sources(script, "hash", "--as", "t", str(archive)).stdout == \
        f"{ss.tree_hash(archive, {'README'})}  {archive}\n"
    assert _sources(script, "tree", "t").stdout == "0" * 64 + "\n"
    assert _sources(script, "tree", "nope").returncode == 2


@pytest.mark.parametrize("form", ["directory", "archive"])
def test_what_the_hash_leaves_out_is_not_unpacked(tmp_path, form):
    """A mirror directory's .git (its config could run a command in a build
    that asks git) and the lock's excluded paths, whatever a copy holds there:
    the hash vouches for neither, so neither reaches the build."""
    tree = {**TREE, "src/copy.c": "system(\"anything\");\n"}
    mirror = tmp_path / "mirror"
    if form == "directory":
        ss.unpacked(mirror / "t", tree)
        ss.unpacked(mirror / "t" / ".git", {"config": "[core]\n\tfsmonitor = touch /tmp/owned\n"})
    else:
        ss.pack(mirror / "t.tar.gz", tree, "t")
    pinned = ss.tree_hash(ss.pack(tmp_path / "pinned.tar.gz", TREE, "t"), {"src/copy.c"})
    script = ss.scripts(tmp_path, ss.lock_entry("t", pinned, "http://127.0.0.1:9/t.tar.gz",
                                                exclude=("src/copy.c",))) / "sources.py"
    done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES=str(mirror))
    assert done.returncode == 0, done.stderr
    work = tmp_path / "work"
    assert not (work / ".git").exists() and not (work / "src" / "copy.c").exists()
    assert (work / "src" / "main.c").read_text() == TREE["src/main.c"]
    rest = {k: v for k, v in TREE.items() if k != "src/copy.c"}
    assert ss.tree_hash(work) == ss.tree_hash(ss.unpacked(tmp_path / "want", rest))


def test_version_prints_the_lock_s_version_of_a_source_or_nothing(tmp_path):
    lock = ss.lock_entry("t", "0" * 64, "http://127.0.0.1:9/t", version="26.10-rc0") + \
        ss.lock_entry("u", "0" * 64, "http://127.0.0.1:9/u")
    script = ss.scripts(tmp_path, lock) / "sources.py"
    assert _sources(script, "version", "t").stdout == "26.10-rc0\n"
    assert _sources(script, "version", "u").stdout == "\n"
    assert tomllib.loads((REPO / "switches" / "sources.lock").read_text())["vpp"]["version"] \
        == "26.10-rc0"


# The python3 build.sh runs on a fresh Debian 12 machine (3.11.2, older than
# tarfile's extraction filters), beside the one running the tests.
PYTHONS = [sys.executable, *(["/usr/bin/python3"] if Path("/usr/bin/python3").exists() else [])]


@pytest.mark.parametrize("python", PYTHONS, ids=lambda p: "debian" if p.startswith("/usr/") else "venv")
def test_an_archive_is_unpacked_without_owners_or_dangerous_permission_bits(tmp_path, python):
    """What the hash ignores is not unpacked either: a setuid, world-writable
    file of a stranger's comes out as an ordinary file of ours."""
    import tarfile
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with tarfile.open(mirror / "t.tar.gz", "w:gz") as tar:
        for name, mode in (("t", 0o777), ("t/run", 0o4777), ("t/data", 0o666)):
            info = tarfile.TarInfo(name)
            info.mode, info.uid, info.gid, info.uname = mode, 4321, 4321, "stranger"
            if name == "t":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = 3
                tar.addfile(info, io.BytesIO(b"hi\n"))
    tree = ss.tree_hash(mirror / "t.tar.gz")
    script = ss.scripts(tmp_path, ss.lock_entry("t", tree, "http://127.0.0.1:9/t")) / "sources.py"
    done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES=str(mirror),
                    python=python)
    assert done.returncode == 0, done.stderr
    for name, mode in (("run", 0o755), ("data", 0o644)):
        st = (tmp_path / "work" / name).stat()
        assert (st.st_uid, st.st_mode & 0o7777) == (os.getuid(), mode), name


# Symbolic links that would let a build (or a later member) write outside the
# tree: one that leaves it as written, and one that stays in it as written
# (t/a/b/out -> ../.. seen from a/b) but leaves it as the kernel follows it
# (a/b is a link to a itself), as tarfile's data filter sees it.
OUT_OF_THE_TREE = {
    "as-written": [("t/up", "../../etc")],
    "as-followed": [("t/a/b", "."), ("t/a/b/out", "../..")],
}


@pytest.mark.parametrize("python", PYTHONS, ids=lambda p: "debian" if p.startswith("/usr/") else "venv")
@pytest.mark.parametrize("links", OUT_OF_THE_TREE.values(), ids=OUT_OF_THE_TREE.keys())
def test_a_link_out_of_the_tree_is_not_unpacked(tmp_path, python, links):
    """Refused in one line, nothing left unpacked."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with tarfile.open(mirror / "t.tar.gz", "w:gz") as tar:
        for name in ("t", "t/a"):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    tree = ss.tree_hash(mirror / "t.tar.gz")
    script = ss.scripts(tmp_path, ss.lock_entry("t", tree, "http://127.0.0.1:9/t")) / "sources.py"
    done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES=str(mirror),
                    python=python)
    assert done.returncode == 1 and f"links out of the tree ({links[-1][1]})" in done.stderr, \
        done.stderr
    assert len(done.stderr.splitlines()) == 1 and not (tmp_path / "work").exists()


def test_what_is_unpacked_is_checked_again(tmp_path, monkeypatch):
    """A copy that changed after it was checked (a mirror written to meanwhile)
    is refused as unpacked, and what was unpacked removed."""
    sources = ss.module()
    pinned = ss.pack(tmp_path / "pinned.tar.gz", TREE, "t")
    other = ss.pack(tmp_path / "other.tar.gz", {**TREE, "README": "another tree\n"}, "t")
    src = sources.Source("t", ss.COMMIT, "http://127.0.0.1:9/t", "t.tar.gz",
                         ss.tree_hash(pinned))
    monkeypatch.setattr(sources, "fetch", lambda s: other)   # checked, then swapped
    with pytest.raises(sources.Mismatch, match=rf"^t: {other}, unpacked, is not the pinned"):
        sources.unpack(src, tmp_path / "work")
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("served", [True, False])
def test_a_corrupted_download_in_the_cache_is_removed_and_downloaded_again(tmp_path, served):
    script = _setup(tmp_path)
    tree = ss.tree_hash(tmp_path / "pinned.tar.gz")
    cached = tmp_path / "cache" / "cnfperf" / "sources" / f"t-{tree[:16]}.tar.gz"
    ss.pack(cached, {**TREE, "README": "bit rot\n"}, "t")
    ss.pack(tmp_path / "served" / "t.tar.gz", TREE, "t")
    with ss.http_server(tmp_path / "served" if served else tmp_path) as url:
        done = _sources(script, "unpack", "t", str(tmp_path / "work"), CNFPERF_SOURCES_URL=url)
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"switches: t: {cached} is not the pinned source: its tree hash")
    assert lines[0].endswith("; removed from the cache")
    if served:
        assert done.returncode == 0, done.stderr
        assert lines[1] == f"switches: t: downloading {url}/t.tar.gz"
        assert cached.read_bytes() == (tmp_path / "served" / "t.tar.gz").read_bytes()
    else:
        assert done.returncode == 3 and not cached.exists()


@pytest.mark.parametrize("where", ["cache", "tree"])
def test_a_file_that_cannot_be_written_is_said_in_one_line(tmp_path, where):
    script = _setup(tmp_path)
    ss.pack(tmp_path / "served" / "t.tar.gz", TREE, "t")
    (tmp_path / "a-file").write_text("")
    with ss.http_server(tmp_path / "served") as url:
        if where == "cache":
            done = _sources(script, "unpack", "t", str(tmp_path / "work"),
                            CNFPERF_SOURCES_URL=url, XDG_CACHE_HOME="/proc/nope")
            said = "switches: /proc/nope: No such file or directory\n"
        else:
            done = _sources(script, "unpack", "t", str(tmp_path / "a-file" / "work"),
                            CNFPERF_SOURCES_URL=url)
            said = f"switches: {tmp_path}/a-file/work: Not a directory\n"
    assert done.returncode == 1 and done.stderr.splitlines()[-1] + "\n" == said


def test_without_home_or_xdg_cache_home_there_is_no_cache(tmp_path):
    script = _setup(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    done = subprocess.run([sys.executable, str(script), "unpack", "t", str(tmp_path / "w")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stderr) == (2, "switches: neither XDG_CACHE_HOME nor HOME is "
                                                 "set: the download cache is below one\n")


class _Stalling(http.server.BaseHTTPRequestHandler):
    """Promises a megabyte, sends ten bytes, then nothing until `done`."""
    done: threading.Event

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 20))
        self.end_headers()
        self.wfile.write(b"0123456789")
        self.wfile.flush()
        self.done.wait(60)

    def log_message(self, *args):
        pass


def test_a_stalled_download_is_given_up(tmp_path, monkeypatch):
    """curl gives up a transfer slower than 1 KB/s for STALL seconds (60; 1
    here), retries as it does, and the source is then not to be had."""
    sources = ss.module()
    monkeypatch.setattr(sources, "STALL", 1)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    done = threading.Event()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             type("Stalling", (_Stalling,), {"done": done}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("CNFPERF_SOURCES_URL", f"http://127.0.0.1:{server.server_address[1]}")
    src = sources.Source("t", ss.COMMIT, "http://127.0.0.1:9/t", "t.tar.gz", "0" * 64)
    t0 = time.monotonic()
    try:
        with pytest.raises(sources.Unavailable, match=r"could not be downloaded \(curl: \(28\) "):
            sources.download(src)
    finally:
        done.set()
        server.shutdown()
        server.server_close()
    assert time.monotonic() - t0 < 30 and _downloads(tmp_path) == []
