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
articles, and paging follows the mount point.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import child_python
from search_fixtures import *  # noqa: F401,F403
from search_fixtures import PAGES_A, pages_with
from test_serve import A, FRA, FRA_PAGES, HOSTILE_TITLE, _free_port, fra_path  # noqa: F401

WAIT = 20  # seconds any one browser step may take (a bound, not a measurement)


@pytest.fixture(scope="module")
def server(zim_a_path, fra_path):  # noqa: F811
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "libzim", "serve", str(zim_a_path), str(fra_path),
                             "--port", str(port), "--threads", "2", "--no-access-log"],
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
    yield base
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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
    path = folder / f"{name}.png"
    assert drv.save_screenshot(str(path)), f"no screenshot saved at {path}"


@pytest.fixture(autouse=True)
def final_shot(request, browser, shots):
    """What the page looked like when each test ended (passed or not)."""
    yield
    shot(browser, shots, f"{request.node.name}-end")


def _no_alert(drv) -> None:
    try:
        text = drv.switch_to.alert.text
    except NoAlertPresentException:
        return
    pytest.fail(f"a script from the archive's metadata ran: alert {text!r}")


def test_library_page(server, browser):
    browser.get(server + "/")
    cards = browser.find_elements(By.CSS_SELECTOR, ".book")
    assert {c.get_attribute("data-name") for c in cards} == {A, FRA}
    titles = {c.find_element(By.CSS_SELECTOR, "a.title").text for c in cards}
    assert titles == {"Search fixture A", HOSTILE_TITLE}  # shown as text
    _no_alert(browser)
    img = browser.find_element(By.CSS_SELECTOR, f".book[data-name='{FRA}'] img")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) == 48
    link = browser.find_element(By.CSS_SELECTOR, f".book[data-name='{FRA}'] a.title")
    link.click()
    WebDriverWait(browser, WAIT).until(EC.url_contains(f"/content/{FRA}/index.html"))
    assert "bienvenue" in browser.page_source


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
    WebDriverWait(browser, WAIT).until(EC.url_contains(f"/content/{FRA}/{path}"))
    assert FRA_PAGES[path][1].split()[1] in browser.page_source


def test_search_form_and_results(server, browser, shots):
    browser.get(server + "/")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "book")).select_by_value(A)
    box = browser.find_element(By.ID, "kiwixsearchbox")
    box.send_keys("wumpkit")
    browser.find_element(By.CSS_SELECTOR, "#kiwixsearchform button[type=submit]").click()
    WebDriverWait(browser, WAIT).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".results")))
    shot(browser, shots, "search-results")
    links = browser.find_elements(By.CSS_SELECTOR, ".results li > a")
    prefix = f"{server}/content/{A}/"
    got = {a.get_attribute("href").removeprefix(prefix) for a in links}
    assert got == pages_with(PAGES_A, "wumpkit")
    links[0].click()
    WebDriverWait(browser, WAIT).until(EC.url_contains(prefix))
    assert "wumpkit" in browser.page_source


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

