"""The review page at scale (issue 27): filters, counts, lazy images, verdict commands, member
order, aligned heatmaps, evidence lines, group thumbnails, point evidence and the overview's
near misses, each checked in a real Chromium (the `browser` fixture of test_html.py)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck.report.model import Finding, Link, Member, Pair, Report
from pytest_leakcheck.render.html import render as render_html
from pytest_leakcheck.render.html.images import find_alignment, heatmap
from pytest_leakcheck.testing import photo

from .test_html import browser  # noqa: F401  (the shared Chromium fixture)

KINDS_AND_PAIRS = (("identical-file", "train", "test", "error"), ("near-duplicate", "train", "test", "error"),
                   ("near-duplicate", "train", "val", "error"), ("near-duplicate", "train", "train", "warning"))


def _image(path: str) -> Image.Image:
    """A picture per file name; ``crop_`` files are a zoomed-in crop of the picture they name."""
    seed = int(re.sub(r"\D", "", path.split("/")[-1]) or 0)
    base = photo(seed % 97, (256, 192))
    if "crop_" in path:
        return base.crop((30, 20, 226, 167)).resize((128, 96))
    base.thumbnail((128, 128))
    return base


def _copy(n: int, kind: str, first: str, second: str, severity: str, status: str = "new",
          detector: str = "phash") -> Finding:
    a, b = f"{first}/img_{n}.jpg", f"{second}/{'crop_' if detector == 'aligned' else 'img_'}{n}.jpg"
    if first == second:
        b = f"{second}/dup_{n}.jpg"
    value = 0.9 if detector == "aligned" else 2.0
    link = Link(a, detector, value)
    members = (Member(a, first, f"{n:064x}"), Member(b, second, f"{n + 1:064x}", link))
    # The pair as the search found it: the later file first, as happens for half of them.
    pair = Pair(b, a, detector, value, signals={"thumbnail_cosine": 0.99, "phash_distance": 2})
    return Finding(f"{n:012x}", kind, severity, members, pairs=(pair,), strength=0.9, status=status)


def _many(n: int) -> Report:
    out = []
    for i in range(n):
        kind, first, second, severity = KINDS_AND_PAIRS[i % len(KINDS_AND_PAIRS)]
        out.append(_copy(i, kind, first, second, severity, "known" if i % 5 == 0 else "new"))
    return Report("p", tuple(out))


def _open(browser, page_html: str, tmp_path: Path, name: str = "review.html", height: int = 900):  # noqa: F811
    out = tmp_path / name
    out.write_text(page_html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1200, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(out.as_uri())
    page.wait_for_function("() => document.documentElement.dataset.ready === '1'")
    return page, errors


def _keep(shot: Path) -> None:
    keep = os.environ.get("LEAKCHECK_SCREENSHOT_DIR")
    if keep:  # for a person to look at; tests never write outside tmp_path otherwise
        shutil.copyfile(shot, Path(keep) / shot.name)


def _visible_ids(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('article.finding')]"
                         ".filter(a => !a.hidden).map(a => a.dataset.id)")


def test_filters_narrow_the_cards_and_every_count_follows(browser, tmp_path: Path) -> None:  # noqa: F811
    report = _many(40)
    page, errors = _open(browser, render_html(report, loader=_image), tmp_path)
    assert page.inner_text("#shown") == "40 of 40 shown"
    page.select_option("select[name=kind]", "near-duplicate")
    page.select_option("select[name=pair]", "train~val")
    want = [f.id for f in report.findings if f.kind == "near-duplicate" and f.split_pair == "train~val"]
    assert sorted(_visible_ids(page)) == sorted(want) and len(want) == 10
    assert page.inner_text("#shown") == "10 of 40 shown"
    # Headings and navigation count what is shown; empty groups disappear.
    headings = page.evaluate("() => [...document.querySelectorAll('section.group')].filter(s => !s.hidden)"
                             ".map(s => s.querySelector('h2').innerText)")
    assert headings == ["near-duplicate · train~val (10)"]
    # Each menu says how many findings each choice would show, given the other filters.
    kinds = page.evaluate("() => [...document.querySelector('select[name=kind]').options].map(o => o.text)")
    assert kinds == ["all (10)", "identical-file (0)", "near-duplicate (10)"]
    page.select_option("select[name=status]", "known")
    want = [f.id for f in report.findings if f.kind == "near-duplicate" and f.split_pair == "train~val"
            and f.status == "known"]
    assert sorted(_visible_ids(page)) == sorted(want) and want
    page.select_option("select[name=status]", "")
    page.select_option("select[name=severity]", "warning")
    assert _visible_ids(page) == []
    assert page.inner_text("#shown") == "0 of 40 shown"
    assert errors == []
    page.close()


def test_path_search_finds_a_file_by_part_of_its_name(browser, tmp_path: Path) -> None:  # noqa: F811
    report = _many(40)
    page, errors = _open(browser, render_html(report, loader=_image), tmp_path)
    page.fill("input[name=q]", "DUP_1")  # case does not matter
    page.wait_for_function("() => document.getElementById('shown').textContent.startsWith('3 of')")
    want = {f.id for f in report.findings if any("dup_1" in m.path for m in f.members)}
    assert set(_visible_ids(page)) == want and len(want) == 3  # dup_11, dup_15... only those with dup_1*
    assert errors == []
    page.close()


def test_verdict_commands_follow_the_filters_and_copy_in_one_go(browser, tmp_path: Path) -> None:  # noqa: F811
    report = _many(24)
    page, errors = _open(browser, render_html(report, loader=_image), tmp_path)
    page.select_option("select[name=pair]", "train")
    page.click("#verdicts summary")
    page.select_option("#verdict", "duplicate")
    text = page.input_value("#commands")
    want = [f.id for f in report.findings if f.split_pair == "train"]
    assert text == "".join(f'leakcheck judge {i} duplicate --reason "..."\n' for i in _visible_ids(page))
    assert sorted(re.findall(r"judge (\w+)", text)) == sorted(want)
    page.click("#copy")
    page.wait_for_function("() => document.getElementById('copied').textContent !== ''")
    assert page.inner_text("#copied") == f"copied {len(want)} commands"
    shot = tmp_path / "review-filtered.png"
    page.screenshot(path=str(shot))
    _keep(shot)
    assert errors == []
    page.close()


def test_images_load_only_as_they_come_into_view(browser, tmp_path: Path) -> None:  # noqa: F811
    report = _many(60)
    page, _ = _open(browser, render_html(report, loader=_image), tmp_path, height=700)
    page.wait_for_timeout(300)
    loaded = "() => [...document.images].filter(i => i.complete && i.naturalWidth > 0).length"
    total = page.evaluate("() => document.images.length")
    first = page.evaluate(loaded)
    assert 0 < first < total / 3
    last = page.locator("article.finding").last
    last.scroll_into_view_if_needed()
    page.wait_for_function("() => [...document.querySelectorAll('article.finding')].pop()"
                           ".querySelectorAll('img').length === 3 && [...[...document.querySelectorAll("
                           "'article.finding')].pop().querySelectorAll('img')].every(i => i.complete && "
                           "i.naturalWidth > 0)")
    assert page.evaluate(loaded) < total  # the middle of the page was never decoded
    page.close()


def test_every_card_shows_its_files_in_split_order(browser, tmp_path: Path) -> None:  # noqa: F811
    """The pair was found test-first; the card still shows train, then test (turned), then the heatmap."""
    report = _many(12)
    page, _ = _open(browser, render_html(report, loader=_image), tmp_path)
    captions = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('article.finding')].map("
                             "a => [a.dataset.id, [...a.querySelectorAll('figcaption')].map(c => c.textContent)]))")
    assert set(captions) == {f.id for f in report.findings}
    for f in report.findings:
        caps = captions[f.id]
        assert [caps[0], caps[1]] == [f.members[0].path, f.members[1].path], caps
        assert caps[2].startswith("difference")
    page.close()


def test_aligned_heatmap_is_computed_after_the_alignment(browser, tmp_path: Path) -> None:  # noqa: F811
    """A zoomed crop, matched by `aligned`: the page re-finds the zoom and shift, and its
    heatmap is cold where the unaligned one is hot."""
    a, b = _image("train/img_7.jpg"), _image("test/crop_7.jpg")
    align = find_alignment(b, a)
    assert align.zoom < 1.0  # the crop, shown at the same size, is zoomed out to lie on the original
    aligned = np.asarray(heatmap(b, a, align), dtype=np.float32)
    plain = np.asarray(heatmap(b, a), dtype=np.float32)
    covered = ~np.all(aligned == (40, 60, 110), axis=-1)
    assert aligned[covered].mean() * 2 < plain.mean()
    report = Report("p", (_copy(7, "near-duplicate", "train", "test", "error", detector="aligned"),))
    page, errors = _open(browser, render_html(report, loader=_image), tmp_path)
    caption = page.inner_text("article.finding figcaption >> nth=2")
    assert caption.startswith(f"difference after zoom {align.zoom:g}")
    page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
    shot = tmp_path / "review-aligned.png"
    page.locator("article.finding").screenshot(path=str(shot))
    _keep(shot)
    assert errors == []
    page.close()


def test_one_evidence_line_per_link_agrees_with_the_link(browser, tmp_path: Path) -> None:  # noqa: F811
    """The card says how each member joined, by the link's detector; no other detector line."""
    a, b, c = "train/img_1.jpg", "test/img_1.jpg", "test/img_2.jpg"
    members = (Member(a, "train"), Member(b, "test", link=Link(a, "phash", 4)),
               Member(c, "test", link=Link(b, "aligned", 0.91, "hflip")))
    pairs = (Pair(a, b, "thumbnail", 0.9918, signals={"phash_distance": 4, "thumbnail_cosine": 0.9918}),
             Pair(c, b, "aligned", 0.91, "hflip", {"phash_distance": 12}))
    f = Finding("00000000000f", "near-duplicate", "error", members, pairs=pairs, strength=0.99)
    page, errors = _open(browser, render_html(Report("p", (f,)), loader=_image), tmp_path)
    lines = page.evaluate("() => [...document.querySelectorAll('ul.evidence li')].map(l => l.innerText)")
    assert lines == [f"{b} linked by phash 4 to {a}; thumbnail cosine 0.9918",
                     f"{c} linked by aligned 0.91 after hflip to {b}; phash distance 12"]
    assert "thumbnail = " not in page.inner_text("body")
    page.close()


def test_group_split_card_shows_thumbnails_in_split_order(browser, tmp_path: Path) -> None:  # noqa: F811
    members = (Member("train/part_3.jpg", "train"), Member("train/part_4.jpg", "train"),
               Member("test/part_5.jpg", "test"))
    f = Finding("0000000000g1", "group-split", "error", members, message="group 'part' has files in 2 splits")
    page, errors = _open(browser, render_html(Report("p", (f,)), loader=_image), tmp_path)
    page.wait_for_function("() => document.images.length === 3 && "
                           "[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    caps = page.evaluate("() => [...document.querySelectorAll('figcaption')].map(c => c.innerText)")
    assert caps == ["train: train/part_3.jpg", "train: train/part_4.jpg", "test: test/part_5.jpg"]
    assert errors == []
    page.close()


def test_point_evidence_is_drawn_between_the_images(browser, tmp_path: Path) -> None:  # noqa: F811
    a, b = "train/img_3.jpg", "test/img_3.jpg"
    points = ((0.25, 0.5, 0.25, 0.5), (0.75, 0.25, 0.75, 0.25))
    members = (Member(a, "train"), Member(b, "test", link=Link(a, "same-scene", 40)))
    f = Finding("0000000000p1", "near-duplicate", "error", members,
                pairs=(Pair(a, b, "same-scene", 40, points=points),))
    page, errors = _open(browser, render_html(Report("p", (f,)), loader=_image), tmp_path)
    geometry = page.evaluate("""() => {
        const imgs = [...document.querySelectorAll('article img')].map(i => i.getBoundingClientRect());
        const lines = [...document.querySelectorAll('svg.points line')].map(l => l.getBoundingClientRect());
        return {imgs: imgs.map(r => [r.left, r.right, r.top, r.bottom]),
                lines: lines.map(r => [r.left, r.right, r.top, r.bottom])};
    }""")
    (l1, r1, t1, b1), (l2, r2, _, _) = geometry["imgs"][:2]
    assert len(geometry["lines"]) == 2
    for left, right, top, bottom in geometry["lines"]:
        assert l1 <= left <= r1 and l2 <= right <= r2 and t1 <= top <= bottom <= b1
    assert errors == []
    page.close()


def test_overview_shows_the_nearest_misses_beyond_the_level(browser, tmp_path: Path) -> None:  # noqa: F811
    report = Report("p", _many(8).findings, stats={
        "near_misses": {"phash": {"values": [9, 9, 10, 11, 12, 12], "level": 8, "lower_is_stronger": True}}})
    page, errors = _open(browser, render_html(report, loader=_image, thresholds={"phash": (8.0, True)}), tmp_path)
    chart = page.evaluate("""() => {
        const s = document.querySelector('svg.chart.scores[data-detector=phash]');
        const edge = r => [r.x.baseVal.value, r.x.baseVal.value + r.width.baseVal.value];
        return {line: s.querySelector('line.threshold').x1.baseVal.value,
                hit: [...s.querySelectorAll('rect.bin:not(.miss)')].map(edge),
                miss: [...s.querySelectorAll('rect.bin.miss')].map(edge)};
    }""")
    assert chart["hit"] and chart["miss"]
    assert all(right <= chart["line"] + 0.01 for _, right in chart["hit"])
    assert all(left >= chart["line"] - 0.01 for left, _ in chart["miss"])
    caption = page.inner_text("figure.hist figcaption")
    assert "6 nearest pairs that did not match" in caption and "the nearest miss scores 9" in caption
    shot = tmp_path / "review-overview.png"
    page.locator("section.overview").screenshot(path=str(shot))
    _keep(shot)
    assert errors == []
    page.close()


def test_only_the_pages_own_script_runs(browser, tmp_path: Path) -> None:  # noqa: F811
    """The policy names the filter script by its hash: it runs, and a script that reached the
    page any other way (here inserted on purpose, as escaping never lets one) is blocked."""
    page_html = render_html(_many(4), loader=_image)
    injected = page_html.replace("<h1>", "<script>window.__pwned = 1</script><h1>", 1)
    page, errors = _open(browser, injected, tmp_path)  # waits for the filter script's ready mark
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert any("Content Security Policy" in e for e in errors), errors
    page.close()
