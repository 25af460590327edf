"""HEIC and HEIF images (an iPhone's photos), decoded by the optional ``pillow-heif``.

Pillow reads AVIF itself but not HEIC, the format iPhones save photos in.  The
``heif`` extra installs ``pillow-heif`` (libheif's wheels); it is imported only
when the bytes of a file are HEIF (its ``ftyp`` box), never for a policy that
meets none, so the hook's start pays nothing for it.  Without it a HEIC file is
an ``unreadable-image`` finding that says which extra to install, one finding
for all of them (``pipeline/findings.py``), never a file skipped in silence.
"""

from __future__ import annotations

#: ``ftyp`` major brands of HEIF images with HEVC pictures (ISO/IEC 23008-12).  ``mif1`` and
#: ``msf1`` are generic: such a file is HEIF unless it names AVIF, which Pillow reads itself.
_BRANDS = frozenset({b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs"})
_GENERIC = frozenset({b"mif1", b"msf1"})
#: The reason an ``unreadable-image`` finding gives when pillow-heif is not installed.
NEEDS = ("a HEIC/HEIF image (an iPhone's format): decoding it needs the optional pillow-heif "
         "(pip install 'pytest-leakcheck[heif]')")

_registered: bool | None = None


def is_heif(data: bytes) -> bool:
    """Whether ``data`` starts as a HEIF image does: an ``ftyp`` box with a HEVC brand."""
    if len(data) < 12 or data[4:8] != b"ftyp":
        return False
    brand = data[8:12]
    return brand in _BRANDS or (brand in _GENERIC and b"avif" not in data[8:40])


def ensure() -> bool:
    """Register pillow-heif's opener with Pillow, once per process; False when it is not installed."""
    global _registered
    if _registered is None:
        try:
            import pillow_heif
        except ImportError:
            _registered = False
        else:
            pillow_heif.register_heif_opener()
            _registered = True
    return _registered
