"""Headless Chromium driven over the DevTools protocol, for tests that check what a
reader of an HTML report sees: no console errors, every image decoded, every
section the page links to present, a screenshot of the whole page.

Chromium comes from Debian: `chromium-headless-shell` (in the Makefile's
APT_PACKAGES), the same browser as the `chromium` package built for headless
use only, without the desktop's libraries; either is found. Tests that need it
are marked `needs("chromium-headless-shell")`. Each browser starts with a fresh
profile and nothing that would reach the network on its own (updates, sync,
background requests), so a test sees only what the page does.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = next(filter(None, map(shutil.which, ("chromium-headless-shell", "chromium",
                                                "chromium-browser", "google-chrome"))), None)


class Browser:
    """Chrome DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out):
    no websocket library and no port to collide with."""

    def __init__(self, binary):
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()
        self.profile = tempfile.mkdtemp(prefix="cnfperf-chromium-")

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--hide-scrollbars", "--window-size=1280,900",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={self.profile}",
             "--disable-breakpad", "--disable-crash-reporter", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._id = 0
        self.events = []

    def call(self, method, session=None, timeout=20, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._next(timeout)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, method, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e.get("method") == method:
                    return e
            self.events.append(self._next(deadline - time.monotonic()))

    def _next(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium exited")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\0", 1)
        return json.loads(line)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)
        # its child processes (zygote, gpu) share our new session: wait them out
        start = time.monotonic()
        while time.monotonic() - start < 10:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL if time.monotonic() - start > 5 else 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        shutil.rmtree(self.profile, ignore_errors=True)


@dataclass
class Rendered:
    title: str
    images: list            # [complete, naturalWidth, naturalHeight] per <img>
    errors: list = field(default_factory=list)   # console errors, exceptions, log warnings
    screenshot: bytes = b""
    # [id, present, height in px] of every section the page's <nav> links to
    sections: list = field(default_factory=list)


def render(path: Path) -> Rendered:
    """Loads a local HTML file, as a reader would, and reports what it showed."""
    browser = Browser(CHROMIUM)
    try:
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.call(f"{domain}.enable", session)
        browser.call("Page.navigate", session, url=Path(path).resolve().as_uri())
        browser.wait_event("Page.loadEventFired")
        images = browser.call("Runtime.evaluate", session, returnByValue=True, expression=(
            "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
        ))["result"]["value"]
        title = browser.call("Runtime.evaluate", session, returnByValue=True,
                             expression="document.title")["result"]["value"]
        sections = browser.call("Runtime.evaluate", session, returnByValue=True, expression=(
            "Array.from(document.querySelectorAll('nav a')).map(a => {"
            " const id = a.getAttribute('href').slice(1), e = document.getElementById(id);"
            " return [id, e !== null, e ? e.getBoundingClientRect().height : 0]; })"
        ))["result"]["value"]
        shot = base64.b64decode(browser.call("Page.captureScreenshot", session, format="png",
                                             captureBeyondViewport=True)["data"])
    finally:
        browser.close()
    errors = [e for e in browser.events
              if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled"
                  and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded"
                  and e["params"]["entry"]["level"] in ("error", "warning"))]
    return Rendered(title, images, errors, shot, sections)
