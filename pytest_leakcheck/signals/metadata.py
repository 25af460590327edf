"""Identifiers inside the files, read once per content and kept in the store as keyed pseudonyms.

A metadata group rule (``dicom: PatientID``, ``exif: BodySerialNumber``,
``burst: {gap: 2s}``) is one family each (``families.py``): computed in the
decode workers from the bytes already in memory, stored by content digest,
so a later check reads nothing again.  Identifiers never reach the store in
clear: each value is an HMAC-SHA256 under the repository's pseudonym key
(``store/pseudonyms.py``), truncated to 16 bytes; zeros mean "absent".  Only
capture times are kept as they are (seconds, float64, NaN when absent).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import math
import struct
from datetime import datetime, timezone
from typing import Any

from .families import Decoded, Family
from ..files.frames import is_dicom

#: Bytes of a stored pseudonym; all zeros is "no value".
WIDTH = 16
#: EXIF tags a burst reads: the Exif sub-IFD, capture time, its sub-seconds, and the camera.
_EXIF_IFD = 0x8769
_DATETIME_ORIGINAL, _SUBSEC_ORIGINAL, _SERIAL = 0x9003, 0x9291, 0xA431
_MAKE, _MODEL = 0x010F, 0x0110
#: Part of every metadata family's parameters; bump when what is read changes.
VERSION = "meta-v1"
#: An attribute's family: v2 reads the attributes of a file whose pixels cannot be decoded too
#: (``Family.header``), so rows stored without them are read again, from the header alone.
FIELD_VERSION = "meta-v2"


def pseudonym(key: bytes, text: str) -> bytes:
    """The keyed pseudonym of ``text`` (16 bytes, never all zeros)."""
    out = hmac.new(key, text.encode("utf-8", "surrogateescape"), hashlib.sha256).digest()[:WIDTH]
    return out if any(out) else b"\x01" + out[1:]


def key_id(key: bytes) -> str:
    """Names the key in family parameters without revealing it: a new key recomputes the pseudonyms."""
    return hashlib.sha256(b"leakcheck-pseudonym-key:" + key).hexdigest()[:12]


def known_field(source: str, name: str) -> bool:
    """Whether ``name`` is a DICOM keyword (pydicom's dictionary) or an EXIF tag name (Pillow's)."""
    if source == "dicom":
        from .dicom import is_keyword

        return is_keyword(name)
    from PIL import ExifTags

    return name in set(ExifTags.TAGS.values())


def field_family(source: str, name: str, key: bytes) -> Family:
    """The pseudonym of one DICOM attribute or EXIF field, (N, 16) uint8."""
    return Family(f"meta:{source}:{name}", f"{FIELD_VERSION};{key_id(key)}", ((f"meta:{source}:{name}", "u1", WIDTH),),
                  _field, (source, name, key), header=True)


def burst_family(key: bytes) -> Family:
    """Capture time (EXIF DateTimeOriginal + SubSecTimeOriginal, float64 seconds, NaN when absent)
    and the camera's pseudonym (EXIF make, model and serial; zeros when none)."""
    return Family("meta:burst", f"{VERSION};{key_id(key)}",
                  (("meta:burst:time", "<f8", 1), ("meta:burst:camera", "u1", WIDTH)), _burst, (key,))


def _field(decoded: Decoded, family: Family) -> bytes:
    source, name, key = family.args
    value = _dicom_value(decoded, name) if source == "dicom" else _exif(decoded).get(name, "")
    return pseudonym(key, f"{source}:{name}={value}") if value else bytes(WIDTH)


def _dicom_value(decoded: Decoded, name: str) -> str:
    if not is_dicom(decoded.source):
        return ""
    from .dicom import DATASET, attributes

    return attributes(decoded.source, (name,), decoded.memo.get(DATASET)).get(name, "")


def _burst(decoded: Decoded, family: Family) -> bytes:
    (key,) = family.args
    fields = _exif(decoded)
    when = capture_time(fields.get("DateTimeOriginal", ""), fields.get("SubsecTimeOriginal", ""))
    camera = "\x1f".join(fields.get(k, "") for k in ("Make", "Model", "BodySerialNumber"))
    tag = pseudonym(key, f"camera:{camera}") if camera.strip("\x1f") else bytes(WIDTH)
    return struct.pack("<d", math.nan if when is None else when) + tag


def capture_time(stamp: str, subsec: str = "") -> float | None:
    """Seconds (as if UTC) of an EXIF ``YYYY:MM:DD HH:MM:SS`` with its sub-seconds digits, or None."""
    try:
        moment = datetime.strptime(stamp.strip().rstrip("\x00")[:19], "%Y:%m:%d %H:%M:%S")
    except ValueError:
        return None
    digits = "".join(c for c in subsec if c.isdigit())
    return moment.replace(tzinfo=timezone.utc).timestamp() + (float("0." + digits) if digits else 0.0)


def _exif(decoded: Decoded) -> dict[str, str]:
    """The EXIF fields of the file by Pillow's names (base IFD and the Exif sub-IFD), memoised per decode."""
    if "exif-fields" in decoded.memo:
        return decoded.memo["exif-fields"]
    out = exif_fields(io.BytesIO(decoded.source)) if decoded.source and not is_dicom(decoded.source) else {}
    decoded.memo["exif-fields"] = out
    return out


def exif_fields(source: Any) -> dict[str, str]:
    """EXIF fields of an image file (a path or a binary file) by Pillow's names: base IFD and Exif sub-IFD."""
    from PIL import ExifTags, Image

    try:
        with Image.open(source) as img:
            exif = img.getexif()
            tags = {**dict(exif), **dict(exif.get_ifd(_EXIF_IFD))}
    except Exception:  # noqa: BLE001 - not an image, damaged EXIF: no fields (the decode judges the pixels)
        return {}
    out = {}
    for tag, value in tags.items():
        name = ExifTags.TAGS.get(tag)
        text = (value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)).strip("\x00 ")
        if name and text:
            out[name] = text
    return out
