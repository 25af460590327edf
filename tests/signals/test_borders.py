"""Uniform borders are removed before signatures are computed (issue 12).

Portrait photos pillar-boxed in a landscape canvas, letterboxed frames and
scanned pages with margins look alike to a 16 px thumbnail whatever they
show; signatures must describe the content.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageEnhance

from pytest_leakcheck import check
from pytest_leakcheck.signals import decode
from pytest_leakcheck.testing import jpeg_quality, photo, save


def padded(img: Image.Image, canvas: tuple[int, int], colour: tuple[int, int, int],
           at: tuple[int, int] | None = None) -> Image.Image:
    out = Image.new("RGB", canvas, colour)
    out.paste(img, at or ((canvas[0] - img.width) // 2, (canvas[1] - img.height) // 2))
    return out


def soft(seed: int, size: tuple[int, int]) -> Image.Image:
    """A photo at half contrast: real photographs vary less than the test generator's."""
    return ImageEnhance.Contrast(photo(seed, size)).enhance(0.5)


def _near(box: tuple[int, int, int, int] | None, want: tuple[int, int, int, int], slack: int) -> bool:
    return box is not None and all(abs(a - b) <= slack for a, b in zip(box, want))


@pytest.mark.parametrize(("img", "want"), [
    (padded(photo(1, (90, 160)), (284, 160), (255, 255, 255)), (97, 0, 187, 160)),  # pillar-boxed, white
    (padded(photo(2, (240, 100)), (240, 180), (0, 0, 0)), (0, 40, 240, 140)),  # letterboxed, black
    (padded(photo(3, (200, 140)), (240, 180), (40, 90, 160)), (20, 20, 220, 160)),  # a blue frame
    (padded(photo(4, (180, 150)), (240, 180), (200, 200, 190), at=(0, 0)), (0, 0, 180, 150)),  # margins
], ids=["pillarbox", "letterbox", "frame", "scanner-margins"])
def test_uniform_borders_are_found_through_jpeg_noise(img: Image.Image, want: tuple[int, int, int, int]) -> None:
    """Any colour, any edge, after a JPEG round trip: the box is the content, give or take ringing."""
    assert _near(decode.content_box(jpeg_quality(img, 75)), want, slack=4)


def test_large_images_are_searched_reduced() -> None:
    """A full-size (not draft-decoded) image is probed small; the box is mapped back."""
    img = jpeg_quality(padded(photo(6, (500, 800)), (1600, 900), (255, 255, 255)), 80)
    assert _near(decode.content_box(img), (550, 50, 1050, 850), slack=16)


@pytest.mark.parametrize("img", [
    Image.new("RGB", (100, 80), (30, 30, 30)),  # all uniform: stays as it is
    padded(photo(5, (30, 80)), (200, 80), (255, 255, 255)),  # would leave a sliver
    jpeg_quality(photo(7), 60),  # a photo with no border
], ids=["uniform", "sliver", "photo"])
def test_nothing_is_cropped_to_nothing_or_a_sliver(img: Image.Image) -> None:
    assert decode.content_box(img) is None


def _plain(seed: int, size: tuple[int, int], colour: tuple[int, int, int], spread: int) -> Image.Image:
    """Open water or a steel sheet: one colour with a little texture, in every line up to the edges."""
    import numpy as np

    rng = np.random.default_rng(seed)
    base = np.array(colour, np.int16) + rng.integers(-spread, spread + 1, (size[1], size[0], 1))
    base[size[1] // 3:size[1] // 3 + 12, size[0] // 4:size[0] // 4 + 30] += 40  # a small feature inside
    return Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))


@pytest.mark.parametrize("img", [
    _plain(1, (64, 64), (40, 70, 90), 6),  # EuroSAT-like water
    _plain(2, (128, 96), (128, 128, 128), 5),  # a grey steel sheet
], ids=["water", "steel"])
def test_a_plain_picture_is_not_its_own_border(img: Image.Image) -> None:
    """An edge in the colour of what it would frame is the picture: open water once kept an 8x10 px
    corner of a 32 px decode, cut otherwise in its re-encoded copy (held out: EuroSAT, NEU-DET)."""
    assert decode.content_box(jpeg_quality(img, 90), own_colour=True) is None


def test_a_border_in_the_pictures_own_colour_is_kept_only_where_it_differs() -> None:
    """White padding around a dark photo is trimmed; the same white around a white page is not, in a
    small picture. A large page keeps its trim: a receipt padded to a square with white must be cut
    back to its text, as its original is, or the copy is lost."""
    from pytest_leakcheck.testing import receipt

    dark = padded(ImageEnhance.Brightness(photo(8, (120, 150))).enhance(0.5), (240, 150), (255, 255, 255))
    assert _near(decode.content_box(jpeg_quality(dark, 85), own_colour=True), (60, 0, 180, 150), slack=4)
    page = padded(Image.new("RGB", (120, 150), (250, 250, 250)), (240, 150), (255, 255, 255))
    assert decode.content_box(jpeg_quality(page, 85), own_colour=True) is None
    page = receipt(0, 7)
    square = padded(page, (800, 800), (255, 255, 255))
    small = (decode.content_box(page.resize((120, 200))), decode.content_box(square.resize((200, 200))))
    assert all(box is not None for box in small)


def test_the_decode_path_fingerprint_names_the_trim() -> None:
    """Stores signed before border removal recompute: the path is part of every fingerprint."""
    assert "trim" in decode.DECODE_PATH


def _padded_dataset(root: Path) -> None:
    """24 distinct photos, each pillar-boxed or letterboxed, half in train, half in test."""
    for k in range(24):
        if k % 3 == 0:
            img = padded(soft(7000 + k, (90, 160)), (284, 160), (255, 255, 255))
        elif k % 3 == 1:
            img = padded(soft(7000 + k, (90, 160)), (284, 160), (0, 0, 0))
        else:
            img = padded(soft(7000 + k, (240, 100)), (240, 180), (0, 0, 0))
        save(img, root / ("train" if k % 2 else "test") / f"pad_{k:02d}.jpg", quality=90)
    (root / "leakcheck.yaml").write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")


def test_padded_distinct_photos_do_not_chain(tmp_path: Path) -> None:
    """Before border removal these chained into three error clusters of 5 to 8
    unrelated photos (thumbnail cosine >= 0.96 at pHash distances of 18 to 34)."""
    _padded_dataset(tmp_path)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert [f for f in report.findings if f.is_copy] == []


def test_a_padded_copy_is_still_a_copy(tmp_path: Path) -> None:
    """The same photo pillar-boxed, letterboxed or framed is found as a copy of the
    unpadded one; pixel digests stay on the whole image, so it is not identical-pixels."""
    portrait, landscape = soft(11, (120, 160)), soft(12, (240, 135))
    save(portrait, tmp_path / "train/portrait.png")
    save(landscape, tmp_path / "train/landscape.jpg", quality=92)
    save(padded(portrait, (284, 160), (255, 255, 255)), tmp_path / "test/portrait_pillarbox.png")
    save(padded(portrait, (180, 220), (90, 40, 40)), tmp_path / "test/portrait_framed.jpg", quality=90)
    save(padded(landscape, (240, 200), (0, 0, 0)), tmp_path / "test/landscape_letterbox.jpg", quality=90)
    for k in range(8):
        save(soft(40 + k, (160, 120)), tmp_path / f"train/other_{k}.jpg", quality=92)
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits:\n  train: [train/**]\n  test: [test/**]\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    clusters = {frozenset(m.path for m in f.members): f for f in report.findings if f.is_copy}
    assert set(clusters) == {
        frozenset({"train/portrait.png", "test/portrait_pillarbox.png", "test/portrait_framed.jpg"}),
        frozenset({"train/landscape.jpg", "test/landscape_letterbox.jpg"}),
    }
    assert all(f.kind == "near-duplicate" and f.severity == "error" for f in clusters.values())


def test_a_page_padded_to_a_square_with_white_is_a_copy(tmp_path: Path) -> None:
    """Roboflow's "fit (white edges)": a receipt padded to a square is its original, an error."""
    from pytest_leakcheck.testing import receipt

    page = receipt(0, 7)
    save(page, tmp_path / "train/r.jpg", quality=90)
    save(padded(page, (800, 800), (255, 255, 255)), tmp_path / "test/r_square.jpg", quality=90)
    for k in range(12):
        save(receipt(k % 3 + 1, 50 + k), tmp_path / f"{'train' if k % 4 else 'test'}/o{k}.jpg", quality=90)
    for k in range(20):
        save(photo(300 + k), tmp_path / f"{'train' if k % 4 else 'test'}/p{k}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    errors = [sorted(m.path for m in f.members) for f in report.findings if f.severity == "error"]
    assert ["test/r_square.jpg", "train/r.jpg"] in errors, errors


def _every_line_depth(lines: np.ndarray) -> int:
    """The border depth by testing every line: what ``decode._border_depth`` must equal."""
    colour = np.median(lines[0], axis=0).astype(np.int16)
    far = np.abs(lines - colour).max(axis=2)
    close = (far <= decode.BORDER_TOLERANCE).mean(axis=1) >= decode.BORDER_SHARE
    return len(close) if close.all() else int(np.argmin(close))


@pytest.mark.parametrize("depth", [0, 1, 7, 8, 9, 23, 24, 25, 60, 127, 128])
def test_border_depth_stops_at_the_first_content_line_and_equals_every_line_tested(
        depth: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The depth is found testing lines block by block from the edge (cheaper than every line, the
    signing of ``cells`` in benchmarks/field.py), and it is the depth every line tested gives, at
    and around each block's end; lines beyond the first block that ends in content are not tested."""
    rng = np.random.default_rng(depth)
    lines = rng.integers(0, 256, (128, 96, 3)).astype(np.int16)  # content: no line is uniform
    lines[:depth] = np.array([200, 30, 90]) + rng.integers(-6, 7, (depth, 96, 3))  # a noisy border
    lines[:depth, :2] = 0  # a few stray pixels, within BORDER_SHARE
    seen: list[int] = []
    uniform = decode._uniform
    monkeypatch.setattr(decode, "_uniform", lambda x, c: seen.append(len(x)) or uniform(x, c))
    assert decode._border_depth(lines) == _every_line_depth(lines) == depth
    assert sum(seen) <= 2 * depth + decode.DEPTH_BLOCK or depth == len(lines)
