"""Multi-frame DICOM files as containers: each frame a member, as an image inside a shard is.

``scan.dcm#frame=0003`` is the third frame of ``scan.dcm``.  Its bytes are an
envelope (:data:`ENVELOPE`, the 0-based frame as a little-endian u32, then
the file's bytes), so each frame has a content digest of its own and the
decode (``signals/dicom.py``) knows which frame to take.  Listing a dataset
reads each ``.dcm`` file's frame count from its first 64 KiB; pydicom parses
the header only when the count is not found there.
"""

from __future__ import annotations

import struct

#: File names taken as DICOM when listing a dataset; any file is read as DICOM when its bytes say so.
SUFFIXES = (".dcm", ".dicom")
INSTALL = "pip install 'pytest-leakcheck[dicom]'"
#: The member name of a frame: ``frame=0003`` (1-based, as DICOM counts frames).
FRAME = "frame="
#: What a frame member's bytes start with (then the frame index, little-endian u32, then the file).
ENVELOPE = b"LEAKCHECK-DICOM-FRAME\x00"
_HEAD = len(ENVELOPE) + 4
#: How much of a file the frame count is looked for in before pydicom parses the header.
_SCAN = 1 << 16
#: (0028,0008) Number of Frames, little endian, explicit VR "IS" (implicit VR has no VR).
_FRAMES_TAG = b"\x28\x00\x08\x00"


def unnamed(name: str) -> bool:
    """A file name that says nothing of its format: no suffix, or a UID's numeric last part
    (``IM000123``, ``1.2.840.113619.2.55.3.604688119.969.1268071029.320``).  DICOM exports name
    files so; such a file is listed when its bytes are DICOM (:func:`sniff`)."""
    base = name.rsplit("/", 1)[-1]
    suffix = base.rsplit(".", 1)[1] if "." in base else ""
    return bool(base) and not base.startswith(".") and (suffix == "" or suffix.isdigit())


def named(name: str) -> bool:
    """Whether a listed file is DICOM by its name: a DICOM suffix, or a name that says nothing
    (the listing kept it only because its bytes are DICOM)."""
    return name.lower().endswith(SUFFIXES) or unnamed(name)


def sniff(path: str) -> bool:
    """Whether the file at ``path`` starts as a DICOM Part 10 file does (``DICM`` after 128 bytes)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(132)[128:] == b"DICM"
    except OSError:
        return False


def is_dicom(data: bytes) -> bool:
    """A DICOM Part 10 file, or a frame envelope of one."""
    return data[128:132] == b"DICM" or data.startswith(ENVELOPE)


def envelope(frame: int, data: bytes) -> bytes:
    """The bytes of frame ``frame`` (0-based) of a multi-frame file: its own digest, its own decode."""
    return ENVELOPE + struct.pack("<I", frame) + data


def unwrap(data: bytes) -> tuple[bytes, int | None]:
    """(the file's bytes, the 0-based frame) of an envelope; (data, None) for a whole file."""
    if data.startswith(ENVELOPE):
        return data[_HEAD:], struct.unpack_from("<I", data, len(ENVELOPE))[0]
    return data, None


def member(frame: int, frames: int) -> str:
    """``frame=0003`` for the 0-based frame 2; padded so members sort in frame order."""
    return f"{FRAME}{frame + 1:0{max(4, len(str(frames)))}d}"


def frame_of(name: str) -> int | None:
    """The 0-based frame a member name stands for, None when it is not one."""
    digits = name[len(FRAME):] if name.startswith(FRAME) else ""
    return int(digits) - 1 if digits.isdigit() and int(digits) > 0 else None


def frame_count(path: str) -> int:
    """How many frames a DICOM file holds (1 when it says nothing, or is not DICOM).

    Looked for in the first 4 KiB, which hold a plain header up to its pixel data; then in
    the first 64 KiB, where (0028,0008) sits in any header but one carrying huge private
    data; pydicom parses the header only when it is not found there either.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(_FIRST)
            if head[128:132] != b"DICM":
                return 1
            found = _frames_in(head)
            if found is not None:
                return found
            if len(head) < _FIRST or _pixels_start(head):
                return 1  # the whole header was read: no frame count
            head += fh.read(_SCAN - _FIRST)
    except OSError:
        return 1
    found = _frames_in(head)
    if found is not None:
        return found
    if len(head) < _SCAN or _PIXELS_TAG in head:  # the whole header was read: no frame count
        return 1
    try:
        import warnings

        import pydicom

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = pydicom.dcmread(path, stop_before_pixels=True, specific_tags=["NumberOfFrames"])
        return max(1, int(ds.get("NumberOfFrames", 1) or 1))
    except Exception:  # noqa: BLE001 - a damaged header: one image, and its decode says what is wrong
        return 1


#: What is read first.  Listing reads every DICOM file's head on every check: reading and
#: searching 64 KiB of each (the pixels of a small slice, most of a large one's first rows)
#: took 0.27 s of a 0.65 s check with nothing changed on 5,000 slices (``benchmarks/dicom_studies.py``).
_FIRST = 1 << 12
#: (7FE0,0010) Pixel Data: no header element follows it.
_PIXELS_TAG = b"\xe0\x7f\x10\x00"


def _frames_in(head: bytes) -> int | None:
    """The first valid Number of Frames in ``head``, or None."""
    at = head.find(_FRAMES_TAG, 132)
    while at != -1:
        found = _frames_at(head, at)
        if found is not None:
            return found
        at = head.find(_FRAMES_TAG, at + 1)
    return None


def _pixels_start(head: bytes) -> bool:
    """Whether ``head`` holds the Pixel Data element's start, in explicit VR (OB or OW, two zero bytes):
    checked so, four bytes that merely look like its tag in a private value do not end the header."""
    at = head.find(_PIXELS_TAG, 132)
    while at != -1:
        if head[at + 4:at + 6] in (b"OB", b"OW") and head[at + 6:at + 8] == b"\0\0":
            return True
        at = head.find(_PIXELS_TAG, at + 1)
    return False


def _frames_at(head: bytes, at: int) -> int | None:
    """The Number of Frames value encoded at ``at`` (explicit or implicit VR), or None if it is not one."""
    if head[at + 4:at + 6] == b"IS":
        size, start = struct.unpack_from("<H", head, at + 6)[0], at + 8
    else:
        size, start = struct.unpack_from("<I", head, at + 4)[0] if len(head) >= at + 8 else 0, at + 8
    text = head[start:start + size].strip(b" \x00")
    return max(1, int(text)) if 0 < size <= 12 and text.isdigit() else None


