"""Screenshots of every page type of a built site, desktop (1280 px) and phone (400 px) wide, so a
change's look can be reviewed.

    python scripts/screenshots.py [SITE_FOLDER] [--out FOLDER] [--dark]

Without SITE_FOLDER the bundled example project is run (two repeats, and a second sampler run so
there is a compare page) in a temporary folder and its site is built. Needs headless Chromium and
chromedriver (/usr/bin/chromium, /usr/bin/chromedriver) and selenium.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WIDTHS = {"desktop": 1280, "phone": 400}
#: Page type → a glob (relative to the site) whose first match stands for it, and a fragment to open.
PAGE_TYPES = {
    "home": "index.html",
    "runs": "runs.html",
    "leaderboard": "datasets/*.html",
    "experiment": "experiments/*.html",
    "matrix-divergent": "experiments/*.html#matrix-divergent",
    "run": "runs/*.html",
    "run-failed-cases": "runs/*.html#cases-failed",
    "compare": "compare/*.html",
    "report": "reports/*.html",
    "decisions": "decisions.html",
    "item": "items/*/[0-9a-f][0-9a-f].html",
    "item-index": "items/*/index.html",
}


#: True once a page's script has drawn what it draws from the data scripts (listing, item sections, matrix rows).
DRAWN = """return !document.querySelector('.case-listing, .item-page, .matrix-view')
  || !!document.querySelector('#cases-table, section.item, .item-page p.muted, #matrix-table tbody tr');"""


def example_site(folder: Path) -> Path:
    """Run the bundled example (as the browser tests do) and build its site."""
    sys.path.insert(0, str(REPO / "tests"))
    from sitekit import run_example

    from evalsite.execute.runner import execute_plan
    from evalsite.experiment.manifest import load_manifest
    from evalsite.experiment.plan import build_plan
    from evalsite.project import find_project
    from evalsite.site import build_site

    root = run_example(folder, repeat=2)
    project = find_project(root)
    execute_plan(project, build_plan(project, load_manifest(root / "experiments/arithmetic.yaml"), arm_ids=("sampler",), repeat=2))
    build_site(project)
    return root / "site"


def browser(profile: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def shoot(site: Path, out: Path, dark: bool) -> list[Path]:
    from selenium.webdriver.support.ui import WebDriverWait

    out.mkdir(parents=True, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="evalsite-shots-")
    driver = browser(profile)
    saved = []
    try:
        if dark:
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        for name, target in PAGE_TYPES.items():
            pattern, _, fragment = target.partition("#")
            found = sorted(p for p in site.glob(pattern) if not p.name.count(".") > 1)  # pages, not downloads
            if not found:
                print(f"{name}: no page matches {pattern}", file=sys.stderr)
                continue
            for label, width in WIDTHS.items():
                driver.set_window_size(width, 900)
                driver.get(found[0].as_uri() + (f"#{fragment}" if fragment else ""))
                WebDriverWait(driver, 10).until(lambda d: d.execute_script(DRAWN))
                height = driver.execute_script("return Math.min(document.documentElement.scrollHeight, 6000)")
                driver.set_window_size(width, max(600, height))
                path = out / f"{name}-{label}{'-dark' if dark else ''}.png"
                driver.save_screenshot(str(path))
                saved.append(path)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", type=Path, help="a built site folder (default: build the example)")
    parser.add_argument("--out", type=Path, default=Path("screenshots"), help="where the PNG files go")
    parser.add_argument("--dark", action="store_true", help="emulate prefers-color-scheme: dark")
    args = parser.parse_args()
    site = args.site or example_site(Path(tempfile.mkdtemp(prefix="evalsite-example-")))
    for path in shoot(site, args.out, args.dark):
        print(path)


if __name__ == "__main__":
    main()
