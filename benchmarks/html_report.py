"""How fast the HTML review report is written and opened with many findings.

Run by hand: ``python benchmarks/html_report.py [--findings 2000] [--no-browser] [--repeats 5]``.
It builds (once, cached under the system temp folder) N train/test pairs of 640x480
JPEGs, each test image a flipped copy, and a report with one finding per pair. Then,
in one run:

- baseline: decode every file in full with Pillow (what any image tool pays);
- render: ``render_html`` of the whole report (decode in draft mode, orient, heatmap,
  encode thumbnails); printed as a ratio to the baseline, plus the page size;
- browser (headless Chromium through Playwright, if installed): first paint, time until
  the first image shows and until the load event, for the page as written
  (``loading="lazy"``: images load when scrolled near; cards off screen not laid out) and
  with every image eager; first paint against the same page without its filter script
  (the script's cost);
- a filter change (split pair, then a path search) in the page: from the change to the
  second animation frame after it, against two frames with no change (the baseline),
  repeated, the range printed.

One finding in four is an ``aligned`` match, whose heatmap needs the zoom and shift
re-found (render cost); findings are spread over three split pairs so the filters bite.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from pytest_leakcheck.report.model import Finding, Link, Member, Pair, Report
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
        second = ("test", "val", "test")[i % 3]
        a, b = f"train/{i:05d}.jpg", f"test/{i:05d}.jpg"
        detector, value = ("aligned", 0.93) if i % 4 == 0 else ("phash", 0.0)
        members = (Member(a, "train", f"{i:064x}"),
                   Member(b, second, f"{i + n:064x}", Link(a, detector, value, "hflip")))
        pair = Pair(a, b, detector, value, "hflip", {"phash_distance": 0, "thumbnail_cosine": 1.0})
        findings.append(Finding(f"{i:012x}", "near-duplicate", "error", members, orientation="hflip",
                                pairs=(pair,), strength=1.0 - (i % 7) / 100, status="known" if i % 9 == 0 else "new"))
    return Report("bench/leakcheck.yaml", tuple(findings))


# Timed inside the page: Playwright's own polling is starved while a big page parses.
_PROBE = """
document.addEventListener("load", function (e) {
  if (e.target.tagName === "IMG" && !window.__firstImage) window.__firstImage = performance.now();
}, true);
"""


def _launch(pw):  # noqa: ANN001, ANN202
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    return pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=args)


def browser_seconds(page_path: Path) -> tuple[float, float, float] | None:
    """Seconds until first paint, until the first image shows, and until the load event."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.add_init_script(_PROBE)
        page.goto(page_path.as_uri(), wait_until="load", timeout=300_000)
        page.wait_for_function("() => window.__firstImage", timeout=300_000)
        paint, first, load = page.evaluate(
            "() => [(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: NaN}).startTime,"
            " window.__firstImage, performance.getEntriesByType('navigation')[0].loadEventEnd]")
        browser.close()
    return paint / 1000, first / 1000, load / 1000


# From a change to the second frame after it: the script's pass and the layout and paint it causes.
_FILTER = """([name, value]) => new Promise(done => {
  const el = document.querySelector(`[name=${name}]`);
  const t0 = performance.now();
  if (value !== null) { el.value = value; el.dispatchEvent(new Event("change", {bubbles: true})); }
  requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
})"""


def filter_seconds(page_path: Path, repeats: int) -> dict[str, list[float]] | None:
    """Seconds per filter change (split pair; path search), and per two idle frames (the baseline)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    out: dict[str, list[float]] = {"idle": [], "split pair": [], "path search": []}
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(page_path.as_uri(), wait_until="load", timeout=300_000)
        page.wait_for_function("() => document.documentElement.dataset.ready === '1'", timeout=300_000)
        for _ in range(repeats):
            out["idle"].append(page.evaluate(_FILTER, ["pair", None]) / 1000)
            for value in ("train~val", ""):
                out["split pair"].append(page.evaluate(_FILTER, ["pair", value]) / 1000)
            for value in ("00017", ""):
                out["path search"].append(page.evaluate(_FILTER, ["q", value]) / 1000)
        browser.close()
    return out


def _range(values: list[float]) -> str:
    return f"{1000 * min(values):6.1f} .. {1000 * max(values):6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--findings", type=int, default=2000)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--repeats", type=int, default=5, help="page loads of each kind; filter changes each way")
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
    bare_path = root / "review-noscript.html"
    bare_path.write_text(page[:page.rindex("<script>")] + "</body></html>\n", encoding="utf-8")
    runs: dict[str, list[tuple[float, float, float]]] = {"lazy": [], "eager": [], "bare": []}
    for _ in range(args.repeats):  # interleaved, so load on the machine hits each page alike
        for name, path in (("lazy", out), ("eager", eager_path), ("bare", bare_path)):
            seen = browser_seconds(path)
            if seen is None:
                print("browser   skipped: Playwright is not installed", file=sys.stderr)
                return
            runs[name].append(seen)

    def span(name: str, k: int) -> str:
        values = [r[k] for r in runs[name]]
        return f"{min(values):5.2f} .. {max(values):5.2f} s"

    def ratio(a: str, b: str, k: int) -> float:
        return sorted(x[k] for x in runs[a])[len(runs[a]) // 2] / sorted(x[k] for x in runs[b])[len(runs[b]) // 2]

    print(f"browser   first paint:       {span('lazy', 0)}; without the filter script {span('bare', 0)} "
          f"(median ratio {ratio('lazy', 'bare', 0):.2f}x)")
    print(f"browser   first image shown: {span('lazy', 1)} lazy; {span('eager', 1)} eager "
          f"(median ratio {ratio('lazy', 'eager', 1):.2f}x)")
    print(f"browser   load event:        {span('lazy', 2)} lazy; {span('eager', 2)} eager "
          f"(median ratio {ratio('lazy', 'eager', 2):.2f}x)")
    times = filter_seconds(out, args.repeats)
    assert times is not None
    idle = sum(times["idle"]) / len(times["idle"])
    for what in ("split pair", "path search"):
        mean = sum(times[what]) / len(times[what])
        print(f"filter    {what + ':':<27}{_range(times[what])} over {len(times[what])} changes "
              f"({mean / idle:.1f}x two idle frames, {_range(times['idle'])})")


if __name__ == "__main__":
    main()
