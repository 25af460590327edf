"""Which file suffixes are images: one list for the policy's default, `init` and the split sources."""

from __future__ import annotations

from .frames import SUFFIXES as DICOM

#: Pictures Pillow decodes (AVIF itself; HEIC and HEIF, an iPhone's photos, with the `heif` extra's
#: pillow-heif), JPEG under its rarer names too, and netpbm, which academic sets ship (GTSRB's .ppm
#: signs, the ORL faces' .pgm).
PICTURES = (".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".avif",
            ".heic", ".heif", ".ppm", ".pgm", ".pbm", ".pnm")
#: Every suffix read as an image by default (``files.extensions``): pictures and DICOM (the `dicom` extra).
IMAGES = PICTURES + DICOM
#: Vector drawings: no decoder here reads them, so the advice is to rasterise them, not to list them.
#: Icon and emoji sets ship them beside their PNGs (EmojiOne's ``assets/svg``), a copy as much as the PNG.
VECTOR = (".svg", ".svgz", ".eps")
#: Image formats a camera, a scanner or an editor writes that are not read by default (RAW files beside
#: their JPEGs, JPEG XL, JPEG 2000, Photoshop, OpenEXR, Targa, Windows and macOS icons, vector
#: drawings): the scan names such files.
UNREAD = (".jxl", ".jp2", ".j2k", ".jpf", ".jpx", ".dng", ".cr2", ".cr3", ".nef", ".arw", ".orf", ".rw2", ".raf",
          ".pef", ".srw", ".psd", ".exr", ".tga", ".ico", ".icns") + VECTOR
