"""turned-copy: a same-scene match that is one picture turned a few degrees (real OpenCV, real store)."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck import check
from pytest_leakcheck.detectors import turned_copy
from pytest_leakcheck.testing import photo, save, scene, view

# What `leakcheck init` writes for these detectors: same-scene warns, turned copies are errors.
POLICY = ("version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
          "detectors:\n  same_scene: {severity: warning}\n")


def _turned(img: Image.Image, degrees: float, keep: float = 0.9) -> Image.Image:
    """Roboflow's rotation augmentation: turned about the centre, then cropped to ``keep`` of each side."""
    w, h = img.size
    out = img.rotate(degrees, resample=Image.Resampling.BICUBIC)
    dx, dy = round(w * (1 - keep) / 2), round(h * (1 - keep) / 2)
    return out.crop((dx, dy, w - dx, h - dy)).resize((w, h), Image.Resampling.BICUBIC)


def _others(root: Path) -> None:
    for k in range(6):
        save(scene(300 + k).resize((640, 480)), root / f"{'test' if k % 3 == 0 else 'train'}/other_{k}.jpg",
             quality=90)


def _links(report) -> dict[frozenset[str], tuple[str, str, str]]:
    return {frozenset((p.a, p.b)): (p.detector, f.kind, f.severity) for f in report.findings for p in f.pairs}


@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A photo in train, the same photo turned 6 degrees and cropped in test, and unrelated photos."""
    root = tmp_path_factory.mktemp("turned")
    original = view(scene(7), 60, 40)
    save(original, root / "train/xray_12.jpg", quality=92)
    save(_turned(original, 6.0), root / "test/xray_12_aug.jpg", quality=88)
    _others(root)
    (root / "leakcheck.yaml").write_text(POLICY)
    return root


def test_a_copy_turned_a_few_degrees_fails_the_build(turned: Path) -> None:
    report = check(turned / "leakcheck.yaml", use_cache=False)
    pair = frozenset(("train/xray_12.jpg", "test/xray_12_aug.jpg"))
    assert _links(report)[pair] == ("turned-copy", "near-duplicate", "error")
    assert report.exit_code == 1
    stats = report.stats["turned_copy"]
    assert stats["copies"] == 1 and stats["judged"] >= 1
    value = next(p.value for f in report.findings for p in f.pairs if p.detector == "turned-copy")
    assert turned_copy.LEVEL <= value <= 1.0


def _sheared(img: Image.Image, degrees: float, shear: float) -> Image.Image:
    """Roboflow's shear augmentation after its rotation: an affine map no similarity explains."""
    w, h = img.size
    turned = img.rotate(degrees, resample=Image.Resampling.BICUBIC)
    # x' = x + shear * (y - h / 2): Pillow's AFFINE maps output to input pixels.
    return turned.transform((w, h), Image.Transform.AFFINE, (1, shear, -shear * h / 2, 0, 1, 0),
                            resample=Image.Resampling.BICUBIC)


def test_a_copy_sheared_as_well_as_turned_fails_the_build(tmp_path: Path) -> None:
    """An ultrasound export augmented by rotation and shear (a held-out probe): no similarity explains
    the copy's points, an affine map does, and the copy agrees in detail once mapped back."""
    original = view(scene(9), 60, 40)
    save(original, tmp_path / "train/scan_20a.jpg", quality=92)
    save(_sheared(original, 5.0, 0.18), tmp_path / "test/scan_20a_aug_3.jpg", quality=88)
    _others(tmp_path)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    pair = frozenset(("train/scan_20a.jpg", "test/scan_20a_aug_3.jpg"))
    assert _links(report)[pair] == ("turned-copy", "near-duplicate", "error"), _links(report)
    assert len(_links(report)) == 1  # the unrelated photos stay unlinked


def test_off_leaves_it_a_same_scene_warning(turned: Path, tmp_path: Path) -> None:
    """Without this detector the same pair is what same-scene alone says of it: a warning."""
    policy = tmp_path / "leakcheck.yaml"
    policy.write_text(POLICY.replace("detectors:\n", "detectors:\n  turned_copy: off\n"))
    from pytest_leakcheck.policy.load import load
    import dataclasses

    loaded = dataclasses.replace(load(policy), root=turned)
    report = check(policy=loaded, use_cache=False)
    pair = frozenset(("train/xray_12.jpg", "test/xray_12_aug.jpg"))
    assert _links(report)[pair] == ("same-scene", "same-scene", "warning")
    assert report.exit_code == 0


def test_a_template_with_other_content_stays_same_scene(tmp_path: Path) -> None:
    """One page layout turned 4 degrees, half of its content other: its keypoints on the shared half
    line up by a turn, but the detail of the rest disagrees (an invoice template with other figures)."""
    page = view(scene(11), 60, 40)
    other = page.copy()
    other.paste(view(scene(12), 60, 40).crop((0, 240, 640, 480)), (0, 240))
    save(page, tmp_path / "train/invoice_1.jpg", quality=92)
    save(_turned(other, 4.0, keep=0.95), tmp_path / "test/invoice_2.jpg", quality=90)
    _others(tmp_path)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    pair = frozenset(("train/invoice_1.jpg", "test/invoice_2.jpg"))
    assert _links(report)[pair][0] == "same-scene"
    assert report.stats["turned_copy"]["judged"] == 1 and report.stats["turned_copy"]["copies"] == 0


def test_a_fixed_camera_is_never_judged(tmp_path: Path) -> None:
    """Shots of one background with an object moved: no turn between them, so this verdict leaves
    them to ``aligned`` (whose fixed-camera handling they need), however alike their detail."""
    back = view(scene(21), 60, 40)
    for k in range(4):
        shot = back.copy()
        shot.paste(photo(900 + k, (90, 90)), (100 + 90 * k, 200))
        save(shot, tmp_path / f"{'test' if k % 2 else 'train'}/shot_{k}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert not any(p.detector == "turned-copy" for f in report.findings for p in f.pairs)
    assert report.stats.get("turned_copy", {}).get("judged", 0) == 0


def _quarter_zoomed(img: Image.Image, zoom: float) -> Image.Image:
    """Roboflow's augmentations of a square picture: turned a quarter, then its centre cropped and zoomed."""
    w, h = img.size
    out = img.transpose(Image.Transpose.ROTATE_90)
    dx, dy = round(w * (1 - 1 / zoom) / 2), round(h * (1 - 1 / zoom) / 2)
    return out.crop((dx, dy, w - dx, h - dy)).resize((w, h), Image.Resampling.BICUBIC)


def test_a_copy_turned_a_quarter_and_zoomed_fails_the_build(tmp_path: Path) -> None:
    """A renamed augmented export (``tracks`` of ``benchmarks/field.py``): each train picture with its
    versions beside it, and a val picture whose train version is turned a quarter and zoomed 1.2x.  The
    hashes turn by quarters at one scale, ``aligned`` zooms but never turns; same-scene found the pair and
    only warned (its error level is a re-shot's), a copy no name and no hash says is one."""
    for k in range(3):
        picture = view(scene(40 + k), 60, 40, size=(480, 480), extent=(600, 600))
        save(picture, tmp_path / f"train/IMG_{3 * k + 1:04d}.jpg", quality=90)
        save(picture.transpose(Image.Transpose.FLIP_LEFT_RIGHT), tmp_path / f"train/IMG_{3 * k + 2:04d}.jpg", quality=90)
        save(_quarter_zoomed(picture, 1.15), tmp_path / f"train/IMG_{3 * k + 3:04d}.jpg", quality=90)
    original = view(scene(47), 60, 40, size=(480, 480), extent=(600, 600))
    save(original, tmp_path / "test/IMG_0001.jpg", quality=90)
    save(_quarter_zoomed(original, 1.2), tmp_path / "train/IMG_0010.jpg", quality=88)
    for k in range(4):
        save(view(scene(60 + k), 60, 40, size=(480, 480), extent=(600, 600)),
             tmp_path / f"test/IMG_{k + 2:04d}.jpg", quality=90)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    pair = frozenset(("train/IMG_0010.jpg", "test/IMG_0001.jpg"))
    assert _links(report)[pair] == ("turned-copy", "near-duplicate", "error"), _links(report)
    assert report.exit_code == 1
    crossing = {k for k, v in _links(report).items() if v[2] == "error" and len({p.split("/")[0] for p in k}) == 2}
    assert crossing == {pair}  # the other test pictures are no copies


@pytest.mark.parametrize(("angle", "scale", "unsearched"), [
    (0.4, 1.0, False), (-0.9, 1.1, False), (90.5, 1.0, False), (-179.6, 0.95, False), (90.2, 1.05, False),
    (1.5, 1.0, True), (-6.0, 1.0, True), (93.0, 1.0, True), (0.0, 1.4, True), (0.0, 0.7, True),
    (90.2, 1.2, True), (-179.8, 0.85, True), (-89.9, 1.1, True),
])
def test_only_turns_and_zooms_aligned_never_searched_are_judged(angle: float, scale: float, unsearched: bool) -> None:
    assert turned_copy.Turn(angle, scale, 1.0).unsearched is unsearched


def test_a_damaged_stored_image_is_no_image() -> None:
    """The store belongs to whoever committed it: a row that does not unpack is no evidence."""
    grey = np.arange(12 * 10, dtype=np.uint8).reshape(10, 12)
    good = b"\1" + np.array([12, 10], "<u2").tobytes() + zlib.compress(np.diff(grey, axis=1, prepend=np.uint8(0)).tobytes())
    assert np.array_equal(turned_copy.image(good), grey)
    assert turned_copy.image(b"\0") is None
    assert turned_copy.image(good[:-3]) is None  # truncated
    assert turned_copy.image(b"\1" + np.array([4000, 10], "<u2").tobytes() + good[5:]) is None  # sizes lie
    assert turned_copy.image(b"\1\x0c\x00\x0a\x00not zlib") is None


def test_a_page_with_one_field_filled_otherwise_is_no_copy(tmp_path: Path) -> None:
    """One form turned 4 degrees with a single field of other content: on average its detail
    agrees as a copy's does, but a copy agrees everywhere, and that field's tile does not."""
    page = view(scene(13), 60, 40)
    other = page.copy()
    other.paste(view(scene(14), 60, 40).crop((480, 120, 640, 240)), (480, 120))  # one tile of 16
    save(page, tmp_path / "train/form_1.jpg", quality=92)
    save(_turned(other, 4.0, keep=0.97), tmp_path / "test/form_2.jpg", quality=90)
    _others(tmp_path)
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    pair = frozenset(("train/form_1.jpg", "test/form_2.jpg"))
    assert _links(report)[pair][0] == "same-scene"
    assert report.stats["turned_copy"] == {"judged": 1, "copies": 0, "weak": 0, "level": turned_copy.LEVEL,
                                           "error_level": turned_copy.LEVEL, "impostors_near": 0,
                                           "impostors_further": 0, "shifted": 0, "template_held": 0}


def test_impostors_crowding_under_the_level_raise_it() -> None:
    """The probe's ``brush``: 1,513 judged pairs in the band under LEVEL, 850 under that; the turned copies
    there score 0.93-0.99, different parts 0.86-0.90.  ``chess``: 6 and 2, too few to say anything."""
    from pytest_leakcheck.detectors import turned_copy as tc

    crowded = [0.83] * 30 + [0.80] * 10 + [0.87] * 5 + [0.95] * 5
    said = tc.impostor_level(crowded)
    assert said["raised"] and said["error_level"] == pytest.approx(tc.LEVEL + tc.BAND)
    assert said["impostors_near"] == 30 and said["impostors_further"] == 10
    # A level in the tail of the impostors: fewer lie just under it than further down.
    assert "raised" not in tc.impostor_level([0.83] * 30 + [0.80] * 40 + [0.95] * 5)
    chess = [0.8324, 0.8379, 0.8472, 0.8503, 0.8557, 0.83, 0.79, 0.80]
    assert tc.impostor_level(chess) == {"impostors_near": 6, "impostors_further": 2}
    text = tc.DETECTOR.summary({"judged": 50, "copies": 5, "weak": 5, **said})
    assert "30 other turned pairs of this dataset agree in detail just under 0.86" in text
    assert "under 0.90 from them: those 5 are warnings" in text


def test_turned_copies_under_a_raised_level_are_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the dataset's impostors crowd under LEVEL, a turned copy at 0.87 is a weak link (a warning) and
    one at 0.95 an error; a verdict under LEVEL leaves the same-scene match as it was."""
    from types import SimpleNamespace

    from pytest_leakcheck.search.kernels import Match

    scores = {(0, 1): 0.87, (2, 3): 0.95, (4, 5): 0.70}
    scores.update({(10 + 2 * k, 11 + 2 * k): 0.84 for k in range(30)})  # the crowd under LEVEL
    matches = [Match(i, j, "same-scene", 40.0, "identity", weak=True) for i, j in scores]
    run = SimpleNamespace(memo={turned_copy.POINTS_MEMO: dict.fromkeys(scores)}, stats={},
                          sigs=SimpleNamespace(has=lambda *names: True))
    monkeypatch.setattr(turned_copy, "_greys", lambda run, rows: {})
    monkeypatch.setattr(turned_copy, "_verdict", lambda m, greys, points: (scores[m.i, m.j], False, None, None))
    from pytest_leakcheck.detectors import turned_template

    monkeypatch.setattr(turned_template, "held", lambda run, errors, judged: set())  # no files to read
    out = {(m.i, m.j): m for m in turned_copy.DETECTOR.refine(run, turned_copy.DETECTOR.default, matches)}
    assert (out[0, 1].detector, out[0, 1].weak) == ("turned-copy", True)
    assert (out[2, 3].detector, out[2, 3].weak) == ("turned-copy", False)
    assert out[4, 5].detector == "same-scene"
    assert run.stats["turned_copy"]["raised"] and run.stats["turned_copy"]["weak"] == 1


def test_overlapping_tiles_of_one_scene_are_copies_said_not_failed(tmp_path: Path) -> None:
    """Two 256 px tiles cut 96 px apart from one scene share 62.5 % of their pixels: a shift beyond
    aligned's reach, judged by detail and linked as a near-duplicate (held out: tiles cut from BCCD smears
    were same-scene links only). A shift cannot say whose pixels are shared (crops of one circuit design
    score as high), so it warns; a tile turned as well is a turned copy and fails."""
    place = scene(8, (640, 256), (5, 2))
    save(place.crop((0, 0, 256, 256)), tmp_path / "train/s8_x0000.png")
    save(place.crop((96, 0, 352, 256)), tmp_path / "test/s8_x0096.png")
    save(_turned(place.crop((300, 0, 556, 256)), 6.0), tmp_path / "test/s8_x0300_turned.png")
    save(place.crop((300, 0, 556, 256)), tmp_path / "train/s8_x0300.png")
    for k in range(6):
        other = scene(400 + k, (640, 256), (5, 2))
        save(other.crop((0, 0, 256, 256)), tmp_path / f"{'test' if k % 3 == 0 else 'train'}/o{k}_x0000.png")
    (tmp_path / "leakcheck.yaml").write_text(POLICY)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    links = _links(report)
    assert links[frozenset(("train/s8_x0000.png", "test/s8_x0096.png"))] == ("turned-copy", "near-duplicate", "warning")
    assert links[frozenset(("train/s8_x0300.png", "test/s8_x0300_turned.png"))] == (
        "turned-copy", "near-duplicate", "error")
    assert report.stats["turned_copy"]["shifted"] >= 1
    assert not any(p.a.startswith(("train/o", "test/o")) or p.b.startswith(("train/o", "test/o"))
                   for f in report.findings for p in f.pairs)


@pytest.mark.parametrize(("angle", "scale", "shift", "shifted"), [
    (0.0, 1.0, 0.0, False), (0.2, 1.0, 0.05, False), (0.0, 1.02, 0.375, True), (0.0, 1.0, 0.15, True),
    (6.0, 1.0, 0.4, False),  # turned: judged as a turn, at LEVEL
])
def test_only_shifts_beyond_aligned_s_reach_are_judged_as_shifts(angle: float, scale: float, shift: float,
                                                                 shifted: bool) -> None:
    assert turned_copy.Turn(angle, scale, 1.0, shift).shifted is shifted


def _grey(img: Image.Image) -> np.ndarray:
    g = img.convert("L")
    s = turned_copy.SIDE / max(g.size)
    return np.asarray(g.resize((round(g.width * s), round(g.height * s)), Image.Resampling.BILINEAR))


def test_a_quarter_turned_zoomed_copy_is_judged_alike_whichever_image_comes_first() -> None:
    """A copy turned a quarter and zoomed 1.2x: the larger view is shrunk onto the smaller whichever the
    pair names first, the blur's reach past its edge is left out, and the keypoints' map is refined.
    The points here are exact fractions, half a pixel off the pixel centres a quarter turn maps: at the
    points' map alone the copy agreed at 0.72."""
    import math

    from pytest_leakcheck.search.kernels import Match

    original = view(scene(47), 60, 40, size=(480, 480), extent=(600, 600))
    copy = _quarter_zoomed(original, 1.2)
    u = np.linspace(0.15, 0.85, 6)
    xb, yb = (g.ravel() for g in np.meshgrid(u, u))
    t, cx, cy = math.radians(90.0), (xb - 0.5) / 1.2, (yb - 0.5) / 1.2  # Pillow turns anticlockwise
    points = np.stack([0.5 + cx * math.cos(t) - cy * math.sin(t), 0.5 + cx * math.sin(t) + cy * math.cos(t),
                       xb, yb], 1).astype(np.float32)
    greys = {0: _grey(original), 1: _grey(copy)}
    one = turned_copy._verdict(Match(0, 1, "same-scene", 50.0, "identity"), greys, {(0, 1): points})
    two = turned_copy._verdict(Match(1, 0, "same-scene", 50.0, "identity"), greys, {(1, 0): points[:, [2, 3, 0, 1]]})
    assert one is not None and two is not None
    assert one[0] == pytest.approx(two[0], abs=0.01)
    assert one[0] >= 0.95
