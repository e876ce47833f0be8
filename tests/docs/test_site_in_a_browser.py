"""The documentation site as a reader sees it: `make docs` builds it into site/, and headless
Chromium (Debian's chromium and chromium-driver, driven by selenium) opens it from a local HTTP
server, as search needs. Each page must render with its pictures loaded and its console free of
errors, and search must find `layer_norm`. Screenshots go to runs/docs-screenshots/.

Without a built site or a browser these skip; `make docs-check` sets MINITRAIN_REQUIRE_BROWSER=1,
which turns a skip into a failure, so CI cannot pass them without running them."""

from __future__ import annotations

import functools
import http.server
import inspect
import os
import shutil
import threading
import urllib.request
from pathlib import Path

import pytest

from minitrain.nn import functional

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "site"
SCREENSHOTS = ROOT / "runs" / "docs-screenshots"
REQUIRED = os.environ.get("MINITRAIN_REQUIRE_BROWSER") == "1"


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"MINITRAIN_REQUIRE_BROWSER=1, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def site_url():
    """The built site, served on a free port of 127.0.0.1 for the module's tests."""
    if not (SITE / "index.html").is_file():
        _unavailable("the site is not built (make docs)")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # pytest shows the failures; the request log is noise
        pass


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver") if not REQUIRED else _selenium()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        _unavailable("Chromium or chromedriver is missing (apt install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    driver.set_page_load_timeout(60)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def _selenium():
    try:
        from selenium import webdriver
    except ImportError:
        pytest.fail("MINITRAIN_REQUIRE_BROWSER=1, but selenium is missing (pip install '.[docs]')")
    return webdriver


def _wait(driver, condition, timeout=30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _open(driver, url: str) -> None:
    """Load `url` and wait until the page and every picture on it have finished loading."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)
    _wait(driver, lambda d: d.execute_script("return document.readyState") == "complete")
    _wait(driver, lambda d: d.execute_script(_ALL_IMAGES_SETTLED))


_ALL_IMAGES_SETTLED = "return Array.from(document.images).every(image => image.complete)"
# every request the page made (scripts, fonts, the search index) has had its answer, so that
# an error it caused is in the console log by the time the log is read
_ALL_RESOURCES_LOADED = """
return performance.getEntriesByType("resource").every(entry => entry.responseEnd > 0)"""
_BROKEN_IMAGES = """
return Array.from(document.images)
    .filter(image => image.naturalWidth === 0)
    .map(image => image.currentSrc.slice(0, 120))"""


def _assert_rendered(driver, name: str, min_images: int) -> None:
    """The page's pictures all loaded (at least `min_images`), its console has no error; a
    screenshot of it saved as `name`.png."""
    _wait(driver, lambda d: d.execute_script(_ALL_RESOURCES_LOADED))
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    images = driver.execute_script("return document.images.length")
    assert images >= min_images, f"{name}: {images} pictures, expected {min_images} or more"
    assert driver.execute_script(_BROKEN_IMAGES) == [], f"{name}: pictures that did not load"
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == [], f"{name}: console errors {errors}"


def test_home_page_renders_with_its_pictures(browser, site_url):
    _open(browser, f"{site_url}/index.html")
    assert browser.title.startswith("minitrain")
    heading = browser.find_element("css selector", "article h1").text
    assert heading == "minitrain"
    assert "make demo" in browser.find_element("css selector", "article").text
    _assert_rendered(browser, "home", min_images=1)


def test_an_api_page_renders_the_docstrings(browser, site_url):
    _open(browser, f"{site_url}/api/nn.functional.html")
    article = browser.find_element("css selector", "article").text
    assert "minitrain.nn.functional" in article
    headings = [h.get_attribute("id") for h in browser.find_elements("css selector", "h2, h3")]
    assert "minitrain.nn.functional.layer_norm" in headings
    heading = browser.find_element("id", "minitrain.nn.functional.layer_norm")
    signature = heading.find_element("xpath", "following::div[contains(@class, 'doc-signature')]")
    rendered = heading.find_element("xpath", "following::div[@class='doc doc-contents '][1]")
    # the signature, then the docstring's own words, as the code has them
    assert "normalized_shape" in signature.text
    words = inspect.getdoc(functional.layer_norm).replace("`", "").split()
    assert " ".join(words[:8]) in " ".join(rendered.text.split())
    _assert_rendered(browser, "api_nn_functional", min_images=0)


def test_a_notebook_page_renders_its_outputs_and_formulas(browser, site_url):
    _open(browser, f"{site_url}/notebooks/02_gradient_kernels.html")
    # MathJax typesets the formulas on the page itself: wait until it has, then look
    _wait(browser, lambda d: d.find_elements("css selector", ".MathJax, .MathJax_Display"))
    assert browser.find_elements("css selector", ".jp-OutputArea-output img")
    download = browser.find_element("css selector", "a[title='Download the notebook']")
    with urllib.request.urlopen(download.get_attribute("href")) as response:  # noqa: S310
        assert b'"nbformat"' in response.read()
    _assert_rendered(browser, "notebook_02", min_images=5)


def test_search_finds_layer_norm(browser, site_url):
    _open(browser, f"{site_url}/index.html")
    browser.find_element("css selector", "label.md-search__icon, .md-search__input").click()
    query = browser.find_element("css selector", "input.md-search__input")
    query.send_keys("layer_norm")
    _wait(browser, lambda d: d.find_elements("css selector", ".md-search-result__item"))
    results = browser.find_elements("css selector", ".md-search-result__item a")
    targets = [result.get_attribute("href") for result in results]
    assert any("layer_norm" in target for target in targets), targets
    _assert_rendered(browser, "search_layer_norm", min_images=0)
