"""Open a report in real headless Chromium and report what a user would see (stdlib only).

Design. The Chrome DevTools Protocol over ``--remote-debugging-pipe``: Chromium reads
NUL-terminated JSON commands on fd 3 and writes responses and events on fd 4, so no port, no
websocket library and no race on a debugging port. A reader thread queues messages; commands
wait for their response by id. We open one page target (flattened session), enable the
Runtime/Log/Network domains to collect console errors, uncaught exceptions and any request
that leaves the machine (a self-contained report makes none), navigate to the ``file://``
URL, wait for the page's ``window.__reportReady`` flag (set after every plot is drawn), and
can evaluate expressions and capture a full-page PNG.

Used by ``tests/test_report.py`` (acceptance in a real browser) and ``bench/report.py``
(time to open). ``find_chromium()`` returns None where no browser is installed.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
         "--remote-debugging-pipe")
INSTALL_HINT = "install Chromium: apt-get update && apt-get install -y chromium"


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(Exception):
    pass


@dataclass
class PageResult:
    load_seconds: float
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)


class Chromium:
    """A headless Chromium driven over the DevTools pipe; use as a context manager."""

    def __init__(self, executable: str | None = None, width: int = 1400, height: int = 900,
                 timeout: float = 60.0) -> None:
        exe = executable or find_chromium()
        if exe is None:
            raise BrowserError(f"no Chromium found; {INSTALL_HINT}")
        self._profile = tempfile.mkdtemp(prefix="isrlab-chromium-")
        self.timeout = timeout
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        # park the child's ends above fd 10 (close-on-exec), then in the child put them at
        # 3 and 4; dup2 clears close-on-exec. close_fds=False because Popen would close fds
        # 3 and 4 after preexec_fn; every other fd Python opened is close-on-exec anyway.
        park_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 10)
        park_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def wire() -> None:
            os.dup2(park_r, 3)
            os.dup2(park_w, 4)

        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=wire)  # noqa: PLW1509
        to_child_r, from_child_w = park_r, park_w
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self.session: str | None = None

    # -- plumbing --

    def _read_loop(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                try:
                    self._inbox.put(json.loads(raw))
                except ValueError:
                    continue
        self._inbox.put(None)

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: bool = True) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"{method}: no answer within {self.timeout:.0f} s")
            try:
                reply = self._inbox.get(timeout=left)
            except queue.Empty:
                continue
            if reply is None:
                raise BrowserError(f"{method}: Chromium exited")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result = reply.get("result", {})
                return result if isinstance(result, dict) else {}
            self._events.append(reply)

    def _drain(self) -> None:
        while True:
            try:
                msg = self._inbox.get_nowait()
            except queue.Empty:
                return
            if msg is not None:
                self._events.append(msg)

    # -- what callers use --

    def open(self, path: str | Path, ready_timeout: float = 30.0) -> PageResult:
        """Load a local HTML file; time until ``window.__reportReady``; collect errors."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self._events.clear()
        url = Path(path).resolve().as_uri()
        t0 = time.perf_counter()
        self.send("Page.navigate", {"url": url})
        deadline = time.monotonic() + ready_timeout
        while not self.evaluate("window.__reportReady === true"):
            if time.monotonic() > deadline:
                raise BrowserError(f"{url}: not ready within {ready_timeout:.0f} s")
            time.sleep(0.02)
        elapsed = time.perf_counter() - t0
        time.sleep(0.2)  # late console messages
        self._drain()
        res = PageResult(load_seconds=elapsed)
        for ev in self._events:
            method, p = ev.get("method"), ev.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                res.console_errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                                   for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                res.console_errors.append(
                    str(d.get("exception", {}).get("description") or d.get("text")))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                res.console_errors.append(f"{e.get('source')}: {e.get('text')} {e.get('url', '')}")
            elif method == "Network.requestWillBeSent":
                u = str(p.get("request", {}).get("url", ""))
                if not u.startswith(("file:", "data:", "about:", "blob:")):
                    res.external_requests.append(u)
        return res

    def evaluate(self, expression: str) -> Any:
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression}: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def screenshot(self, out: str | Path, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            w, h = self.evaluate("[document.documentElement.scrollWidth,"
                                 " document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": w, "height": min(h, 16000), "scale": 1})
        data = self.send("Page.captureScreenshot", params)["data"]
        outp = Path(out)
        outp.parent.mkdir(parents=True, exist_ok=True)
        outp.write_bytes(base64.b64decode(data))
        return outp

    def element_screenshot(self, selector: str, out: str | Path) -> Path:
        """A PNG of one element (``document.querySelector(selector)``)."""
        rect = self.evaluate(
            f"(function(){{var r=document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect(); return [r.left + window.scrollX, r.top + window.scrollY,"
            " r.width, r.height];})()")
        x, y, w, h = rect
        data = self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": x, "y": y, "width": w, "height": h, "scale": 1}})["data"]
        outp = Path(out)
        outp.parent.mkdir(parents=True, exist_ok=True)
        outp.write_bytes(base64.b64decode(data))
        return outp

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except (BrowserError, OSError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
