"""The built book in a real browser: headless Chromium over the DevTools protocol.

Every page in ``_toc.yml`` is opened from a local HTTP server and checked as a
reader would see it: it renders (a title and a heading), shows no Python
traceback or error output, every image loads (``naturalWidth > 0``), each chapter
shows at least two figures whose ``<img>`` carries written alt text, and every
internal link (and ``#fragment``) resolves, every external link goes to the
configured repository or a documentation host (tests/book/test_links.py), and no script throws.  The search page must find "XLA".
Full-page screenshots of two pages (the introduction and "Hardware and
results") go to ``_build/screenshots/`` for review.

Needs a Chromium binary (Debian's ``chromium``; ``.ci/run`` installs it).
Where none exists the module is skipped with that reason, never passed.
"""
from __future__ import annotations

import base64
import functools
from html import escape
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.book.test_book import toc_files

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def chromium_binary() -> str | None:
    """``$CHROMIUM``, else the first of Debian's and Google's names on PATH."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name) if name else None
        if found:
            return found
    return None


CHROMIUM = chromium_binary()
if CHROMIUM is None:
    pytest.skip("no Chromium binary found (chromium, chromium-browser, google-chrome or $CHROMIUM); "
                "install Debian's chromium (.ci/run does) to run the browser tests", allow_module_level=True)

import websocket  # noqa: E402  (websocket-client; only needed when a browser exists)

HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,1000")


class DevTools:
    """A minimal Chrome DevTools protocol client for one page target."""

    def __init__(self, ws_url: str) -> None:
        # No Origin header: Chromium refuses websocket clients that send one it did not allow.
        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout_s: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout_s
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            message = json.loads(self.ws.recv())
            if message.get("method") == method:
                return message
            self.events.append(message)
        raise TimeoutError(f"no {method} within {timeout_s:g} s")

    def evaluate(self, expression: str, *, await_promise: bool = False):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=await_promise)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails'].get('text')} in {expression[:80]}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.send("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def close(self) -> None:
        self.ws.close()


@pytest.fixture(scope="module")
def server(built_book):
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    proc = subprocess.Popen([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port_file = Path(profile) / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while not (port_file.exists() and port_file.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
            shutil.rmtree(profile, ignore_errors=True)
            pytest.fail(f"{CHROMIUM} did not start its DevTools endpoint (exit {proc.poll()}):\n{err}")
        time.sleep(0.2)
    port = int(port_file.read_text().split()[0])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as reply:
        targets = json.load(reply)
    page = next(t for t in targets if t.get("type") == "page")
    tools = DevTools(page["webSocketDebuggerUrl"])
    tools.send("Page.enable")
    tools.send("Runtime.enable")
    yield tools
    tools.close()
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(profile, ignore_errors=True)


# Evaluated in each page once it has loaded.
PAGE_REPORT = """(async () => {
  for (const img of document.images) img.loading = "eager";
  window.scrollTo(0, document.body.scrollHeight);
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(done => { img.addEventListener("load", done); img.addEventListener("error", done); })));
  const main = document.querySelector("main") || document.body;
  return {
    title: document.title,
    h1: (main.querySelector("h1") || {}).textContent || "",
    text: main.innerText,
    errorOutputs: document.querySelectorAll(
        ".output.error, .output.traceback, .system-message, div.cell_output .stderr").length,
    images: Array.from(document.images).map(img => ({src: img.currentSrc || img.src, width: img.naturalWidth,
                                                      alt: img.getAttribute("alt"), inMain: main.contains(img)})),
    links: Array.from(document.querySelectorAll("a[href]")).map(a => a.href),
  };
})()"""


@pytest.fixture(scope="module")
def pages(browser, server) -> dict[str, dict]:
    """What the browser saw on every page of the table of contents."""
    seen = {}
    for name in toc_files():
        browser.events.clear()
        browser.open(f"{server}/{name}.html")
        seen[name] = browser.evaluate(PAGE_REPORT, await_promise=True)
        seen[name]["jsErrors"] = [e["params"]["exceptionDetails"].get("exception", {}).get("description")
                                  or e["params"]["exceptionDetails"].get("text", "")
                                  for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
        if name in ("book/intro", "book/hardware"):
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            browser.evaluate("window.scrollTo(0, 0)")
            time.sleep(0.5)  # let the theme settle after the scroll
            size = browser.send("Page.getLayoutMetrics")["cssContentSize"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
            shot = browser.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
            (SCREENSHOTS / f"{name.split('/')[-1]}.png").write_bytes(base64.b64decode(shot["data"]))
    return seen


def test_every_toc_page_renders(pages):
    for name, page in pages.items():
        assert page["title"].strip(), f"{name}: empty <title>"
        assert page["h1"].strip(), f"{name}: no <h1> in the rendered page"
        assert len(page["text"]) > 200, f"{name}: only {len(page['text'])} characters rendered"


def test_no_page_shows_a_traceback_or_error_output(pages):
    for name, page in pages.items():
        assert "Traceback (most recent call last)" not in page["text"], f"{name} shows a Python traceback"
        assert page["errorOutputs"] == 0, f"{name} shows {page['errorOutputs']} error output(s)"


# Known and harmless: under jupyter-book 1.0.4, sphinx-thebe 0.3.1's inline config
# script ("const THEBE_JS_URL = ...") is written into every page twice; the first copy
# defines the constants, so only the second copy's redeclaration throws.  Anything
# else a page throws fails the test.
KNOWN_THEME_ERRORS = ("SyntaxError: Identifier 'THEBE_JS_URL' has already been declared",)


def test_no_page_throws_a_javascript_error(pages):
    for name, page in pages.items():
        errors = [e for e in page["jsErrors"] if not e.startswith(KNOWN_THEME_ERRORS)]
        assert not errors, f"{name}: uncaught JavaScript error(s): {errors[:3]}"


def test_every_image_loads(pages):
    for name, page in pages.items():
        broken = [img["src"] for img in page["images"] if img["width"] == 0]
        assert not broken, f"{name}: image(s) did not load: {broken}"


CHAPTER = re.compile(r"^book/\d\d_")  # the numbered chapters: book/01_op_logs ... book/10_scaling_out
MIN_CHAPTER_FIGURES = 2


def written_alt(img: dict) -> bool:
    """Whether an image has alt text someone wrote: docutils writes the image's own path as the alt
    of an image that has none, so a path or a file name does not count."""
    alt = (img.get("alt") or "").strip()
    name = urllib.parse.unquote(urllib.parse.urlsplit(img["src"]).path).rsplit("/", 1)[-1]
    return bool(alt) and not re.search(r"\.(png|jpe?g|gif|svg|webp)$", alt, re.I) and alt.rsplit("/", 1)[-1] != name


def test_written_alt_refuses_the_path_docutils_puts_there():
    assert written_alt({"alt": "Bar chart of the time per call, one bar per version", "src": "http://x/_images/a.png"})
    assert not written_alt({"alt": "../_images/abc123.png", "src": "http://x/_images/abc123.png"})
    assert not written_alt({"alt": "  ", "src": "http://x/_images/a.png"})
    assert not written_alt({"alt": None, "src": "http://x/_images/a.png"})


def test_every_chapter_shows_two_figures_each_with_alt_text(pages):
    """Each chapter's own images (inside <main>, not the theme's logo) have alt text a screen reader
    can read, and there are at least two of them, rendered (tests/book/test_figures.py checks the sources)."""
    chapters = {name: page for name, page in pages.items() if CHAPTER.match(name)}
    assert chapters, "no numbered chapter (book/NN_...) in the table of contents"
    for name, page in chapters.items():
        figures = [img for img in page["images"] if img["inMain"]]
        without_alt = [img["src"] for img in figures if not written_alt(img)]
        assert not without_alt, (f"{name}: image(s) without alt text: {without_alt}; give the cell that draws each "
                                 "`mystnb: {image: {alt: ...}}` metadata")
        rendered = [img for img in figures if img["width"] > 0]
        assert len(rendered) >= MIN_CHAPTER_FIGURES, (
            f"{name}: {len(rendered)} rendered figure(s), at least {MIN_CHAPTER_FIGURES} wanted")


def _target_file(path: str) -> Path:
    target = HTML / urllib.parse.unquote(path).lstrip("/")
    return target / "index.html" if target.is_dir() else target


@functools.lru_cache(maxsize=None)
def _ids(path: Path) -> frozenset[str]:
    html = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(re.findall(r'\b(?:id|name)="([^"]+)"', html))


def test_internal_links_resolve(pages, server):
    checked, broken = 0, []
    for name, page in pages.items():
        for href in sorted(set(page["links"])):
            if not href.startswith(server):
                continue
            parsed = urllib.parse.urlsplit(href)
            target = _target_file(parsed.path)
            checked += 1
            if not target.is_file():
                broken.append(f"{name} -> {parsed.path} (no such file)")
            elif parsed.fragment and target.suffix == ".html" and \
                    urllib.parse.unquote(parsed.fragment) not in _ids(target):
                broken.append(f"{name} -> {parsed.path}#{parsed.fragment} (no such anchor)")
    assert checked > len(pages), f"only {checked} internal links found on {len(pages)} pages"
    assert not broken, f"{len(broken)} broken internal link(s): " + "; ".join(broken[:15])


def test_external_links_go_to_the_repository_or_documentation(pages, server):
    """What a reader can click: the configured repository, or a host on test_links.DOC_HOSTS (never example/)."""
    from autograder.course.release import repository
    from tests.book.test_links import link_problems

    url, _ = repository()
    with tempfile.TemporaryDirectory() as tmp:
        for name, page in pages.items():
            external = [href for href in page["links"] if href.startswith(("http://", "https://"))
                        and not href.startswith(server)]
            target = Path(tmp) / f"{name.replace('/', '_')}.html"
            target.write_text("".join(f'<a href="{escape(h, quote=True)}"></a>' for h in external))
        problems = link_problems(Path(tmp), url)
    assert not problems, f"{len(problems)} external link(s) not allowed: " + "; ".join(problems[:10])


def test_search_finds_xla(browser, server, built_book):
    browser.open(f"{server}/search.html?q=XLA")
    deadline = time.monotonic() + 60
    summary = ""
    while time.monotonic() < deadline:
        summary = browser.evaluate("(document.querySelector('#search-results .search-summary') || {}).textContent"
                                   " || ''") or ""
        if summary and "Searching" not in summary and "Preparing" not in summary:
            break
        time.sleep(0.25)
    hits = browser.evaluate("Array.from(document.querySelectorAll('#search-results ul.search li a'))"
                            ".map(a => a.textContent)")
    assert hits, f"search for XLA found nothing (summary: {summary!r})"


def test_screenshots_were_saved(pages):
    for name in ("intro", "hardware"):
        shot = SCREENSHOTS / f"{name}.png"
        assert shot.is_file(), f"no screenshot {shot}"
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, f"{shot} is not a real screenshot"
