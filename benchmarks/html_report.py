"""How fast the HTML review report is written and opened with many findings.

Run by hand: ``python benchmarks/html_report.py [--findings 2000] [--no-browser]``.
It builds (once, cached under the system temp folder) N train/test pairs of 640x480
JPEGs, each test image a flipped copy, and a report with one finding per pair. Then,
in one run:

- baseline: decode every file in full with Pillow (what any image tool pays);
- render: ``render_html`` of the whole report (decode in draft mode, orient, heatmap,
  encode thumbnails); printed as a ratio to the baseline, plus the page size;
- browser (headless Chromium through Playwright, if installed): time until the first
  image shows and until the load event, for the page as written (``loading="lazy"``:
  images load when scrolled near) and with every image eager.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from pytest_leakcheck.report.model import Finding, Member, Pair, Report
from pytest_leakcheck.render.html import render as render_html
from pytest_leakcheck.testing import photo, save

DISTINCT = 100  # distinct pictures; files beyond that are byte copies (decode cost is the same)


def dataset(n: int) -> Path:
    root = Path(tempfile.gettempdir()) / f"leakcheck-html-bench-{n}"
    if (root / "done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    for k in range(min(n, DISTINCT)):
        img = photo(k, (640, 480))
        save(img, root / f"src/train_{k}.jpg", quality=90)
        save(img.transpose(Image.Transpose.FLIP_LEFT_RIGHT), root / f"src/test_{k}.jpg", quality=85)
    for i in range(n):
        for split in ("train", "test"):
            (root / split).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / f"src/{split}_{i % DISTINCT}.jpg", root / f"{split}/{i:05d}.jpg")
    (root / "done").touch()
    return root


def report(n: int) -> Report:
    findings = []
    for i in range(n):
        a, b = f"train/{i:05d}.jpg", f"test/{i:05d}.jpg"
        members = (Member(a, "train", f"{i:064x}"), Member(b, "test", f"{i + n:064x}"))
        pair = Pair(a, b, "phash", 0.0, "hflip", {"phash_distance": 0, "thumbnail_cosine": 1.0})
        findings.append(Finding(f"{i:012x}", "near-duplicate", "error", members, orientation="hflip",
                                pairs=(pair,), strength=1.0 - (i % 7) / 100))
    return Report("bench/leakcheck.yaml", tuple(findings))


# Timed inside the page: Playwright's own polling is starved while a big page parses.
_PROBE = """
document.addEventListener("load", function (e) {
  if (e.target.tagName === "IMG" && !window.__firstImage) window.__firstImage = performance.now();
}, true);
"""


def browser_seconds(page_path: Path) -> tuple[float, float] | None:
    """Seconds until the first image shows, and until the load event, as the page measures them."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                     args=args)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.add_init_script(_PROBE)
        page.goto(page_path.as_uri(), wait_until="load", timeout=300_000)
        page.wait_for_function("() => window.__firstImage", timeout=300_000)
        first, load = page.evaluate(
            "() => [window.__firstImage, performance.getEntriesByType('navigation')[0].loadEventEnd]")
        browser.close()
    return first / 1000, load / 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--findings", type=int, default=2000)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    root = dataset(args.findings)
    rep = report(args.findings)

    t0 = time.perf_counter()
    for f in rep.findings:
        for m in f.members:
            with Image.open(root / m.path) as img:
                img.convert("RGB")
    base = time.perf_counter() - t0

    t0 = time.perf_counter()
    page = render_html(rep, root=root)
    render = time.perf_counter() - t0
    out = root / "review.html"
    out.write_text(page, encoding="utf-8")
    size = out.stat().st_size
    print(f"{args.findings} findings, {2 * args.findings} images of 640x480")
    print(f"baseline  full decode of every file: {base:6.2f} s")
    print(f"render    render_html:               {render:6.2f} s  ({render / base:.2f}x baseline)")
    print(f"page      {size / 1e6:.1f} MB, {size / args.findings / 1e3:.1f} kB per finding")
    if args.no_browser:
        return
    eager_path = root / "review-eager.html"
    eager_path.write_text(page.replace(' loading="lazy"', ""), encoding="utf-8")
    lazy = browser_seconds(out)
    if lazy is None:
        print("browser   skipped: Playwright is not installed", file=sys.stderr)
        return
    eager = browser_seconds(eager_path)
    print(f"browser   first image shown:        {lazy[0]:6.2f} s lazy, {eager[0]:6.2f} s eager "
          f"(lazy {eager[0] / lazy[0]:.1f}x sooner)")
    print(f"browser   load event:               {lazy[1]:6.2f} s lazy, {eager[1]:6.2f} s eager "
          f"(lazy {eager[1] / lazy[1]:.1f}x sooner)")

if __name__ == "__main__":
    main()
