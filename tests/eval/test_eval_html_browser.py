"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` + ``chromium-driver``, driven by
Selenium) opens a run's report.html from disk, a filter is applied and the rows shown are checked, a number of
the summary is clicked and opens the items behind it, a row opens its passes beside its clean twin with its
frames and audio loaded — and no request leaves the file: every request the browser made (DevTools network
events) is to a local file or data URI, a loopback server planted in a model's answer and in a script run in
the page is never contacted (the page's Content-Security-Policy blocks it), and no console error is logged.

Skipped, with the reason, where Chromium or its driver is not installed (CI installs them when it can:
``.ci/run``).
"""

import json
import shutil
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

import pytest

from tests.helpers.html_report_check import build_data, page_data, run_eval, scripted

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
DRIVER = shutil.which("chromedriver")
# The flags this machine needs (docs/evaluation.md): no sandbox as root, no GPU, and none of Chromium's own
# background connections (they would be refused by a closed network, and are not the page's requests).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="no Chromium / chromedriver installed (Debian: apt-get install chromium chromium-driver)",
)


class Listener:
    """A loopback HTTP server that only counts the requests it gets: the page must never contact it."""

    def __init__(self):
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture(scope="module")
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory, listener):
    mp = pytest.MonkeyPatch()
    try:
        root = tmp_path_factory.mktemp("browser")
        out = root / "run"
        run_eval(build_data(root), out, scripted(f"{listener.url}/leak.png"), mp, label="scripted")
        yield out
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed (pip install -e .[dev])"
    )
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS:
        opts.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    opts.add_argument(f"--user-data-dir={profile}")
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shown(driver) -> list[str]:
    return [tr.get_attribute("data-id") for tr in driver.find_elements("css selector", "#rows tr.item")]


def wait_for(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def requests(driver) -> list[str]:
    """Every URL the browser requested since the last call (DevTools ``Network.requestWillBeSent``)."""
    out = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            out.append(message["params"]["request"]["url"])
    return out


def test_the_page_filters_links_shows_media_and_never_leaves_the_file(run, browser, listener):
    from selenium.webdriver.support.ui import Select

    page = run / "report.html"
    rows = page_data(page)["rows"]
    browser.get(page.as_uri())
    assert wait_for(lambda: len(shown(browser)) == len(rows))
    assert browser.find_element("id", "tally").text.startswith(f"{len(rows)} of {len(rows)} items shown")

    # a filter: the wrong answers of the instruction setting
    Select(browser.find_element("id", "facet-result")).select_by_value("wrong")
    wrong = sorted(r["id"] for r in rows if r["facets"].get("result") == "wrong")
    assert wait_for(lambda: sorted(shown(browser)) == wrong) and wrong == ["c2", "p3", "p4"]
    assert browser.current_url.endswith("#items?result=wrong")  # the filter is in the address

    # a number of the summary: the N of ICIT's row opens ICIT's items (and only the filter it names)
    link = browser.find_element("xpath", "//section[@id='summary']//tr[td[1]='ICIT']/td[3]/a")
    link.click()
    assert wait_for(lambda: shown(browser) == ["p3"])
    assert Select(browser.find_element("id", "facet-result")).first_selected_option.text == "any"

    # a row opens its passes beside its clean twin, with the frames and the audio the model got
    browser.get(page.as_uri() + "#items?task=MCIT")
    assert wait_for(lambda: shown(browser) == ["p1"])
    browser.find_element("css selector", "#rows tr.item").click()
    views = browser.find_elements("css selector", "tr.detail .view h3")
    assert [v.text for v in views] == ["this item", "clean twin"]
    strip = browser.find_element("css selector", "tr.detail img.strip")
    assert wait_for(lambda: browser.execute_script("return arguments[0].naturalWidth", strip) == 2 * 96)
    audio = browser.find_element("css selector", "tr.detail audio")
    browser.execute_script("arguments[0].preload = 'auto'; arguments[0].load()", audio)
    assert wait_for(lambda: browser.execute_script("return arguments[0].readyState", audio) >= 1)
    assert browser.execute_script("return arguments[0].duration", audio) == pytest.approx(1.0, abs=0.1)
    assert "pass 0 — rotation 0" in browser.find_element("css selector", "tr.detail").text

    # the model's answer with <img src=http://…> and </script> is shown as text, never loaded or run
    browser.get(page.as_uri() + "#items?task=MVT")
    assert wait_for(lambda: shown(browser) == ["p4"])
    browser.find_element("css selector", "#rows tr.item").click()
    assert "<img src=" in browser.find_element("css selector", "tr.detail pre.output").text
    assert browser.execute_script("return window.leaked") is None

    # even a script run in the page (as devtools may) cannot load from the network: the CSP blocks it
    browser.execute_script(f"var i = new Image(); i.src = '{listener.url}/csp.png'; document.body.append(i)")
    time.sleep(0.5)
    urls = requests(browser)
    assert urls and all(
        u.startswith(("file://", "data:", "chrome://", "about:"))
        for u in urls
        if u != f"{listener.url}/csp.png"
    )
    assert listener.paths == []  # nothing reached the network
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors and all("Content Security Policy" in e and "csp.png" in e for e in errors), errors
