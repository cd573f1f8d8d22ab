"""Headless Chromium for the site tests: the binaries, a skip mark when they are missing, a
driver with the brief's flags and a fresh profile, and the problems a page logs."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--window-size=1400,1000")

NO_BROWSER = "headless browser tests need /usr/bin/chromium and /usr/bin/chromedriver (Debian: apt-get install chromium chromium-driver)"
needs_browser = pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()), reason=NO_BROWSER)


@contextmanager
def chromium(downloads: Path | None = None) -> Iterator:
    """A selenium Chrome driver on headless Chromium with a fresh ``--user-data-dir``, quit on exit;
    with ``downloads``, files the page downloads are saved there without asking."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="evalsite-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if downloads is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                                  "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    if downloads is not None:
        driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def problems_in(driver, site: Path) -> list[str]:
    """Console messages at warning level or above, and any request outside the site folder."""
    messages = [f"console: {entry['message']}" for entry in driver.get_log("browser")
                if entry["level"] in ("SEVERE", "WARNING")]
    names = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".concat(performance.getEntriesByType('navigation').map(e => e.name));")
    inside = site.resolve().as_uri() + "/"
    return messages + [f"request outside the site: {name}" for name in names if not name.startswith(inside)]


def load(driver, url: str, timeout: float = 10) -> None:
    """Open ``url`` as a new document and return once it has loaded: stylesheets applied, scripts
    run (see ``navigated``). A ``url`` that differs from the open page's only in its ``#fragment``
    would only scroll the open document (no new one, its script not run again), so the browser
    leaves for ``about:blank`` first: the page opens at that fragment as a reader's link opens it,
    whatever the previous test left open."""
    if "#" in url and driver.execute_script(
            "return new URL(arguments[0], location.href).href.split('#')[0] === location.href.split('#')[0]", url):
        navigated(driver, lambda: driver.get("about:blank"), timeout)
    navigated(driver, lambda: driver.get(url), timeout)


_marks = itertools.count()


def navigated(driver, navigate: Callable[[], object], timeout: float = 10) -> None:
    """Run ``navigate``, an action that opens a new document (a ``get``, ``driver.back``,
    ``driver.refresh``, a click on a link to another page), and return once that document has
    loaded: stylesheets applied, scripts run. chromedriver's navigations now and then return while
    the new document still reads ``loading`` (about 1 in 50 here), before the stylesheet applies
    and the page's script runs: an unstyled page is wider than a phone, an undrawn one has no rows.
    The old document is marked first, so its own ``complete`` is never taken for the new one's;
    each call's mark is its own, so a document that ``back`` restores from the browser's cache
    (marked when it was left) counts as new. Not for an action that only runs the page's script or
    changes only the ``#fragment``: the marked document stays, and this times out."""
    from selenium.webdriver.support.ui import WebDriverWait

    mark = f"left-{next(_marks)}"
    driver.execute_script("document.evalsiteLeft = arguments[0]", mark)
    navigate()
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.evalsiteLeft !== arguments[0] && document.readyState === 'complete'", mark),
        f"no new document loaded within {timeout} s of the navigation")


def drawn(driver, css: str, timeout: float = 10):
    """The elements a page's script draws from its data scripts, once they are there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))
