"""The HTML review report: self-contained, oriented, escaped; and it renders in a real browser."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck import EXIT_LEAKS, check
from pytest_leakcheck.cli import main
from pytest_leakcheck.report.model import Finding, Member, Pair, Report
from pytest_leakcheck.render._page import SCRIPT
from pytest_leakcheck.render.html import groups, heatmap
from pytest_leakcheck.render.html import render as render_html
from pytest_leakcheck.testing import brighter, photo, save

from ..conftest import write_policy

#: File names that would run script if they reached the page unescaped.
HOSTILE = (
    "<script>window.__pwned=1</script>.jpg",  # the "/" makes a folder: still one path
    '" onmouseover="window.__pwned=2" x=".jpg',
    "<img src=x onerror=window.__pwned=3>.jpg",
)
EXAMPLE_POLICY = Path(__file__).resolve().parents[2] / "examples" / "leakcheck.yaml"


@pytest.fixture
def review_dataset(tmp_path: Path) -> Path:
    """Six train images; in test a byte copy, a flipped copy, a brighter copy and hostile names."""
    data = tmp_path / "data"
    for i in range(6):
        save(photo(i), data / f"train/img_{i}.jpg", quality=90)
    save(photo(50), data / "test/distinct.jpg", quality=90)
    shutil.copyfile(data / "train/img_0.jpg", data / "test/copy.jpg")
    save(photo(1).transpose(Image.Transpose.FLIP_LEFT_RIGHT), data / "test/hflip.jpg", quality=90)
    save(brighter(photo(2), 1.2), data / "test/brighter.jpg", quality=90)
    for n, name in enumerate(HOSTILE):
        save(photo(3 + n), data / "test" / name, quality=85)
    write_policy(data)
    return data


def _articles(page: str) -> dict[str, str]:
    return dict(re.findall(r'<article [^>]*\bid="f-([0-9a-f]+)"[^>]*>(.*?)</article>', page, re.S))


def _decode(uri: str) -> np.ndarray:
    data = base64.b64decode(uri.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("L").resize((32, 32)), dtype=np.float32)


def _render(root: Path) -> tuple[Report, str]:
    report = check(root / "leakcheck.yaml", use_cache=False)
    return report, render_html(report, root=root)


def test_hostile_file_names_are_escaped(review_dataset: Path) -> None:
    """Markup in a file name reaches the page as text, never as a tag or an attribute."""
    report, page = _render(review_dataset)
    hostile = [f for f in report.findings if any("__pwned" in m.path for m in f.members)]
    assert len(hostile) == len(HOSTILE)
    assert "__pwned=1</script>" not in page
    assert "<img src=x" not in page
    assert 'onmouseover="window' not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;.jpg" in page
    assert "&quot; onmouseover=&quot;window.__pwned=2&quot;" in page
    # The one script is the page's own, at the end, and the policy admits no other.
    assert page.count("<script") == 1 and f"<script>{SCRIPT}</script></body>" in page


def test_page_is_self_contained_lazy_and_runs_only_its_own_script(review_dataset: Path) -> None:
    """Images are lazy data URIs, nothing is fetched, and the CSP admits the page's one script by its hash."""
    _, page = _render(review_dataset)
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    assert "default-src 'none'" in csp and f"script-src 'sha256-{digest}'" in csp
    assert "unsafe-inline" not in csp.split("script-src", 1)[1] and "unsafe-eval" not in csp
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert scripts == [SCRIPT]
    refs = re.findall(r'\b(?:src|href)="([^"]*)"', page)
    assert refs and all(r.startswith(("data:image/jpeg;base64,", "#g-")) for r in refs)
    imgs = re.findall(r"<img [^>]*>", page)
    assert imgs and all('loading="lazy"' in tag for tag in imgs)


def test_later_image_has_the_matched_orientation(review_dataset: Path) -> None:
    """The flipped copy (in test) is shown flipped back beside its train original, so both look alike."""
    report, page = _render(review_dataset)
    finding = next(f for f in report.findings if any(m.path == "test/hflip.jpg" for m in f.members))
    assert finding.pairs[0].orientation == "hflip"
    first, second, _heat = re.findall(r' src="([^"]+)"', _articles(page)[finding.id])
    a, b = _decode(first), _decode(second)
    aligned = np.abs(a - b).mean()
    assert aligned * 3 < np.abs(a[:, ::-1] - b).mean()
    assert "<figcaption>test/hflip.jpg after hflip</figcaption>" in page


def test_heatmap_is_cold_where_images_agree() -> None:
    """Same picture: black; brighter copy: nearly black; different pictures: hot."""
    img = photo(0)
    same = np.asarray(heatmap(img, img))
    bright = np.asarray(heatmap(img, brighter(img, 1.3)), dtype=np.float32)
    other = np.asarray(heatmap(img, photo(1)), dtype=np.float32)
    assert same.max() == 0
    assert bright.mean() * 4 < other.mean()


def _finding(fid: str, kind: str, splits: tuple[str, str], strength: float,
             severity: str = "error") -> Finding:
    members = (Member(f"{splits[0]}/x.jpg", splits[0], "a" * 64),
               Member(f"{splits[1]}/y.jpg", splits[1], "b" * 64))
    pair = Pair(members[0].path, members[1].path, "phash", 2.0)
    return Finding(fid, kind, severity, members, pairs=(pair,), strength=strength)


def test_groups_by_kind_and_split_pair_strongest_first() -> None:
    """Groups follow the kind order, error groups first, then split pair; rows by strength."""
    report = Report("p", (
        _finding("000000000001", "near-duplicate", ("train", "test"), 0.90),
        _finding("000000000002", "near-duplicate", ("train", "test"), 0.97),
        _finding("000000000003", "identical-file", ("val", "test"), 1.0),
        _finding("000000000004", "near-duplicate", ("train", "val"), 0.95),
        _finding("000000000005", "identical-file", ("train", "test"), 1.0),
        _finding("000000000006", "near-duplicate", ("train", "train"), 0.99, "warning"),
    ))
    got = [(kind, pair, [f.id[-1] for f in fs]) for kind, pair, fs in groups(report)]
    assert got == [
        ("identical-file", "train~test", ["5"]),
        ("identical-file", "val~test", ["3"]),
        ("near-duplicate", "train~test", ["2", "1"]),
        ("near-duplicate", "train~val", ["4"]),
        ("near-duplicate", "train", ["6"]),
    ]


def test_unloadable_image_shows_a_placeholder() -> None:
    """When an image cannot be read the row says so instead of showing a broken image."""
    report = Report("p", (_finding("0000000000aa", "near-duplicate", ("train", "test"), 0.9),))
    page = render_html(report, loader=lambda path: None)
    row = _articles(page)["0000000000aa"]
    assert "<img" not in row and row.count("image unavailable") == 2


def test_report_command_writes_one_page_with_every_finding(review_dataset: Path, tmp_path: Path) -> None:
    """`leakcheck report --html` writes every finding id and its judge command, exit 1 on leaks."""
    out = tmp_path / "out/review.html"
    code = main(["report", "--html", str(out), "--policy", str(review_dataset / "leakcheck.yaml"),
                 "--no-cache"])
    assert code == EXIT_LEAKS
    page = out.read_text(encoding="utf-8")
    report = check(review_dataset / "leakcheck.yaml", use_cache=False)
    assert sorted(_articles(page)) == sorted(f.id for f in report.findings)
    for f in report.findings:
        assert f"leakcheck judge {f.id} distinct --reason &quot;...&quot;" in page


# --------------------------------------------------------------------------
# A real browser

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _chromium() -> str | None:
    """LEAKCHECK_CHROMIUM when set (even to a missing file), else the first one installed."""
    if "LEAKCHECK_CHROMIUM" in os.environ:
        candidates = [os.environ["LEAKCHECK_CHROMIUM"]]
    else:
        candidates = [shutil.which("chromium"), shutil.which("chromium-browser"),
                      shutil.which("google-chrome"), "/usr/bin/chromium"]
    return next((c for c in candidates if c and Path(c).is_file()), None)


def _no_browser(reason: str) -> None:
    # CI sets LEAKCHECK_REQUIRE_BROWSER=1 so that a missing browser fails instead of hiding.
    if os.environ.get("LEAKCHECK_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + " (LEAKCHECK_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium driven by Playwright; skipped when either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("Playwright is not installed (pip install -e '.[test]')")
    exe = _chromium()
    if exe is None:
        _no_browser("no Chromium found: install Debian's `chromium` package or set LEAKCHECK_CHROMIUM")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def _review_in_browser(browser, policy: Path, tmp_path: Path) -> dict:
    """Write the report, scroll every row into view; natural widths per finding id and more."""
    out = tmp_path / "review.html"
    main(["report", "--html", str(out), "--policy", str(policy), "--no-cache"])
    page = browser.new_page(viewport={"width": 1000, "height": 500})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(out.as_uri())
    rows = page.locator("article.finding")
    for i in range(rows.count()):
        rows.nth(i).scroll_into_view_if_needed()
    page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)",
                           timeout=15_000)
    widths = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('article.finding')].map("
        "a => [a.id.slice(2), [...a.querySelectorAll('img')].map(i => i.naturalWidth)]))")
    shot = tmp_path / "review.png"
    page.screenshot(path=str(shot), full_page=True)
    pwned = page.evaluate("typeof window.__pwned")
    text = page.inner_text("body")
    page.close()
    return {"widths": widths, "shot": shot, "pwned": pwned,
            "text": text, "errors": errors}


def _assert_rendered(seen: dict, report: Report) -> None:
    clusters = [f for f in report.findings if f.pairs]
    assert set(seen["widths"]) == {f.id for f in report.findings}
    for f in clusters:
        assert len(seen["widths"][f.id]) == 3 and all(w > 0 for w in seen["widths"][f.id]), f.id
    assert seen["errors"] == []
    assert seen["shot"].stat().st_size > 10_000


def test_browser_renders_every_image_and_runs_no_file_name(browser, review_dataset: Path,
                                                           tmp_path: Path) -> None:
    """In Chromium every finding's images load when scrolled to, and hostile names stay text."""
    seen = _review_in_browser(browser, review_dataset / "leakcheck.yaml", tmp_path)
    report = check(review_dataset / "leakcheck.yaml", use_cache=False)
    assert seen["pwned"] == "undefined"
    _assert_rendered(seen, report)
    for name in HOSTILE:
        assert f"test/{name}" in seen["text"]


@pytest.mark.skipif(not EXAMPLE_POLICY.is_file(), reason="no bundled example (examples/leakcheck.yaml)")
def test_browser_renders_the_bundled_example(browser, tmp_path: Path) -> None:
    """The report of the bundled example renders every finding's images in Chromium."""
    seen = _review_in_browser(browser, EXAMPLE_POLICY, tmp_path)
    report = check(EXAMPLE_POLICY, use_cache=False)
    assert report.findings
    _assert_rendered(seen, report)


# --------------------------------------------------------------------------
# The overview (issue 15)


def _scored(fid: str, detector: str, value: float, pair: tuple[str, str] = ("train", "test")) -> Finding:
    members = (Member(f"{pair[0]}/{fid}.jpg", pair[0]), Member(f"{pair[1]}/{fid}.jpg", pair[1]))
    return Finding(fid, "near-duplicate", "error", members, pairs=(Pair(members[0].path, members[1].path,
                                                                        detector, value),))


def test_overview_counts_pairs_and_kinds_and_draws_thresholds() -> None:
    report = Report("p", (
        _scored("000000000001", "phash", 2), _scored("000000000002", "phash", 8),
        _scored("000000000003", "thumbnail", 0.97, ("train", "val")),
        _finding("000000000004", "identical-file", ("train", "test"), 1.0),
    ))
    page = render_html(report, loader=lambda path: None,
                       thresholds={"phash": (8.0, True), "thumbnail": (0.95, False)})
    overview = page[page.index('<section class="overview"'):page.index("</section>")]
    assert "<script" not in overview
    table = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", overview[overview.index('<table class="counts"'):]))
    assert "split pair identical-file near-duplicate all train~test 1 2 3 train~val 1 1" in table
    assert "<rect class=\"bar\"" not in overview  # no chart repeating the table
    assert "phash: 3 matched pairs; a match needs at most 8; the weakest match scores 8" in overview
    assert "thumbnail: 1 matched pairs; a match needs at least 0.950" in overview
    assert overview.count('<line class="threshold"') == 2


def test_overview_is_absent_without_findings() -> None:
    page = render_html(Report("p", ()), loader=lambda path: None)
    assert 'class="overview"' not in page


def test_browser_draws_the_overview(browser, review_dataset: Path, tmp_path: Path) -> None:
    """In Chromium the overview's charts have size, every bar and bin is on the matching side of
    its threshold, no script runs and nothing is blocked; a screenshot is kept."""
    (review_dataset / "leakcheck.yaml").write_text(
        (review_dataset / "leakcheck.yaml").read_text()
        + "detectors:\n  thumbnail: {severity: error, min_cosine: 0.9}\n  aligned: {severity: off}\n")
    out = tmp_path / "review.html"
    main(["report", "--html", str(out), "--policy", str(review_dataset / "leakcheck.yaml"), "--no-cache"])
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(out.as_uri())
    box = page.locator("table.counts").bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 10
    charts = page.evaluate("""() => [...document.querySelectorAll('svg.chart.scores')].map(s => {
        const t = s.querySelector('line.threshold');
        return {name: s.dataset.detector, line: t ? t.x1.baseVal.value : null,
                bins: [...s.querySelectorAll('rect.bin')].map(r => [r.x.baseVal.value,
                        r.x.baseVal.value + r.width.baseVal.value]),
                shown: s.getBoundingClientRect().width};
    })""")
    by_name = {c["name"]: c for c in charts}
    assert {"phash", "thumbnail"} <= set(by_name)
    for c in charts:
        assert c["shown"] > 100 and c["bins"] and c["line"] is not None
    assert all(right <= by_name["phash"]["line"] + 0.01 for _, right in by_name["phash"]["bins"])
    assert all(left >= by_name["thumbnail"]["line"] - 0.01 for left, _ in by_name["thumbnail"]["bins"])
    assert errors == []
    shot = tmp_path / "overview.png"
    page.locator("section.overview").screenshot(path=str(shot))
    page.close()
    assert shot.stat().st_size > 5_000
    keep = os.environ.get("LEAKCHECK_SCREENSHOT_DIR")
    if keep:  # for a person to look at; tests never write outside tmp_path otherwise
        shutil.copyfile(shot, Path(keep) / "overview.png")
