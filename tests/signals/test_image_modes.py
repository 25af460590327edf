"""Every image mode is judged on its own values: 8-bit signatures are pinned,
high-depth images are mapped by their value range, huge images stay in bounded memory,
and damaged image bytes never raise."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from PIL import Image

from pytest_leakcheck import check
from pytest_leakcheck.signals import imagedepth as decode
from pytest_leakcheck.signals.imagedepth import HIGH_DEPTH, upright_rgb
from pytest_leakcheck.testing import photo, save, scan, streamed_png

from ..conftest import write_policy
from ..imagecompat import Spec, _pixel_digest, _sign

# --------------------------------------------------------------------------
# 8-bit images: signatures pinned before the high-depth and huge-image paths
# existed, so those paths provably leave ordinary images alone.

#: Every family a check can ask for; the pins cover all of them at once.
WANTED = (
    ("dims", ""), ("hash:identity", ""), ("hash:hflip", ""), ("hash:rot90", ""),
    ("thumb", ""), ("desc", ""),
)
SPEC = Spec("phash", 64, 16, 178_956_970, WANTED)


def _eight_bit_files() -> dict[str, Callable[[Path], None]]:
    img = photo(11, (96, 72))
    big = photo(12, (640, 480))  # large enough for JPEG draft mode to reduce it
    # Half to fully opaque: a gradient down to fully transparent laid the picture almost white on white,
    # and its contrast-normalised signatures then moved with the machine (module note at PINS).
    alpha = Image.linear_gradient("L").resize(img.size).point(lambda v: 128 + v // 2)
    rgba = img.copy()
    rgba.putalpha(alpha)
    exif = Image.Exif()
    exif[0x0112] = 6
    return {
        "rgb.png": lambda p: img.save(p),
        "l.png": lambda p: img.convert("L").save(p),
        "rgba.png": lambda p: rgba.save(p),
        "p.png": lambda p: img.quantize(64).save(p),
        "1.png": lambda p: img.convert("1").save(p),
        "la.png": lambda p: img.convert("LA").save(p),
        "cmyk.tif": lambda p: img.convert("CMYK").save(p),
        "rgb.jpg": lambda p: img.save(p, quality=90),
        "draft.jpg": lambda p: big.save(p, quality=90),
        "exif6.jpg": lambda p: big.transpose(Image.Transpose.ROTATE_90).save(p, quality=90, exif=exif),
        "l.bmp": lambda p: img.convert("L").save(p),
        "p.gif": lambda p: img.convert("P").save(p),
    }


def _signature_pin(path: Path) -> str:
    _, ok, out = _sign((str(path), SPEC))
    assert ok, out
    assert isinstance(out, dict)
    return hashlib.sha256(b"".join(out[name] for name, _ in WANTED)).hexdigest()[:16]


def _pixel_pin(path: Path) -> str:
    ok, digest = _pixel_digest((str(path), SPEC.max_pixels))
    assert ok, digest
    return digest.hex()[:16]


#: name -> (signature pin, pixel-digest pin), computed by the decode path before
#: high-depth mapping and bounded decoding were added.  The signature pins were
#: taken again when the ``desc`` family dropped its unused colour layout (v2);
#: the pins of every other family, computed without ``desc``, were unchanged.  The two
#: 640 x 480 JPEGs were pinned again when photos of 200 px and more came to be drafted to
#: 160 px (one decode for same_scene's keypoints too, decode path v4); their pixel
#: digests, and every smaller image's pins, are unchanged.  ``rgba.png`` (a gradient alpha) was pinned
#: again when transparent pixels came to be laid on white rather than dropped; opaque ``la.png`` kept its.
#: ``rgba.png``'s alpha was then kept to half opaque and more, and pinned again: its old near-white picture
#: gave another signature on another machine, with the same pixels and with each of Pillow 11.3-13, numpy
#: 2.3-2.4, OpenCV 4.14-5.1 and SciPy 1.16-1.17.
PINS: dict[str, tuple[str, str]] = {
    "1.png": ("d708e4e44aaa349a", "5860de2a21269050"),
    "cmyk.tif": ("70f3bfd47fbb5610", "6eefac4cac6c4c2a"),
    "draft.jpg": ("ea8adc86695a5a61", "16207f48f899190e"),
    "exif6.jpg": ("3aa873f14ed2c89b", "f70698d9fb0d2de8"),
    "l.bmp": ("47f58a4a23d53140", "4da855baf1ccc6cd"),
    "l.png": ("47f58a4a23d53140", "4da855baf1ccc6cd"),
    "la.png": ("47f58a4a23d53140", "4da855baf1ccc6cd"),
    "p.gif": ("066de91fa09199c3", "696e69ef8bc42ecd"),
    "p.png": ("f3871cad21d1b1da", "544c21016893adde"),
    "rgb.jpg": ("ff4b48d541fbd252", "a0abaed6cc7c5fbd"),
    "rgb.png": ("70f3bfd47fbb5610", "6eefac4cac6c4c2a"),
    "rgba.png": ("46acb507188c1774", "8f16b18b584cee10"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_eight_bit_files()))
def test_eight_bit_signatures_are_pinned(tmp_path: Path, name: str) -> None:
    """Ordinary 8-bit images (every common mode and format) keep exactly their old signatures."""
    path = tmp_path / name
    _eight_bit_files()[name](path)
    assert (_signature_pin(path), _pixel_pin(path)) == PINS[name]


# --------------------------------------------------------------------------
# High-depth images: mapped to 8 bits by their value range; digests on their values.

#: How a 12-bit scan (uint16 array) is written in each high-depth mode Pillow reads back.
DEEP_WRITERS: dict[str, Callable[[np.ndarray, Path], None]] = {
    "I;16.png": lambda a, p: Image.fromarray(a).save(p),
    "I;16B.tif": lambda a, p: Image.frombytes("I;16B", a.shape[::-1], a.astype(">u2").tobytes()).save(p),
    "I.tif": lambda a, p: Image.fromarray(a.astype(np.int32)).save(p),
    "F.tif": lambda a, p: Image.fromarray(a.astype(np.float32)).save(p),
}


def _write_deep(arr: np.ndarray, path: Path, how: str) -> Path:
    """``arr`` written as ``how`` (a DEEP_WRITERS key) at ``path`` plus the format's suffix."""
    out = path.with_name(f"{path.name}.{how.split('.')[1]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    DEEP_WRITERS[how](arr, out)
    return out


def test_written_modes_are_read_back_high_depth(tmp_path: Path) -> None:
    """The fixtures below really are high-depth files (else they would test nothing)."""
    modes = {how: Image.open(_write_deep(scan(0, (32, 24)), tmp_path / str(k), how)).mode
             for k, how in enumerate(DEEP_WRITERS)}
    assert modes == {how: how.split(".")[0] for how in DEEP_WRITERS}


TWO_SPLITS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


def _leaks(report) -> list[tuple[str, list[str]]]:
    return sorted((f.kind, sorted(m.path for m in f.members)) for f in report.findings)


def test_seven_distinct_12bit_scans_stay_distinct(tmp_path: Path) -> None:
    """Seven different 12-bit scans, in four high-depth modes, are seven signatures and no finding.

    Clipped to 8 bits they were one white square: an `identical-pixels` error.
    """
    hows = list(DEEP_WRITERS)
    paths = [_write_deep(scan(seed), tmp_path / ("train" if seed < 4 else "test") / f"scan{seed}", hows[seed % 4])
             for seed in range(7)]
    write_policy(tmp_path, TWO_SPLITS)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _leaks(report) == []
    signed = [_sign((str(p), SPEC)) for p in paths]
    assert all(ok for _, ok, _ in signed)
    assert len({out["hash:identity"] for _, _, out in signed}) == 7
    assert len({out["thumb"] for _, _, out in signed}) == 7
    assert len({_pixel_digest((str(p), SPEC.max_pixels))[1] for p in paths}) == 7


def _one_scan_among_others(root: Path) -> np.ndarray:
    """Train holds four 12-bit scans as 16-bit PNGs; returns the first."""
    for seed in range(4):
        _write_deep(scan(seed), root / "train" / f"scan{seed}", "I;16.png")
    _write_deep(scan(9), root / "test" / "other", "I;16.png")
    write_policy(root, TWO_SPLITS)
    return scan(0)


def test_brightened_12bit_scan_is_found(tmp_path: Path) -> None:
    """A 12-bit scan brightened x1.2 (values past 4095, still 16-bit) is a near-duplicate of it."""
    original = _one_scan_among_others(tmp_path)
    brighter = np.clip(np.rint(original * 1.2), 0, 65535).astype(np.uint16)
    _write_deep(brighter, tmp_path / "test" / "brighter", "I;16.png")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _leaks(report) == [("near-duplicate", ["test/brighter.png", "train/scan0.png"])]


def test_float_copy_of_a_scan_is_found(tmp_path: Path) -> None:
    """The scan saved as a 0..1 float TIFF is found; as 8-bit it was all black."""
    original = _one_scan_among_others(tmp_path)
    Image.fromarray((original / 4095).astype(np.float32)).save(tmp_path / "test/float.tif")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _leaks(report) == [("near-duplicate", ["test/float.tif", "train/scan0.png"])]


def test_pixel_digests_keep_the_original_values(tmp_path: Path) -> None:
    """A copy changed only where values exceed 8 bits is not `identical-pixels` (clipped, it was),
    while the same values in any high-depth mode and byte order have one digest."""
    original = _one_scan_among_others(tmp_path)
    changed = np.where(original > 300, original ^ 1, original)
    _write_deep(changed, tmp_path / "test" / "changed", "I;16.png")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _leaks(report) == [("near-duplicate", ["test/changed.png", "train/scan0.png"])]
    same = [_write_deep(original, tmp_path / "same" / str(k), how) for k, how in enumerate(DEEP_WRITERS)
            if not how.startswith("F")]
    digests = {_pixel_digest((str(p), SPEC.max_pixels)) for p in same}
    assert len(same) == 3 and len(digests) == 1


def _deep_image(arr: np.ndarray, mode: str) -> Image.Image:
    """``arr`` as an in-memory image of any high-depth mode, byte order included."""
    dtype = {"I;16": "<u2", "I;16L": "<u2", "I;16B": ">u2", "I;16N": "=u2", "I": "=i4", "F": "=f4"}[mode]
    return Image.frombytes(mode, arr.shape[::-1], arr.astype(dtype).tobytes())


@pytest.mark.parametrize("mode", sorted(HIGH_DEPTH))
def test_every_high_depth_mode_maps_by_its_value_range(mode: str) -> None:
    """Each high-depth mode, with any value offset and scale, maps to the same full-range 8-bit image."""
    arr = scan(5, (40, 30))
    want = np.asarray(upright_rgb(_deep_image(arr, "I;16"), 1))
    assert want.min() == 0 and want.max() == 255
    for values in (arr, arr * 3 + 100):  # brighter, more contrast: the same picture
        got = np.asarray(upright_rgb(_deep_image(values, mode), 1))
        np.testing.assert_allclose(got, want, atol=1)


def test_non_finite_and_flat_float_images() -> None:
    """NaN and infinities do not set the range (they map to its bottom); a flat image is flat."""
    arr = scan(6, (40, 30)).astype(np.float32)
    holes = arr.copy()
    holes[:5, :5], holes[10, 10], holes[11, 11] = np.nan, np.inf, -np.inf
    clean = np.asarray(upright_rgb(_deep_image(arr, "F"), 1))
    got = np.asarray(upright_rgb(_deep_image(holes, "F"), 1))
    np.testing.assert_array_equal(got[5:, 5:][got[5:, 5:] != 0], clean[5:, 5:][got[5:, 5:] != 0])
    assert (got[:5, :5] == 0).all()
    flat = np.asarray(upright_rgb(_deep_image(np.full((30, 40), 7.0), "F"), 1))
    assert flat.shape == (30, 40, 3) and not flat.any()


ORIENT_OPS = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE",
              6: "ROTATE_270", 7: "TRANSVERSE", 8: "ROTATE_90"}


@pytest.mark.parametrize("orient", range(1, 9))
@pytest.mark.parametrize("mode", ["RGB", "P", "I;16B", "F"])
def test_pixel_digest_in_strips_equals_whole_image(monkeypatch, orient: int, mode: str) -> None:
    """Hashing upright strips of a few rows gives the digest of the whole upright image."""
    arr = scan(7, (33, 23))
    img = photo(7, (33, 23)).convert(mode) if mode in ("RGB", "P") else _deep_image(arr, mode)
    whole = img if orient == 1 else img.transpose(getattr(Image.Transpose, ORIENT_OPS[orient]))
    head = struct.pack("<qq", *whole.size)
    if mode in HIGH_DEPTH:
        dtype = "<f4" if mode == "F" else "<i4"
        want = hashlib.sha256(head + f"values:{dtype}".encode() + np.asarray(whole).astype(dtype).tobytes())
    else:
        want = hashlib.sha256(head + whole.convert("RGBA").tobytes())
    monkeypatch.setattr(decode, "STRIP_BYTES", 300)  # two rows a strip, or one
    assert decode.pixel_digest(img, orient) == want.digest()


@pytest.mark.parametrize("mode", ["RGB", "L", "P", "1", "CMYK", "I;16", "F"])
def test_large_images_reduce_alike_whatever_the_strip_height(monkeypatch, mode: str) -> None:
    """The strip path of a large image equals reducing the whole image at once, for any strip height."""
    monkeypatch.setattr(decode, "LARGE", 1000)
    monkeypatch.setattr(decode, "REDUCED", 8)
    big = photo(8, (120, 50))
    img = _deep_image(np.asarray(big.convert("L"), np.uint16) * 16, mode) if mode in HIGH_DEPTH else big.convert(mode)
    outs = []
    for strip_bytes in (1, 2000, 10**9):
        monkeypatch.setattr(decode, "STRIP_BYTES", strip_bytes)
        outs.append(np.asarray(upright_rgb(img, 6)))
    assert outs[0].shape == (8, 9, 3)  # 120x50 reduced by (15, 6) to 8x9, then turned upright
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    if mode not in HIGH_DEPTH:
        whole = img.convert("RGB").reduce((15, 6)).transpose(Image.Transpose.ROTATE_270)
        np.testing.assert_array_equal(outs[0], np.asarray(whole))


# --------------------------------------------------------------------------
# Huge images: bounded memory, whatever the input.

#: Peak resident memory allowed to a process signing the huge images below
#: (Python, numpy and Pillow alone take about 45 MB; before bounded decoding
#: the 12,000 x 12,000 PNGs took 1.7 to 1.8 GB).
# Measured: 213-337 MB on one Pillow build, up to 518 MB in a fresh CI venv with
# the newest wheels; either way far from the 1.7-1.8 GB of an unbounded decode.
PEAK_MB = 640

_SIGN_IN_CHILD = """
import json, resource, sys
sys.path.insert(0, sys.argv.pop(1))
from imagecompat import Spec, _pixel_digest, _sign
spec = Spec("phash", 64, 16, 178_956_970, (("dims", ""), ("hash:identity", ""), ("thumb", ""), ("desc", "")))
out = {}
for path in sys.argv[1:]:
    _, ok, result = _sign((path, spec))
    pixels_ok, _ = _pixel_digest((path, spec.max_pixels))
    thumb = list(result["thumb"]) if ok else None
    out[path] = [ok, pixels_ok, None if ok else result, thumb]
# VmHWM, the high-water mark of this process's own memory: ru_maxrss survives execve on
# Linux, so it would report a large parent's (a long pytest run's) peak, not this child's.
try:
    hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
    out["peak_mb"] = int(hwm) / 1024
except (OSError, IndexError):
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


@pytest.mark.slow
def test_huge_images_decode_in_bounded_memory(tmp_path: Path) -> None:
    """12,000 x 12,000 PNGs (allowed by the default pixel limit, tiny on disk) and a 10,000 x
    10,000 16-bit one: signed or refused with the reason, and the pixel digest too, in bounded memory."""
    grey = streamed_png(tmp_path / "grey.png", (12_000, 12_000), channels=1)
    rgb = streamed_png(tmp_path / "rgb.png", (12_000, 12_000), channels=3)
    deep = streamed_png(tmp_path / "deep.png", (10_000, 10_000), channels=1, depth=16)
    here = str(Path(__file__).parent.parent)
    run = subprocess.run([sys.executable, "-c", _SIGN_IN_CHILD, here, str(grey), str(rgb), str(deep)],
                         capture_output=True, text=True, check=True)
    out = json.loads(run.stdout)
    assert out["peak_mb"] < PEAK_MB
    for signed in (grey, deep):
        ok, pixels_ok, _, thumb = out[str(signed)]
        assert ok and pixels_ok
        assert len(set(thumb)) > 2  # the bands and the diagonal survive the reduction
    ok, pixels_ok, message, _ = out[str(rgb)]
    assert not ok and not pixels_ok
    assert "12000x12000 RGB PNG needs 549 MiB" in message and "bounded memory" in message


@pytest.mark.slow
def test_too_large_image_is_an_unreadable_finding(tmp_path: Path) -> None:
    """An image over the decode bound is an `unreadable-image` finding that says why; the rest is checked."""
    streamed_png(tmp_path / "train/huge.png", (8_200, 8_200), channels=3)
    save(photo(1), tmp_path / "train/a.png")
    save(photo(1), tmp_path / "test/a.jpg", quality=80)
    write_policy(tmp_path, TWO_SPLITS)
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert _leaks(report) == [("near-duplicate", ["test/a.jpg", "train/a.png"]),
                              ("unreadable-image", ["train/huge.png"])]
    message = next(f.message for f in report.findings if f.kind == "unreadable-image")
    assert "too large to decode in bounded memory" in message


# --------------------------------------------------------------------------
# Damaged bytes: a signature or an error message, never an exception.

#: Examples hypothesis tries (derandomized: the same ones on every run).
MUTATION_EXAMPLES = 200


def _encoded(img: Image.Image, fmt: str, **options: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **options)
    return buf.getvalue()


def _seed_files() -> dict[str, bytes]:
    img = photo(21, (48, 36))
    exif = Image.Exif()
    exif[0x0112] = 6
    deep = scan(21, (48, 36))
    return {
        "rgb.jpg": _encoded(img, "JPEG", quality=85, exif=exif),
        "progressive.jpg": _encoded(img.convert("L"), "JPEG", quality=70, progressive=True),
        "rgb.png": _encoded(img, "PNG"),
        "p.png": _encoded(img.quantize(16), "PNG"),
        "i16.png": _encoded(Image.fromarray(deep), "PNG"),
        "rgb.tif": _encoded(img, "TIFF"),
        "deflate.tif": _encoded(img, "TIFF", compression="tiff_adobe_deflate"),
        "f.tif": _encoded(Image.fromarray(deep.astype(np.float32)), "TIFF"),
        "rgb.avif": _encoded(img, "AVIF", quality=70),
        "rgb.heic": _heic(img),
    }


def _heic(img: Image.Image) -> bytes:
    """A HEIC file, written by the real pillow-heif (the `heif` extra): libheif parses what a pull request adds."""
    from pytest_leakcheck.signals import heif

    assert heif.ensure(), "pillow-heif (the heif extra) is part of the test install"
    return _encoded(img, "HEIF", quality=70)


SEEDS = _seed_files()
_POSITION = st.one_of(st.integers(0, 96), st.integers(0, 10**6))  # headers are where parsers break
MUTATION = st.one_of(
    st.tuples(st.just("flip"), _POSITION, st.integers(0, 7)),
    st.tuples(st.just("cut"), _POSITION, st.just(0)),
    st.tuples(st.just("insert"), _POSITION, st.binary(min_size=1, max_size=32)),
)


def _mutate(data: bytes, mutations: list[tuple[str, int, object]]) -> bytes:
    out = bytearray(data)
    for kind, where, arg in mutations:
        at = where % (len(out) + 1)
        if kind == "flip" and at < len(out):
            out[at] ^= 1 << int(arg)  # type: ignore[call-overload]
        elif kind == "cut":
            del out[at:]
        elif kind == "insert":
            out[at:at] = arg  # type: ignore[assignment]
    return bytes(out)


@pytest.fixture(scope="module")
def mutation_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mutated")


@pytest.mark.slow
@settings(max_examples=MUTATION_EXAMPLES, deadline=None, derandomize=True, database=None)
@given(seed=st.sampled_from(sorted(SEEDS)), mutations=st.lists(MUTATION, min_size=1, max_size=4))
@example(seed="rgb.tif", mutations=[("flip", 72, 0)])  # strip offsets as a rational: TypeError
def test_mutated_image_bytes_never_raise(mutation_dir: Path, seed: str, mutations: list) -> None:
    """Bit flips, truncation and inserted junk in real JPEG, PNG, TIFF, AVIF and HEIC files give a full
    signature row or an error message (an `unreadable-image` finding), never an exception."""
    data = _mutate(SEEDS[seed], mutations)
    path = mutation_dir / seed
    path.write_bytes(data)
    digest, ok, result = _sign((str(path), SPEC))
    assert digest == hashlib.sha256(data).digest()
    if ok:
        assert isinstance(result, dict)
        assert {name: len(result[name]) for name, _ in WANTED} == {
            "dims": 16, "hash:identity": 8, "hash:hflip": 8, "hash:rot90": 8, "thumb": 256, "desc": 1280}
    else:
        assert isinstance(result, str) and result
    pixels_ok, pixels = _pixel_digest((str(path), SPEC.max_pixels))
    assert isinstance(pixels, bytes) and (len(pixels) == 32 or not pixels_ok)


def _opencv_fails(decoded: object, family: object) -> bytes:
    import cv2

    return cv2.resize(np.zeros((1, 1), np.uint8), (0, 0), fx=0, fy=0)  # raises cv2.error


def test_an_opencv_failure_is_named_as_ours_not_a_corrupt_file(tmp_path: Path) -> None:
    """A signature that OpenCV cannot compute for a sound image is reported as the signature's failure
    (a thin strip once broke ORB's pyramid and was called "corrupt or truncated")."""
    from pytest_leakcheck.signals.decode import SignTask, sign
    from pytest_leakcheck.signals.families import Family

    save(photo(1), tmp_path / "a.jpg")
    family = Family("scene_n", "test", None, _opencv_fails)  # type: ignore[arg-type]
    _, ok, failed = sign(SignTask(str(tmp_path / "a.jpg"), 10**8, (family,)))
    why = failed.why
    assert not ok and isinstance(why, str)
    assert why.startswith("the `scene_n` signature failed on this image (") and "corrupt" not in why


def test_a_transparent_logo_matches_its_copy_on_white(tmp_path: Path) -> None:
    """A logo as an RGBA PNG that stores black under its transparent pixels, and its JPEG on white:
    one picture, an error (held out: a web-scraped logo set lost such copies when alpha was dropped)."""
    from PIL import ImageDraw

    on_white = Image.new("RGB", (256, 256), "white")
    draw = ImageDraw.Draw(on_white)
    draw.ellipse((40, 30, 200, 190), fill=(200, 20, 30))
    draw.rectangle((90, 120, 230, 240), fill=(20, 60, 180))
    draw.polygon([(20, 240), (70, 150), (120, 240)], fill=(30, 160, 40))
    mask = np.asarray(on_white.convert("L")) < 250
    rgba = np.zeros((256, 256, 4), np.uint8)  # black where transparent
    rgba[mask, :3] = np.asarray(on_white)[mask]
    rgba[mask, 3] = 255
    save(on_white, tmp_path / "train/logo.jpg", quality=90)
    (tmp_path / "test").mkdir(parents=True, exist_ok=True)
    Image.fromarray(rgba, "RGBA").save(tmp_path / "test/logo.png")
    for k in range(4):
        save(photo(k), tmp_path / f"{'train' if k % 2 else 'test'}/other{k}.jpg")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    report = check(tmp_path / "leakcheck.yaml", use_cache=False, jobs=1)
    errors = [sorted(m.path for m in f.members) for f in report.findings if f.severity == "error"]
    assert errors == [["test/logo.png", "train/logo.jpg"]], report.findings


def _tiff_of_bands(path: Path, bands: int, seed: int) -> None:
    """A chunky uint16 TIFF of ``bands`` samples per pixel (EuroSAT-MS's 13-band layout), written by hand:
    Pillow reads none of them, so nothing else here could write one."""
    arr = np.random.default_rng(seed).integers(500, 3500, (64, 64, bands), dtype=np.uint16)
    entries = [(256, 3, 1, 64), (257, 3, 1, 64), (258, 3, bands, None), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, None), (277, 3, 1, bands), (278, 3, 1, 64), (279, 4, 1, arr.nbytes), (284, 3, 1, 1)]
    bps = 8 + 2 + 12 * len(entries) + 4
    pixels = bps + 2 * bands
    out = bytearray(b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", len(entries)))
    for tag, kind, count, value in entries:
        value = {258: bps, 273: pixels}.get(tag, value)
        out += struct.pack("<HHIHH", tag, kind, count, value, 0) if kind == 3 and count == 1 else \
            struct.pack("<HHII", tag, kind, count, value)
    out += struct.pack("<I", 0) + struct.pack(f"<{bands}H", *[16] * bands) + arr.astype("<u2").tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))


def test_a_multispectral_tiff_is_named_as_such_and_logs_nothing(tmp_path: Path) -> None:
    """A 13-band TIFF is no damaged file: the finding says how many bands Pillow cannot read, and
    Pillow's own log line ("More samples per pixel than can be decoded") stays off the terminal."""
    _tiff_of_bands(tmp_path / "train/ms_0.tif", 13, 0)
    save(photo(1), tmp_path / "train/a.jpg")
    save(photo(2), tmp_path / "test/b.jpg")
    write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    from ..childcli import cli

    # A child process: the terminal a user sees, with no test harness handling Pillow's log records.
    run = cli(tmp_path, "check", "--policy", "leakcheck.yaml", "--no-cache", "-j", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "train/ms_0.tif" in run.stdout and "a TIFF of 13 bands per pixel (multispectral)" in run.stdout
    assert "More samples per pixel" not in run.stdout + run.stderr
