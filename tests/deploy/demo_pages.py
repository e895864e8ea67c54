"""Every page of a running Dash app in headless Chromium: what each page shows empty.

An empty state is what a newcomer reads as "nothing here": a figure drawn as "no data", a light,
hop or cell reading "no data" or "not in this deployment", a table with no row that says it has
nothing (the good-news ones, "No alerts firing.", are not empty states), and a table whose every
figure is "–". Each is listed as "card title: text", so a failure names what became empty.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import CHROMEDRIVER, CHROMIUM, start_chromium
from vigia.dashboard.pages import PAGES

__all__ = ["By", "WebDriver", "chromium", "empty_states", "open_page", "walk"]

MISSING_BROWSER = [n for n, p in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)) if not p]
PAGE_DEADLINE_SECONDS = 60.0  # a page is drawn in seconds; a loaded machine takes longer

# Leaf texts that say a panel shows nothing; tables' empty texts that say the same.
EMPTY_TEXT = r"^(no data|not in this deployment|not available on this cluster)"
EMPTY_TABLE = r"^(No .* yet\.|No topic that Kafka deletes|Neither the HES|Consumer groups: not)"

_FIND_EMPTY = f"""
const body = document.getElementById('page-body');
const leaf = new RegExp({EMPTY_TEXT!r}), table = new RegExp({EMPTY_TABLE!r});
const title = e => {{
  const c = e.closest('.card, .light');
  const t = c && c.querySelector('.card-title, .light-label');
  return t ? t.innerText.trim() : '?';
}};
const found = [];
body.querySelectorAll('.js-plotly-plot').forEach(g => {{
  const a = (g.layout && g.layout.annotations) || [];
  if (!(g.data || []).length && a.length && a[0].text.startsWith('no data'))
    found.push(title(g) + ': ' + a[0].text.replace('<br>', ' (') + ')');
}});
body.querySelectorAll('*').forEach(e => {{
  if (e.children.length || e.closest('.js-plotly-plot')) return;
  const t = e.innerText.trim();
  if (leaf.test(t) || (e.classList.contains('muted') && table.test(t)))
    found.push(title(e) + ': ' + t);
}});
body.querySelectorAll('table').forEach(t => {{
  const cells = [...t.querySelectorAll('tbody tr')].flatMap(r => [...r.cells].slice(1));
  if (cells.length && cells.every(c => c.innerText.trim() === '–'))
    found.push(title(t) + ': every figure "–"');
}});
return found;
"""

_DRAWN = (
    "const s = document.getElementById('status-line');"
    "return document.querySelector('#page-body .card, #page-body .light')"
    " && s && s.innerText.includes('updated');"
)


@contextmanager
def chromium(profile: Path) -> Iterator[WebDriver]:
    driver = start_chromium(profile, 1280)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: WebDriver, url: str) -> None:
    """Load a page and wait until a refresh has drawn it."""
    driver.get(url)
    deadline = time.monotonic() + PAGE_DEADLINE_SECONDS
    while not driver.execute_script(_DRAWN):
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} not drawn within {PAGE_DEADLINE_SECONDS:g} s")
        time.sleep(0.3)
    time.sleep(0.5)  # Plotly draws its figures just after the page's HTML


def empty_states(driver: WebDriver) -> list[str]:
    """One "title: text" per panel that shows nothing (its first empty part: a panel whose
    table reads "no data" in every row is one empty panel)."""
    panels: dict[str, str] = {}
    for item in driver.execute_script(_FIND_EMPTY):
        title, _, text = str(item).partition(": ")
        panels.setdefault(title.lower(), f"{title}: {text}")
    return list(panels.values())


def screenshot(driver: WebDriver, path: Path) -> None:
    """A full-page PNG (the viewport is stretched to the page's height for the capture)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": min(int(height), 6000), "deviceScaleFactor": 1, "mobile": False},
    )
    time.sleep(0.6)  # let Plotly resize to the new viewport
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def walk(driver: WebDriver, base_url: str, shots: Path | None) -> dict[str, list[str]]:
    """{page title: its empty states} over every page, a screenshot of each in `shots`."""
    found = {}
    for page in PAGES:
        open_page(driver, base_url + page.path)
        found[page.title] = empty_states(driver)
        if shots is not None:
            screenshot(driver, shots / f"demo-{page.title.lower()}.png")
    return found
