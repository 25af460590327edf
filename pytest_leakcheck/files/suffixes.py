"""Which file suffixes are images: one list for the policy's default, `init` and the split sources."""

from __future__ import annotations

from .frames import SUFFIXES as DICOM

#: Pictures Pillow decodes (AVIF itself; HEIC and HEIF, an iPhone's photos, with the `heif` extra's
#: pillow-heif), JPEG under its rarer names too.
PICTURES = (".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".avif",
            ".heic", ".heif")
#: Every suffix read as an image by default (``files.extensions``): pictures and DICOM (the `dicom` extra).
IMAGES = PICTURES + DICOM
