"""The workers' quicker routes give the bytes the plain ones gave (signatures are cached by content).

Each test runs the shortcut next to the straightforward computation it
replaced, written out here, on photos and on inputs that stress it (flat
squares whose DCT has many equal values, noise).
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pytest_leakcheck.orientation import ORIENTATIONS
from pytest_leakcheck.signals.decode import TRANSPOSE, Decoded
from pytest_leakcheck.signals.families import hash_family, phash_bits
from pytest_leakcheck.testing import photo


def _squares() -> list[Image.Image]:
    rng = np.random.default_rng(7)
    out = [photo(seed, (64, 64)).convert("L") for seed in range(12)]
    out += [Image.fromarray(rng.integers(0, 256, (64, 64), dtype=np.uint8)) for _ in range(6)]
    out += [Image.new("L", (64, 64), 0), Image.new("L", (64, 64), 200)]  # every coefficient but one is 0
    halves = np.zeros((64, 64), np.uint8)
    halves[:, 32:] = 255
    out.append(Image.fromarray(halves))  # ties between many non-zero coefficients
    return out


@pytest.mark.parametrize("bits", [64, 256])
def test_phash_family_equals_hashing_each_transposed_image(bits: int) -> None:
    """The family turns one float square per decode; before, each orientation transposed the image and hashed it."""
    hash_size = round(bits**0.5)
    side = 4 * hash_size
    for grey in _squares():
        decoded = Decoded(grey, grey.size)
        square = grey.resize((side, side), Image.Resampling.LANCZOS)
        for name in ORIENTATIONS:
            family = hash_family("phash", bits, name)
            op = TRANSPOSE[name]
            want = phash_bits(square if op is None else square.transpose(op), hash_size)
            assert family.compute(decoded, family) == np.packbits(want.ravel()).tobytes(), name


@pytest.mark.parametrize("bits", [64, 256])
def test_phash_of_every_orientation_at_once_equals_one_by_one(bits: int) -> None:
    """A decode serving several orientations hashes them as one stack; before, one square and two lone
    matmuls each, written out here (the 2-D products BLAS ran for each)."""
    from pytest_leakcheck.signals.decode import FAMILIES
    from pytest_leakcheck.signals.families import dct_matrix

    hash_size = round(bits**0.5)
    side = 4 * hash_size
    m = dct_matrix(side)
    fams = [hash_family("phash", bits, name) for name in ORIENTATIONS]
    for grey in _squares():
        square = grey.resize((side, side), Image.Resampling.LANCZOS)
        for served in (fams, fams[:2], fams[3:6]):
            decoded = Decoded(grey, grey.size)
            decoded.memo[FAMILIES] = tuple(served)
            for family in served[::-1]:  # any order: the first one asked hashes the others too
                op = TRANSPOSE[family.args[2]]
                turned = np.asarray(square if op is None else square.transpose(op), np.float64)
                low = (m @ turned @ m.T)[:hash_size, :hash_size]
                want = np.packbits((low > np.median(low)).ravel()).tobytes()
                assert family.compute(decoded, family) == want, family.name
            assert set(decoded.memo[("phash", hash_size)]) == {f.args[2] for f in served}


def test_phash_median_is_numpys() -> None:
    """The sorted median splits the coefficients where ``np.median`` did, ties included."""
    for grey in _squares():
        c = np.asarray(grey.resize((32, 32), Image.Resampling.LANCZOS), np.float64)
        from pytest_leakcheck.signals.families import dct_matrix

        m = dct_matrix(32)
        low = (m @ c @ m.T)[:8, :8]
        assert np.array_equal(phash_bits(grey, 8), low > np.median(low))


def test_scene_row_equals_packing_each_keypoint() -> None:
    """Keypoints are ordered and placed from arrays; before, from a Python tuple per keypoint."""
    import cv2

    from pytest_leakcheck.detectors.same_scene import features
    from pytest_leakcheck.testing import scene

    for seed in range(4):
        grey = np.asarray(scene(seed, (features.SIDE, features.SIDE * 3 // 4)).convert("L"))
        orb = cv2.ORB_create(nfeatures=features.FEATURES, scaleFactor=features.SCALE, nlevels=features.LEVELS,
                             edgeThreshold=features.PATCH, patchSize=features.PATCH, fastThreshold=10)
        kp, d = orb.detectAndCompute(grey, None)
        assert len(kp) >= features.MIN_KEYPOINTS
        order = np.argsort([-k.response for k in kp], kind="stable")[:features.FEATURES]
        xy = np.clip(np.round(np.array([kp[i].pt for i in order], np.float64) * features.SUB), 0, 65535).astype("<u2")
        h, w = grey.shape
        want = np.array([len(order), w, h], "<u2").tobytes() + xy.tobytes() + d[order].tobytes()
        assert features.extract(grey) == want


def test_families_reading_the_shared_grey_content_give_what_converting_again_gave() -> None:
    """``grey``, the fine square and the same-scene image start from one grey conversion now."""
    import io
    import zlib

    from pytest_leakcheck.detectors.aligned import families, hires
    from pytest_leakcheck.signals.decode import BASE, decode, detail_grey

    framed = Image.new("RGB", (640, 480), (0, 0, 0))
    framed.paste(photo(3, (640, 360)), (0, 60))  # letterboxed: content is not the upright decode
    for img in (photo(1, (640, 480)), photo(2, (300, 220)), framed, photo(4, (48, 40))):
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=90)
        d = decode(buf.getvalue(), 10**9, colour=32)
        d.source, d.max_pixels = buf.getvalue(), 10**9
        assert d.content is not None and d.upright is not None
        lanczos = Image.Resampling.LANCZOS
        assert d.grey.tobytes() == d.content.convert("L").resize((BASE, BASE), lanczos, reducing_gap=3.0).tobytes()
        if min(d.content.size) >= hires.FINE_FROM:
            square = np.asarray(d.content.convert("L").resize((hires.F, hires.F), lanczos, reducing_gap=3.0), np.uint8)
            want = b"\1" + zlib.compress(np.diff(square, axis=1, prepend=np.uint8(0)).tobytes(), 1)
            assert hires.row(d, families.HIRES_FAMILY) == want
        if max(d.upright.size) >= 160:
            want_grey = d.upright.convert("L")
            if max(want_grey.size) > 160:
                s = 160 / max(want_grey.size)
                want_grey = want_grey.resize((round(want_grey.width * s), round(want_grey.height * s)),
                                             Image.Resampling.BILINEAR)
            assert np.array_equal(detail_grey(d, 160), np.asarray(want_grey))


def _drafted_to_luma(data: bytes, side: int) -> Image.Image:
    """The file opened and drafted to luma at ``side`` px on its long side, as ``detail_grey`` does."""
    from pytest_leakcheck.signals import imagedepth

    img = imagedepth.open_image(data, 10**9)
    long = max(img.size)
    img.draft("L", (side * img.width // long, side * img.height // long))
    return img


@pytest.mark.parametrize("orient", range(1, 9))
def test_grey_second_decode_skips_the_rgb_round_trip_unchanged(orient: int) -> None:
    """Same-scene's second, luma-only decode is turned upright in grey; before, it went to RGB and back."""
    import io

    from pytest_leakcheck.signals import imagedepth
    from pytest_leakcheck.signals.decode import decode, detail_grey

    exif = Image.Exif()
    exif[0x0112] = orient
    for img in (photo(5, (640, 480)), photo(6, (480, 640)).convert("L")):
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=90, exif=exif)
        data = buf.getvalue()
        before = _drafted_to_luma(data, 320)
        want = np.asarray(imagedepth.upright_rgb(before, imagedepth.orientation(before)).convert("L"))
        got = imagedepth.upright_grey(_drafted_to_luma(data, 320))
        assert got is not None and got.mode == "L"
        assert np.array_equal(np.asarray(got), want)
        d = decode(data, 10**9)
        d.source, d.max_pixels = data, 10**9
        assert np.array_equal(detail_grey(d, 320), want)


def test_grey_shortcut_leaves_other_modes_to_the_rgb_path() -> None:
    """Colour, grey with a transparent colour, and grey with alpha keep the RGB path (None)."""
    from pytest_leakcheck.signals import imagedepth

    grey = photo(7, (64, 48)).convert("L")
    keyed = grey.copy()
    keyed.info["transparency"] = 0
    for img in (grey.convert("RGB"), grey.convert("LA"), keyed, grey.convert("CMYK")):
        assert imagedepth.upright_grey(img) is None
    assert np.array_equal(np.asarray(imagedepth.upright_grey(grey)), np.asarray(grey))


def _plain_edge_as_it_was(a: np.ndarray) -> bool:
    """The four-line test of ``content_box`` before ``_plain_edge``: rows, then columns, widened to int16 whole."""
    from pytest_leakcheck.signals.decode import _uniform

    a = np.asarray(a, dtype=np.int16)
    rows, cols = a[[0, -1]], a[:, [0, -1]].transpose(1, 0, 2)
    return bool(_uniform(rows, rows.mean(axis=1, keepdims=True).astype(np.int16)).any()
                or _uniform(cols, cols.mean(axis=1, keepdims=True).astype(np.int16)).any())


def _edge_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    out = [np.asarray(photo(seed, (80, 60))) for seed in range(10)]
    for k in range(40):  # one edge nearly plain: k of its pixels stray, around the 97 % share
        a = np.asarray(photo(100 + k, (64, 48))).copy()
        edge = (a[0], a[-1], a[:, 0], a[:, -1])[k % 4]
        edge[:] = (30 + 5 * k) % 256
        stray = rng.choice(len(edge), size=k % 5, replace=False)
        edge[stray] = rng.integers(0, 256, (len(stray), 3))
        edge += rng.integers(0, 2 * (k % 12), edge.shape, dtype=np.uint8) if k % 12 else np.uint8(0)
        out.append(a)
    out += [np.full((9, 33, 3), 250, np.uint8), rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)]
    return out


def test_the_four_edge_lines_are_judged_as_they_were() -> None:
    from pytest_leakcheck.signals.decode import _plain_edge

    cases = _edge_cases()
    said = [_plain_edge(a) for a in cases]
    assert said == [_plain_edge_as_it_was(a) for a in cases]
    assert 5 < sum(said) < len(cases) - 5  # both answers are met


def test_a_photo_without_a_plain_edge_is_not_tested_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most photos have no uniform edge: the four lines are one test, not a test of rows and one of columns."""
    from pytest_leakcheck.signals import decode

    calls: list[int] = []
    uniform = decode._uniform
    monkeypatch.setattr(decode, "_uniform", lambda lines, colour: calls.append(len(lines)) or uniform(lines, colour))
    assert decode.content_box(photo(4, (160, 120))) is None
    assert calls == []


def test_a_ground_ring_of_many_colours_gives_no_mask_without_measuring_the_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ground.mask`` of a photo whose ring is no plain ground is "no mask" whatever stands out: the
    object's distances are not measured for it (most scenes), and the row is the one they gave."""
    from pytest_leakcheck.detectors.same_scene import ground

    rgb = np.asarray(photo(9, (ground.SIDE, ground.SIDE)))
    norms: list[tuple[int, ...]] = []
    norm = np.linalg.norm
    monkeypatch.setattr(np.linalg, "norm", lambda x, *a, **k: norms.append(np.shape(x)) or norm(x, *a, **k))
    assert ground.mask(rgb) == b"\xff" * ground.BYTES
    assert len(norms) == 1  # the ring's spread alone
