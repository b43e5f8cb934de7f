"""zim serve in a real browser (headless Chromium driven by Selenium).

Not collected by the default run (its name does not start with test_): it
needs Debian's chromium and chromium-driver and PyPI's selenium, which the
default suite does not. Run it explicitly:

    apt-get install -y chromium chromium-driver && pip install selenium
    python3 -m pytest -q tests/browser_serve.py

Missing Chromium, its driver or selenium is a failure here, never a skip.
What it checks: the library page renders the books (hostile metadata shown as
text, no script run), type-ahead suggestions appear as one types and lead to
the article, the search form gives a result page whose links open the
articles, and paging follows the mount point; the search page's own toolbar (shown
alone, hidden in the viewer's frame). Accessibility: axe-core (PyPI's axe-core-python
ships axe.min.js, so no network) on the library page, a search page, the viewer and
/nojs, each at desktop (1280x800) and phone (390x844) sizes; a violation of impact
serious or critical fails, and every finding is printed and written beside the
screenshots (axe-PAGE-SIZE.txt).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from axe_core_python.base import AXE_SCRIPT
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import child_python
from search_fixtures import *  # noqa: F401,F403
from search_fixtures import PAGES_A, pages_with
from test_serve import A, FRA, FRA_PAGES, HOSTILE_TITLE, _free_port, fra_path  # noqa: F401
from test_serve_viewer import ARTICLES, READER, READER_TITLE, reader_path  # noqa: F401

NOINDEX = "a-noindex"  # zim_noindex_path is .../a-noindex.zim
WAIT = 20  # seconds any one browser step may take (a bound, not a measurement)


def _start(archives, *flags):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "libzim", "serve", *map(str, archives),
                             "--port", str(port), "--threads", "2", "--no-access-log", *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **child_python())
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/", timeout=5):
                break
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
    return proc, base


def _stop(proc) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def server(zim_a_path, fra_path, reader_path, zim_noindex_path):  # noqa: F811
    """Four books (one without a full-text index), external links blocked (-b)."""
    proc, base = _start([zim_a_path, fra_path, reader_path, zim_noindex_path], "-b")
    yield base
    _stop(proc)


@pytest.fixture(scope="module")
def plain_server(reader_path):  # noqa: F811
    """One book, no search bar (-n), no library button (-m), external links not blocked."""
    proc, base = _start([reader_path], "-n", "-m")
    yield base
    _stop(proc)


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "needs Debian's chromium and chromium-driver (apt-get install -y ...)"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1200,900"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(driver_path), options=opts)
    drv.set_page_load_timeout(WAIT)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    """Where the screenshots go: LIBZIM_C_BROWSER_SHOTS, or the run's tmp folder."""
    where = os.environ.get("LIBZIM_C_BROWSER_SHOTS")
    folder = Path(where) if where else tmp_path_factory.getbasetemp() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shot(drv, folder: Path, name: str) -> None:
    name = re.sub(r"[^A-Za-z0-9_.\[\]-]", "_", name)[:120]  # parameters may hold "/" and worse
    path = folder / f"{name}.png"
    assert drv.save_screenshot(str(path)), f"no screenshot saved at {path}"


@pytest.fixture(autouse=True)
def final_shot(request, browser, shots):
    """What the page looked like when each test ended (passed or not)."""
    yield
    shot(browser, shots, f"{request.node.name}-end")


def emulate(drv, width: int, height: int, mobile: bool) -> None:
    """The page's viewport exactly ``width`` x ``height`` CSS pixels (a phone's: ``mobile``, so
    the page's viewport meta applies as on a phone), whatever the window's frame takes."""
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})


def _no_alert(drv) -> None:
    try:
        text = drv.switch_to.alert.text
    except NoAlertPresentException:
        return
    pytest.fail(f"a script from the archive's metadata ran: alert {text!r}")


def frame_source(drv) -> str:
    """The HTML of the viewer's frame (once it holds more than the blank page)."""
    drv.switch_to.frame("zv-frame")
    try:
        return drv.page_source
    finally:
        drv.switch_to.default_content()


def test_library_page(server, browser):
    browser.get(server + "/")
    cards = browser.find_elements(By.CSS_SELECTOR, ".book")
    assert {c.get_attribute("data-name") for c in cards} == {A, FRA, READER, NOINDEX}
    titles = {c.find_element(By.CSS_SELECTOR, "a.title").text for c in cards}
    assert titles == {"Search fixture A", HOSTILE_TITLE, READER_TITLE}  # shown as text
    _no_alert(browser)
    img = browser.find_element(By.CSS_SELECTOR, f".book[data-name='{FRA}'] img")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) == 48
    link = browser.find_element(By.CSS_SELECTOR, f".book[data-name='{FRA}'] a.title")
    assert link.get_attribute("href").endswith(f"/viewer#{FRA}/")  # the script's; the HTML says /content/
    link.click()
    WebDriverWait(browser, WAIT).until(EC.url_contains(f"/viewer#{FRA}/index.html"))
    assert "bienvenue" in frame_source(browser)
    _no_alert(browser)


def test_type_ahead_suggestions(server, browser, shots):
    browser.get(server + "/")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "book")).select_by_value(FRA)
    box = browser.find_element(By.ID, "kiwixsearchbox")
    box.send_keys("page")
    WebDriverWait(browser, WAIT).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#suggestions a.suggestion")) >= 2)
    shot(browser, shots, "suggestions")
    links = browser.find_elements(By.CSS_SELECTOR, "#suggestions a.suggestion")
    titles = {title for title, _ in FRA_PAGES.values()}
    shown = [a.text for a in links]
    assert any(t in titles for t in shown), shown
    first = next(a for a in links if a.text in titles)
    path = next(p for p, (t, _) in FRA_PAGES.items() if t == first.text)
    first.click()
    WebDriverWait(browser, WAIT).until(EC.url_contains(f"/viewer#{FRA}/{path}"))
    assert FRA_PAGES[path][1].split()[1] in frame_source(browser)


def test_search_form_and_results(server, browser, shots):
    browser.get(server + "/")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "book")).select_by_value(A)
    box = browser.find_element(By.ID, "kiwixsearchbox")
    box.send_keys("wumpkit")
    browser.find_element(By.CSS_SELECTOR, "#kiwixsearchform button[type=submit]").click()
    WebDriverWait(browser, WAIT).until(EC.url_contains("/viewer#search?"))  # the results, in the viewer
    browser.switch_to.frame("zv-frame")
    try:
        WebDriverWait(browser, WAIT).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".results")))
        browser.switch_to.default_content()
        shot(browser, shots, "search-results")
        browser.switch_to.frame("zv-frame")
        links = browser.find_elements(By.CSS_SELECTOR, ".results li > a")
        prefix = f"{server}/content/{A}/"
        got = {a.get_attribute("href").removeprefix(prefix) for a in links}
        assert got == pages_with(PAGES_A, "wumpkit")
        path = links[0].get_attribute("href").removeprefix(prefix)
        links[0].click()
    finally:
        browser.switch_to.default_content()
    WebDriverWait(browser, WAIT).until(EC.url_contains(f"/viewer#{A}/{path}"))
    assert "wumpkit" in frame_source(browser)


def test_pagination_links(server, browser):
    expected = pages_with(PAGES_A, "frobnitz")
    browser.get(f"{server}/search?books.name={A}&pattern=frobnitz&pageLength=5")
    seen: set[str] = set()
    for _ in range(10):
        links = browser.find_elements(By.CSS_SELECTOR, ".results li > a")
        seen |= {a.get_attribute("href").removeprefix(f"{server}/content/{A}/") for a in links}
        current = browser.find_element(By.CSS_SELECTOR, ".pagination b").text
        nxt = [a for a in browser.find_elements(By.CSS_SELECTOR, ".pagination a") if a.text == str(int(current) + 1)]
        if not nxt:
            break
        nxt[0].click()
        WebDriverWait(browser, WAIT).until(
            lambda d, c=current: d.find_element(By.CSS_SELECTOR, ".pagination b").text != c)
    assert seen == expected



# -- the viewer ------------------------------------------------------------------------


def _hash(drv) -> str:
    return drv.execute_script("return location.hash")


def _wait_hash(drv, expected: str) -> None:
    WebDriverWait(drv, WAIT).until(lambda d: _hash(d) == expected, f"hash never became {expected!r}")


def _frame_url(drv) -> str:
    return drv.execute_script("return document.getElementById('zv-frame').contentWindow.location.href")


def _click_in_frame(drv, element_id: str) -> None:
    drv.switch_to.frame("zv-frame")
    try:
        WebDriverWait(drv, WAIT).until(EC.element_to_be_clickable((By.ID, element_id))).click()
    finally:
        drv.switch_to.default_content()


def _open_viewer(drv, base: str, user_url: str, expected_hash: str) -> None:
    drv.get(f"{base}/viewer#{user_url}")
    _wait_hash(drv, expected_hash)
    WebDriverWait(drv, WAIT).until(lambda d: d.find_element(By.ID, "zv-frame").get_attribute("data-x") is None
                                   and d.execute_script("return document.readyState") == "complete")


def _active_id(drv) -> str:
    return drv.execute_script("return document.activeElement && document.activeElement.id")


def test_viewer_follows_the_frame_back_and_forward(server, browser, shots):
    _open_viewer(browser, server, f"{READER}/", f"#{READER}/index.html")
    WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "zv-book").text == READER_TITLE)
    assert browser.title == "Welcome reader"
    shot(browser, shots, "viewer")
    _no_alert(browser)  # the book's title is markup-like: shown as text
    _click_in_frame(browser, "to-first")
    _wait_hash(browser, f"#{READER}/A/first.html")
    WebDriverWait(browser, WAIT).until(lambda d: d.title == "Alpha first article")
    _click_in_frame(browser, "to-second-2")
    _wait_hash(browser, f"#{READER}/A/second.html")
    browser.back()
    _wait_hash(browser, f"#{READER}/A/first.html")
    _click_in_frame(browser, "back-home")
    _wait_hash(browser, f"#{READER}/index.html")
    _click_in_frame(browser, "to-second")  # an anchor: the hash keeps it
    _wait_hash(browser, f"#{READER}/A/second.html#part2")
    assert _frame_url(browser) == f"{server}/content/{READER}/A/second.html#part2"
    for expected in ("index.html", "A/first.html", "index.html"):  # history: index, first, index, second
        browser.back()
        _wait_hash(browser, f"#{READER}/{expected}")
    browser.forward()
    _wait_hash(browser, f"#{READER}/A/first.html")
    assert _frame_url(browser) == f"{server}/content/{READER}/A/first.html"
    # A hash typed into the address bar moves the frame.
    browser.execute_script(f"location.hash = '{READER}/A/more3.html'")
    WebDriverWait(browser, WAIT).until(lambda d: _frame_url(d) == f"{server}/content/{READER}/A/more3.html")
    assert "velocar more3" in frame_source(browser)


def test_viewer_type_ahead_and_search(server, browser, shots):
    _open_viewer(browser, server, f"{READER}/A/second.html", f"#{READER}/A/second.html")
    box = browser.find_element(By.ID, "zv-q")
    WebDriverWait(browser, WAIT).until(lambda d: box.get_attribute("placeholder") == f"Search {READER_TITLE}")
    box.send_keys("Alpha")
    WebDriverWait(browser, WAIT).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#zv-suggestions [role=option]")) == 2)
    shot(browser, shots, "viewer-suggestions")
    options = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#zv-suggestions [role=option]")]
    assert options == ["Alpha first article", "Search all articles for \u201cAlpha\u201d"]
    assert box.get_attribute("aria-expanded") == "true"
    box.send_keys(Keys.ARROW_DOWN)
    assert box.get_attribute("aria-activedescendant") == "zv-opt-0"
    box.send_keys(Keys.ENTER)
    _wait_hash(browser, f"#{READER}/A/first.html")
    WebDriverWait(browser, WAIT).until(lambda d: _active_id(d) == "zv-frame")  # reading goes on by keyboard
    # "/" from the article comes back to the search box; Enter searches the book.
    browser.switch_to.frame("zv-frame")
    browser.find_element(By.TAG_NAME, "body").send_keys("/")
    browser.switch_to.default_content()
    assert _active_id(browser) == "zv-q"
    ActionChains(browser).send_keys("velocar", Keys.ENTER).perform()
    _wait_hash(browser, f"#search?books.name={READER}&pattern=velocar")
    browser.switch_to.frame("zv-frame")
    try:
        links = WebDriverWait(browser, WAIT).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".results li > a"))
        got = {a.get_attribute("href").removeprefix(f"{server}/content/{READER}/") for a in links}
        assert got <= set(ARTICLES) and len(got) == min(len(ARTICLES), 25)
        browser.switch_to.default_content()
        shot(browser, shots, "viewer-search-results")
        assert box.get_attribute("value") == "velocar"  # the box says what was searched
        browser.switch_to.frame("zv-frame")
        path = links[0].get_attribute("href").removeprefix(f"{server}/content/{READER}/")
        links[0].click()
    finally:
        browser.switch_to.default_content()
    _wait_hash(browser, f"#{READER}/{path}")
    browser.back()
    _wait_hash(browser, f"#search?books.name={READER}&pattern=velocar")
    # Escape closes the suggestions, then gives the article the keyboard.
    box.send_keys("Gam")
    WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#zv-suggestions [role=option]"))
    box.send_keys(Keys.ESCAPE)
    assert not browser.find_element(By.ID, "zv-suggestions").is_displayed()
    box.send_keys(Keys.ESCAPE)
    assert _active_id(browser) == "zv-frame"


def test_viewer_book_without_a_full_text_index(server, browser):
    # No full-text row in the suggestions; Enter opens the first title rather than an error page.
    _open_viewer(browser, server, f"{NOINDEX}/", f"#{NOINDEX}/index.html")
    box = browser.find_element(By.ID, "zv-q")
    WebDriverWait(browser, WAIT).until(lambda d: box.get_attribute("placeholder") == "Search Search fixture A")
    box.send_keys("Shared")
    rows = WebDriverWait(browser, WAIT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#zv-suggestions a"))
    assert not browser.find_elements(By.CSS_SELECTOR, "#zv-suggestions a.zv-fulltext")
    first = rows[0].get_attribute("href").removeprefix(f"{server}/content/")
    box.send_keys(Keys.ENTER)
    _wait_hash(browser, f"#{first}")
    assert first == f"{NOINDEX}/shared.html" and "shares its path" in frame_source(browser)


def test_viewer_home_random_and_library(server, browser):
    _open_viewer(browser, server, f"{READER}/A/first.html", f"#{READER}/A/first.html")
    WebDriverWait(browser, WAIT).until(EC.visibility_of_element_located((By.ID, "zv-random")))
    seen = set()
    for _ in range(4):
        before = _frame_url(browser)
        browser.find_element(By.ID, "zv-random").click()
        WebDriverWait(browser, WAIT).until(lambda d, b=before: _frame_url(d) != b or _hash(d) != "")
        WebDriverWait(browser, WAIT).until(lambda d: _hash(d).startswith(f"#{READER}/") and
                                           _frame_url(d).startswith(f"{server}/content/"))
        seen.add(_hash(browser).removeprefix(f"#{READER}/"))
    assert seen <= set(ARTICLES), seen
    browser.find_element(By.ID, "zv-home").click()
    _wait_hash(browser, f"#{READER}/index.html")
    browser.find_element(By.ID, "zv-library").click()
    WebDriverWait(browser, WAIT).until(EC.url_to_be(server + "/"))


def test_viewer_toolbar_by_keyboard(server, browser):
    _open_viewer(browser, server, f"{READER}/A/first.html", f"#{READER}/A/first.html")
    WebDriverWait(browser, WAIT).until(EC.visibility_of_element_located((By.ID, "zv-home")))
    browser.execute_script("document.activeElement && document.activeElement.blur()")
    order = []
    for _ in range(4):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        order.append(_active_id(browser))
    assert order == ["zv-library", "zv-home", "zv-q", "zv-random"]
    # Each one has a visible focus ring.
    assert browser.execute_script("return getComputedStyle(document.activeElement).outlineStyle") != "none"
    ActionChains(browser).send_keys(Keys.TAB).perform()
    assert _active_id(browser) == "zv-frame"  # then the article
    for _ in range(3):
        ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    assert _active_id(browser) == "zv-home"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    _wait_hash(browser, f"#{READER}/index.html")


def test_viewer_narrow_window(server, browser, shots):
    browser.set_window_size(390, 800)
    try:
        _open_viewer(browser, server, f"{READER}/A/second.html", f"#{READER}/A/second.html")
        WebDriverWait(browser, WAIT).until(EC.visibility_of_element_located((By.ID, "zv-random")))
        width = browser.execute_script("return document.documentElement.clientWidth")
        bar = browser.find_element(By.ID, "zv-bar").rect
        assert bar["height"] < 60, bar  # one row
        for part in ("zv-library", "zv-home", "zv-q", "zv-random"):
            r = browser.find_element(By.ID, part).rect
            assert r["x"] >= 0 and r["x"] + r["width"] <= width + 1, (part, r, width)
            assert r["height"] >= 30, (part, r)  # big enough to tap
        assert browser.find_element(By.ID, "zv-q").rect["width"] > 150
        frame = browser.find_element(By.ID, "zv-frame").rect
        assert frame["y"] >= bar["height"] - 1 and frame["width"] >= width - 1
        shot(browser, shots, "viewer-narrow")
        browser.find_element(By.ID, "zv-q").send_keys("Gam")
        WebDriverWait(browser, WAIT).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#zv-suggestions [role=option]")) == 9)
        shot(browser, shots, "viewer-narrow-suggestions")
        browser.find_elements(By.CSS_SELECTOR, "#zv-suggestions a")[2].click()
        _wait_hash(browser, f"#{READER}/A/more2.html")
    finally:
        browser.set_window_size(1200, 900)


def test_viewer_blocks_external_links(server, browser, shots):
    _open_viewer(browser, server, f"{READER}/", f"#{READER}/index.html")
    _click_in_frame(browser, "external")
    WebDriverWait(browser, WAIT).until(EC.url_contains("/catch/external?source="))
    shot(browser, shots, "catch-external")
    assert browser.find_element(By.CSS_SELECTOR, "code.zv-url").text == "https://example.org/outside?x=1&y=%3C2%3E"
    assert browser.find_element(By.ID, "zv-follow").get_attribute("href").startswith("https://example.org/outside")
    browser.back()
    _wait_hash(browser, f"#{READER}/index.html")
    _click_in_frame(browser, "mail")  # not a web address: caught, not linked
    WebDriverWait(browser, WAIT).until(EC.url_contains("/catch/external?source=mailto"))
    assert not browser.find_elements(By.ID, "zv-follow")
    browser.back()
    _wait_hash(browser, f"#{READER}/index.html")
    # A link to a new tab opens the catch page there.
    main = browser.current_window_handle
    _click_in_frame(browser, "external-blank")
    WebDriverWait(browser, WAIT).until(lambda d: len(d.window_handles) == 2)
    other = next(h for h in browser.window_handles if h != main)
    browser.switch_to.window(other)
    try:
        WebDriverWait(browser, WAIT).until(EC.url_contains("/catch/external?source=https%3A%2F%2Fexample.net%2Fnew"))
    finally:
        browser.close()
        browser.switch_to.window(main)
    # The library's own pages take the whole window: never a viewer in the viewer.
    _click_in_frame(browser, "library-link")
    WebDriverWait(browser, WAIT).until(EC.url_to_be(server + "/"))


@pytest.mark.parametrize("odd", [
    "../../../../etc/passwd", "%2e%2e/%2e%2e/x", "javascript:alert(1)", "//evil.example/x",
    "<img src=x onerror=alert(1)>", "search?pattern=<img src=x onerror=alert(1)>&books.name=" + READER,
    READER + "/" + "x" * 6000, "\\\\evil.example\\x", "", "%",
])
def test_viewer_odd_hashes(server, browser, odd):
    browser.get(f"{server}/viewer#{odd}")
    WebDriverWait(browser, WAIT).until(lambda d: d.execute_script("return document.readyState") == "complete")
    time.sleep(0.3)  # the frame's load (a bound, not a measurement)
    _no_alert(browser)
    url = browser.current_url
    if "/viewer" in url:  # still reading: the frame shows this server's content or search, nothing else
        frame = _frame_url(browser)
        assert frame.startswith((f"{server}/content/", f"{server}/search?")), frame
    else:
        assert url == server + "/", url  # nothing to read there: the library


def test_viewer_options_and_unblocked_links(plain_server, browser, shots):
    _open_viewer(browser, plain_server, f"{READER}/", f"#{READER}/index.html")
    WebDriverWait(browser, WAIT).until(EC.visibility_of_element_located((By.ID, "zv-home")))
    assert not browser.find_elements(By.ID, "zv-q") and not browser.find_elements(By.ID, "zv-library")
    assert browser.find_element(By.ID, "zv-random").is_displayed()
    shot(browser, shots, "viewer-no-search-no-library")
    _click_in_frame(browser, "external-local")  # not blocked: the whole window goes there
    WebDriverWait(browser, WAIT).until(EC.url_contains("localhost:2/elsewhere"))


def test_nojs_library(server, browser, shots):
    browser.get(server + "/nojs")
    items = browser.find_elements(By.CSS_SELECTOR, ".zv-books li")
    assert {i.get_attribute("data-name") for i in items} == {A, FRA, READER, NOINDEX}
    _no_alert(browser)
    shot(browser, shots, "nojs")
    browser.find_element(By.CSS_SELECTOR, f"li[data-name='{READER}'] a.zv-title").click()
    # -b: an article opened in a tab goes into the viewer, where its external links are caught.
    WebDriverWait(browser, WAIT).until(EC.url_to_be(f"{server}/viewer#{READER}/index.html"))


def test_blocked_article_opened_directly_goes_to_the_viewer(server, browser, shots):
    # -b: /content/ typed or linked from elsewhere is not read outside the viewer, so no
    # link of the article leaves without the catch page.
    browser.get(f"{server}/content/{READER}/A/second.html?x=1")
    # (the viewer's hash keeps the path; the frame keeps the query)
    WebDriverWait(browser, WAIT).until(EC.url_contains(f"{server}/viewer#{READER}/A/second.html"))
    WebDriverWait(browser, WAIT).until(lambda d: _frame_url(d) == f"{server}/content/{READER}/A/second.html?x=1")
    browser.get(f"{server}/content/{READER}/index.html")
    _wait_hash(browser, f"#{READER}/index.html")
    WebDriverWait(browser, WAIT).until(lambda d: d.execute_script("return document.readyState") == "complete")
    _click_in_frame(browser, "external")
    WebDriverWait(browser, WAIT).until(EC.url_contains("/catch/external?source="))
    shot(browser, shots, "catch-external-from-direct-content")


def test_unblocked_article_opened_directly_stays(plain_server, browser):
    browser.get(f"{plain_server}/content/{READER}/index.html")
    WebDriverWait(browser, WAIT).until(EC.presence_of_element_located((By.ID, "external")))
    assert browser.current_url == f"{plain_server}/content/{READER}/index.html"


def test_search_page_toolbar(server, browser, shots):
    # Opened on its own: the toolbar is there, its box searches the same book, the library link leads home.
    browser.get(f"{server}/search?books.name={A}&pattern=frobnitz&pageLength=5")
    bar = browser.find_element(By.CSS_SELECTOR, "header.sp-bar")
    assert bar.is_displayed()
    assert len(browser.find_elements(By.CSS_SELECTOR, "nav.pagination")) == 2
    shot(browser, shots, "search-page")
    box = browser.find_element(By.ID, "sp-q")
    assert box.get_attribute("value") == "frobnitz"
    box.clear()
    box.send_keys("wumpkit", Keys.ENTER)
    WebDriverWait(browser, WAIT).until(EC.url_contains("pattern=wumpkit"))
    assert f"books.name={A}" in browser.current_url
    links = browser.find_elements(By.CSS_SELECTOR, ".results li > a")
    assert {a.get_attribute("href").removeprefix(f"{server}/content/{A}/") for a in links} == pages_with(PAGES_A, "wumpkit")
    browser.find_element(By.CSS_SELECTOR, "a.sp-library").click()
    WebDriverWait(browser, WAIT).until(EC.url_to_be(server + "/"))
    # In the viewer's frame the viewer's toolbar is the page's: this one is hidden.
    _open_viewer(browser, server, f"search?books.name={A}&pattern=wumpkit", f"#search?books.name={A}&pattern=wumpkit")
    browser.switch_to.frame("zv-frame")
    try:
        WebDriverWait(browser, WAIT).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".results")))
        assert not browser.find_element(By.CSS_SELECTOR, "header.sp-bar").is_displayed()
    finally:
        browser.switch_to.default_content()


# -- accessibility (axe-core) ------------------------------------------------------------

SIZES = {"desktop": (1280, 800, False), "phone": (390, 844, True)}
A11Y_PAGES = {
    "library": "/",
    "search": f"/search?books.name={A}&pattern=frobnitz&pageLength=5&start=5",
    "viewer": f"/viewer#{READER}/A/first.html",
    "nojs": "/nojs",
}
FAILING_IMPACTS = ("serious", "critical")


def axe_findings(drv) -> list[dict]:
    """axe-core's violations on the page as it is now: the page's own markup only (the viewer's
    frame holds the archive's article, which is not this server's to fix)."""
    drv.set_script_timeout(WAIT * 3)
    drv.execute_script(AXE_SCRIPT)
    result = drv.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "axe.run(document, {iframes: false, resultTypes: ['violations']})"
        ".then(function (r) { done(r.violations); }, function (e) { done({error: String(e)}); });")
    assert isinstance(result, list), result
    return result


def describe(findings: list[dict]) -> str:
    lines = []
    for v in findings:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} [{len(v['nodes'])} node(s)]")
        for n in v["nodes"][:5]:
            lines.append(f"    {' '.join(map(str, n['target']))}: {n['html'][:160]}")
    return "\n".join(lines) or "no violations"


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("page", A11Y_PAGES)
def test_accessibility(server, browser, shots, page, size):
    width, height, mobile = SIZES[size]
    emulate(browser, width, height, mobile)
    try:
        browser.get(server + A11Y_PAGES[page])
        if page == "viewer":
            _wait_hash(browser, f"#{READER}/A/first.html")
            WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "zv-book").text == READER_TITLE)
        WebDriverWait(browser, WAIT).until(lambda d: d.execute_script("return document.readyState") == "complete")
        assert browser.execute_script("return [innerWidth, innerHeight]") == [width, height]
        shot(browser, shots, f"axe-{page}-{size}")
        findings = axe_findings(browser)
        report = describe(findings)
        (shots / f"axe-{page}-{size}.txt").write_text(report + "\n")
        print(f"axe {page} {size}:\n{report}")
        bad = [v for v in findings if v["impact"] in FAILING_IMPACTS]
        if bad:
            pytest.fail(f"axe: {page} at {width}x{height}, impact serious or critical:\n{describe(bad)}")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
