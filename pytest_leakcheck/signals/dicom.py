"""DICOM files as images: the pixels every signal starts from, their raw values, and their attributes.

A DICOM file is recognised by its bytes (``DICM`` after the 128-byte
preamble), not by its name: exports name files by UID, or not at all.  Each
frame of a multi-frame file is a member of it (``scan.dcm#frame=0003``), as
an image inside a shard is; ``files/frames.py`` says how its bytes name the frame.

Perceptual signals see the stored values through the modality LUT and the
file's first window (else its VOI LUT, else the frame's value range),
MONOCHROME1 inverted, in 8 bits: what a viewer shows and what a PNG export
holds.  ``identical-pixels`` digests the raw stored values instead, so a
copy whose window was changed in the header is still identical pixels.

pydicom is imported only here, and only when a DICOM file is met or a rule
reads an attribute (tests/cli/test_lean.py).
"""

from __future__ import annotations

import hashlib
import io
import re
import warnings
from typing import Any

import numpy as np

from ..files.frames import is_dicom, unwrap  # noqa: F401  (is_dicom: re-exported)

INSTALL = "pip install 'pytest-leakcheck[dicom]'"
#: Key of the decoded image's ``info`` holding the digest of the raw stored values.
VALUES = "leakcheck-dicom-values"
#: Key holding the parsed dataset: attribute rules read it without parsing the file again.
DATASET = "leakcheck-dicom-dataset"

_UID = re.compile(r"[0-9.]{1,64}")
#: Which package decodes which compressed transfer syntax (by UID prefix), for the unreadable finding.
_PACKAGES = (
    ("1.2.840.10008.1.2.4.5", "pylibjpeg-libjpeg (JPEG)"),
    ("1.2.840.10008.1.2.4.70", "pylibjpeg-libjpeg (JPEG lossless)"),
    ("1.2.840.10008.1.2.4.8", "pylibjpeg-libjpeg (JPEG-LS)"),
    ("1.2.840.10008.1.2.4.9", "pylibjpeg-openjpeg (JPEG 2000)"),
    ("1.2.840.10008.1.2.4.20", "pylibjpeg-openjpeg (HTJ2K)"),
    ("1.2.840.10008.1.2.5", "pydicom itself (RLE)"),
)


class NoPydicom(ImportError):
    """pydicom is not installed: the message names the extra."""


class Said(ValueError):
    """Why a DICOM file is not read, in words leakcheck wrote: it never quotes a header value.

    pydicom's own messages quote the value they choke on (``invalid literal for int() with
    base 10: 'ZZPATIENT7731'`` from a NumberOfFrames holding text), and a finding's message
    reaches every report, log and the store: so any other error is said by its type alone.
    """


def pydicom() -> Any:
    """The pydicom module; :class:`NoPydicom` naming the extra when it is missing."""
    try:
        import pydicom as module
        from pydicom import config
    except ImportError:
        raise NoPydicom(f"reading DICOM files needs pydicom ({INSTALL})") from None
    config.settings.reading_validation_mode = config.IGNORE  # hostile headers: never a warning storm
    return module


# --------------------------------------------------------------------------
# Reading pixels


def _dataset(data: bytes, pixels: bool = True) -> Any:
    module = pydicom()
    try:
        with warnings.catch_warnings():  # hostile or sloppy headers: the finding says what matters
            warnings.simplefilter("ignore")
            return module.dcmread(io.BytesIO(data), stop_before_pixels=not pixels)
    except Exception as exc:  # noqa: BLE001 - any parse failure of hostile bytes
        raise Said(f"not a readable DICOM file ({type(exc).__name__})") from None


def _syntax(ds: Any) -> tuple[str, str]:
    uid = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
    if uid is None:
        return "1.2.840.10008.1.2", "Implicit VR Little Endian"
    return _uid(uid), _uid_name(uid)


def _uid(uid: Any) -> str:
    """A UID as it may be said: digits and dots, else not at all (a header may hold any text)."""
    text = str(uid)
    return text if _UID.fullmatch(text) else "an invalid UID"


def _uid_name(uid: Any) -> str:
    """The standard's name of a UID; pydicom names an unknown one by its own text, which is not said."""
    name = str(getattr(uid, "name", "") or "")
    return name if name and name != str(uid) else _uid(uid)


def _number(ds: Any, keyword: str, default: int) -> int:
    """A whole-number attribute (Rows, NumberOfFrames...), its default when absent or empty."""
    try:
        return int(ds.get(keyword, default) or default)
    except Exception:  # noqa: BLE001 - pydicom converts lazily: text where a number belongs
        raise Said(f"DICOM attribute {keyword} is not a whole number") from None


def _unsupported(uid: str, name: str) -> str:
    """Why the pixel data of syntax ``uid`` cannot be decoded here, naming the package that reads it."""
    for prefix, package in _PACKAGES:
        if uid.startswith(prefix):
            return (f"DICOM transfer syntax {name} ({uid}) cannot be decoded here: {package} reads it; "
                    f"`{INSTALL}` installs it")
    return (f"DICOM transfer syntax {name} ({uid}) is not decoded by leakcheck or the packages of its dicom extra "
            "(video and other syntaxes without a still-image decoder); convert the file to an uncompressed "
            "syntax, e.g. `gdcmconv --raw` (python-gdcm)")


def _frame(data: bytes, max_pixels: int, max_bytes: int) -> tuple[Any, np.ndarray]:
    """(dataset, stored values of the wanted frame); ``ValueError`` saying why not."""
    data, frame = unwrap(data)
    ds = _dataset(data)
    if "PixelData" not in ds and "FloatPixelData" not in ds and "DoubleFloatPixelData" not in ds:
        sop = ds.get("SOPClassUID", None)
        sop_name = "unknown SOP class" if sop is None else _uid_name(sop)
        if "Image Storage" in sop_name:  # an image's class: its pixels were cut off or stripped
            raise Said(f"DICOM image without pixel data ({sop_name}): truncated, or its pixels were removed")
        raise Said(f"DICOM file without pixel data ({sop_name}): a report or a presentation state, not an image")
    rows, cols = _number(ds, "Rows", 0), _number(ds, "Columns", 0)
    frames = max(1, _number(ds, "NumberOfFrames", 1))
    if rows * cols == 0:
        raise Said("DICOM image has no pixels (Rows or Columns is 0)")
    if rows * cols > max_pixels:
        raise Said(f"decompression bomb: {cols}x{rows} = {rows * cols:,} pixels exceeds "
                   f"files.max_pixels ({max_pixels:,})")
    samples, bits = _number(ds, "SamplesPerPixel", 1), _number(ds, "BitsAllocated", 16)
    need = rows * cols * samples * max(1, bits // 8) * (1 if frame is not None or frames == 1 else 2)
    if need > max_bytes:
        raise Said(f"too large to decode in bounded memory: {cols}x{rows}x{samples} at {bits} bits needs "
                   f"{need / 2**20:,.0f} MiB, over leakcheck's bound of {max_bytes >> 20} MiB")
    uid, name = _syntax(ds)
    from pydicom.pixels import get_decoder

    try:
        available = get_decoder(uid).is_available
    except (NotImplementedError, ValueError):
        available = False
    if not available:
        raise Said(_unsupported(uid, name))
    index = 0 if frame is None else frame
    if index >= frames:
        raise Said(f"DICOM file has {frames} frames, no frame {index + 1} (it changed; run the check again)")
    try:
        arr = ds.pixel_array if frames == 1 else _one_frame(data, index)
    except Exception as exc:  # noqa: BLE001 - a damaged stream or a decoder refusing it
        raise Said(f"DICOM pixel data in {name} ({uid}) cannot be decoded ({type(exc).__name__}: "
                   "damaged, or its decoder refuses it)") from None
    return ds, np.asarray(arr)


def _one_frame(data: bytes, index: int) -> np.ndarray:
    """One frame only: a 300-frame cine is never decoded whole for one of its frames."""
    from pydicom.pixels import pixel_array

    return pixel_array(io.BytesIO(data), index=index)


def image(data: bytes, max_pixels: int, max_bytes: int) -> Any:
    """The 8-bit image (grey ``L``, or ``RGB`` for colour) the perceptual signals see; ValueError saying why not."""
    try:
        return _image(data, max_pixels, max_bytes)
    except Said:
        raise
    except Exception as exc:  # noqa: BLE001 - pydicom's messages quote header values
        raise Said(f"DICOM file cannot be read ({type(exc).__name__}: "
                   "a malformed header value, or damaged pixels)") from None


def _image(data: bytes, max_pixels: int, max_bytes: int) -> Any:
    from PIL import Image

    ds, arr = _frame(data, max_pixels, max_bytes)
    if arr.ndim == 3 and arr.shape[-1] in (3, 4):
        colour = arr[..., :3]
        if colour.dtype != np.uint8:
            colour = _stretch(colour.astype(np.float64), None)
        img = Image.fromarray(np.ascontiguousarray(colour), "RGB")
    elif arr.ndim == 2:
        img = Image.fromarray(windowed(ds, arr), "L")
    else:
        raise Said(f"DICOM frame of shape {arr.shape} is not an image leakcheck reads")
    img.info[VALUES] = _values_digest(arr)  # for the ``values`` family: no second decode
    img.info[DATASET] = ds
    return img


def windowed(ds: Any, arr: np.ndarray) -> np.ndarray:
    """Stored values -> modality LUT -> the file's first window (or VOI LUT, or value range) -> uint8."""
    from pydicom.pixels import apply_modality_lut, apply_voi_lut

    try:
        values = np.asarray(apply_modality_lut(arr, ds), dtype=np.float64)
    except Exception:  # noqa: BLE001 - a broken LUT: the stored values as they are
        values = arr.astype(np.float64)
    window = _window(ds)
    if window is not None:
        out = _window_to_8(values, *window)
    elif "VOILUTSequence" in ds:
        try:
            out = _stretch(np.asarray(apply_voi_lut(arr, ds), dtype=np.float64), None)
        except Exception:  # noqa: BLE001
            out = _stretch(values, None)
    else:
        out = _stretch(values, None)
    if str(ds.get("PhotometricInterpretation", "")).strip() == "MONOCHROME1":
        out = 255 - out
    return out


def _first(value: Any) -> float:
    """A number, or the first of a multi-valued attribute (several windows: the first is the default)."""
    if value is not None and not isinstance(value, (str, bytes, int, float)):
        value = list(value)[0]
    return float(value)  # type: ignore[arg-type]


def _window(ds: Any) -> tuple[float, float] | None:
    try:
        c, w = _first(ds.get("WindowCenter")), _first(ds.get("WindowWidth"))
    except (TypeError, ValueError, IndexError):
        return None
    return (c, w) if np.isfinite(c) and np.isfinite(w) and w >= 1 else None


def _window_to_8(values: np.ndarray, centre: float, width: float) -> np.ndarray:
    """DICOM PS3.3 C.11.2.1.2 linear windowing to 0..255."""
    scaled = ((values - (centre - 0.5)) / (width - 1) + 0.5) * 255.0
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def _stretch(values: np.ndarray, _: Any) -> np.ndarray:
    finite = np.isfinite(values)
    if not finite.any():
        return np.zeros(values.shape, np.uint8)
    lo, hi = float(values[finite].min()), float(values[finite].max())
    if not hi > lo:
        return np.zeros(values.shape, np.uint8)
    scaled = (np.nan_to_num(values, nan=lo) - lo) * (255.0 / (hi - lo))
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def raw_digest(data: bytes, max_pixels: int, max_bytes: int) -> bytes:
    """sha256 of the frame's shape, type and raw stored values: windows and LUTs in the header do not count."""
    try:
        return _values_digest(_frame(data, max_pixels, max_bytes)[1])
    except Said:
        raise
    except Exception as exc:  # noqa: BLE001 - pydicom's messages quote header values
        raise Said(f"DICOM file cannot be read ({type(exc).__name__})") from None


def _values_digest(arr: np.ndarray) -> bytes:
    # Little-endian whatever the file's byte order: a big-endian copy holds the same values
    # (pydicom's MR_small_bigendian.dcm and MR_small.dcm); native little-endian arrays are unchanged.
    arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else None)
    digest = hashlib.sha256(f"dicom-values:{arr.dtype.str}:{arr.shape}".encode())
    digest.update(arr.tobytes())
    return digest.digest()


# --------------------------------------------------------------------------
# Attributes


def attributes(data: bytes, keywords: tuple[str, ...], dataset: Any = None) -> dict[str, str]:
    """The named attributes (DICOM keywords) as text; absent or empty ones are left out.

    ``dataset``: the one the decode parsed, when there is one (no second parse).
    """
    if dataset is not None:
        return _texts(dataset, keywords)
    data, _ = unwrap(data)
    module = pydicom()
    from pydicom.datadict import tag_for_keyword

    keywords = tuple(k for k in keywords if tag_for_keyword(k) is not None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = module.dcmread(io.BytesIO(data), stop_before_pixels=True, specific_tags=list(keywords))
    except Exception:  # noqa: BLE001 - unreadable header: no attribute (its decode reports the file)
        return {}
    return _texts(ds, keywords)


def _texts(ds: Any, keywords: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for k in keywords:
        value = ds.get(k)
        text = "" if value is None else str(value).strip()
        if text:
            out[k] = text
    return out


def is_keyword(name: str) -> bool:
    """Whether ``name`` is a DICOM keyword in pydicom's dictionary."""
    pydicom()  # NoPydicom, naming the extra, before any pydicom submodule
    from pydicom.datadict import tag_for_keyword

    return tag_for_keyword(name) is not None
