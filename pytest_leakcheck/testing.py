"""Synthetic, photo-like images for tests and examples.

Flat colour squares would make every detector look perfect; these images
have structure at several scales (smooth shading, mid-size shapes, fine
texture), so near-duplicate detectors are tested on something like photos.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter


def photo(seed: int, size: tuple[int, int] = (160, 120)) -> Image.Image:
    """A distinct, textured RGB image; the same seed gives the same image."""
    rng = np.random.default_rng(seed)
    w, h = size
    layers = np.zeros((h, w, 3), dtype=np.float32)
    for cells, amp in ((3, 90.0), (7, 45.0), (19, 20.0)):
        noise = rng.normal(0, 1, (cells, cells, 3)).astype(np.float32)
        up = [np.asarray(Image.fromarray(noise[..., c]).resize((w, h), Image.Resampling.BICUBIC))
              for c in range(3)]
        layers += amp * np.stack(up, axis=-1)
    base = np.clip(128 + layers, 0, 255).astype(np.uint8)
    img = Image.fromarray(base, "RGB")
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(4, 9))):
        x0, y0 = int(rng.integers(0, w - 10)), int(rng.integers(0, h - 10))
        x1, y1 = x0 + int(rng.integers(10, w // 2)), y0 + int(rng.integers(10, h // 2))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
        else:
            draw.rectangle((x0, y0, x1, y1), fill=colour)
    grain = rng.normal(0, 6, (h, w, 3))
    arr = np.clip(np.asarray(img, dtype=np.float32) + grain, 0, 255).astype(np.uint8)
    return Image.fromarray(arr, "RGB").filter(ImageFilter.GaussianBlur(0.6))


def scene(seed: int, size: tuple[int, int] = (1000, 760), cells: tuple[int, int] = (5, 4)) -> Image.Image:
    """A large scene with many corners (a mosaic of distinct photos), to shoot views of with :func:`view`."""
    w, h = size
    cw, ch = w // cells[0], h // cells[1]
    out = Image.new("RGB", size)
    for r in range(cells[1]):
        for c in range(cells[0]):
            out.paste(photo(seed * 1000 + r * cells[0] + c, (cw, ch)), (c * cw, r * ch))
    return out


def view(img: Image.Image, dx: int, dy: int, tilt: int = 0, size: tuple[int, int] = (640, 480),
         extent: tuple[int, int] = (800, 600)) -> Image.Image:
    """Another shot of ``img``: the ``extent`` region at (dx, dy), seen ``tilt`` pixels aside (a perspective)."""
    ew, eh = extent
    quad = (dx + tilt, dy, dx, dy + eh, dx + ew, dy + eh + tilt, dx + ew - tilt, dy)
    return img.transform(size, Image.Transform.QUAD, quad, Image.Resampling.BILINEAR)


def jpeg_quality(img: Image.Image, quality: int) -> Image.Image:
    """``img`` after a JPEG round trip at ``quality``."""
    import io

    buf = io.BytesIO()
    img.convert("RGB").save(buf, "JPEG", quality=quality)
    buf.seek(0)
    return Image.open(buf).convert("RGB")


def resized(img: Image.Image, factor: float) -> Image.Image:
    w, h = img.size
    return img.resize((max(1, round(w * factor)), max(1, round(h * factor))), Image.Resampling.LANCZOS)


def brighter(img: Image.Image, factor: float) -> Image.Image:
    return ImageEnhance.Brightness(img).enhance(factor)


def cropped(img: Image.Image, fraction: float) -> Image.Image:
    """Crop ``fraction`` of the width and height, split over both sides."""
    w, h = img.size
    dx, dy = round(w * fraction / 2), round(h * fraction / 2)
    return img.crop((dx, dy, w - dx, h - dy))


def save(img: Image.Image, path: Path, **options: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, **options)
    return path


def scan(seed: int, size: tuple[int, int] = (160, 120), bits: int = 12) -> np.ndarray:
    """A grey, photo-like ``bits``-deep scan as uint16 (values 0 .. 2**bits - 1).

    The 8-bit photo is spread over the full range and given sub-8-bit
    detail, so clipping or keeping only the top byte loses it.
    """
    rng = np.random.default_rng(seed + 10_000)
    grey = np.asarray(photo(seed, size).convert("L"), dtype=np.float64) / 255
    top = 2**bits - 1
    return np.clip(np.rint(grey * top + rng.normal(0, top / 2000, grey.shape)), 0, top).astype(np.uint16)


def streamed_png(path: Path, size: tuple[int, int], channels: int = 3, depth: int = 8) -> Path:
    """A huge but mostly uniform grey or RGB PNG, 8 or 16 bits deep, written row by row.

    Writing it with Pillow would hold the whole image in memory; this writes
    a few hundred kilobytes without ever holding more than one row.
    """
    import struct
    import zlib

    w, h = size
    colour_type = {1: 0, 3: 2}[channels]
    dtype = {8: np.uint8, 16: np.dtype(">u2")}[depth]
    scale = 1 if depth == 8 else 4095 / 255  # 16-bit rows hold 12-bit values, like a scan

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    z = zlib.compressobj(6)
    idat = bytearray()
    for y in range(h):
        # A few horizontal bands and a diagonal edge: some structure to sign.
        row = np.full((w, channels), (40 + 50 * (y * 4 // h)) * scale, dtype=dtype)
        row[: w * y // h] = 200 * scale
        idat += z.compress(b"\0" + row.tobytes())
    idat += z.flush()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour_type, 0, 0, 0))
        + chunk(b"IDAT", bytes(idat))
        + chunk(b"IEND", b"")
    )
    return path


def receipt(template: int, seed: int, size: tuple[int, int] = (480, 800)) -> Image.Image:
    """A scanned receipt printed from one shop's ``template``: the same header, rules and line layout
    for every ``seed``, another date, items and total (random digits) in the same places.

    Receipts of one template are different documents that share their low frequencies, as SROIE's
    receipts of one shop do: what a hash or a 32 px square sees of them is their layout."""
    shop, own = np.random.default_rng(template), np.random.default_rng(10_000 + seed)
    w, h = size
    img = Image.new("L", size, 255)
    draw = ImageDraw.Draw(img)
    top = int(shop.integers(h // 10, h // 5))
    for k in range(4):  # the shop's header: fixed words, centred
        text = "".join(chr(int(c)) for c in shop.integers(65, 91, int(shop.integers(8, 20))))
        draw.text((w // 2, top + 22 * k), text, fill=20, anchor="mt", font_size=18)
    rows = int(shop.integers(5, 9))
    for k in range(rows + 2):  # the rules and the item lines: fixed places, other words and figures
        y = top + 110 + 34 * k
        draw.line((20, y, w - 20, y), fill=90, width=1)
        item = "".join(chr(int(c)) for c in own.integers(48, 91, int(own.integers(6, 14))))
        draw.text((24, y + 8), item, fill=25, font_size=15)
        draw.text((w - 24, y + 8), f"{own.integers(1, 999)}.{own.integers(0, 99):02d}", fill=25, anchor="rt",
                  font_size=15)
    dx, dy = (int(v) for v in own.integers(-3, 4, 2))  # the scan is never placed quite the same
    paper = np.asarray(img.transform(size, Image.Transform.AFFINE, (1, 0, dx, 0, 1, dy), fillcolor=255), np.float32)
    paper = np.clip(paper + own.normal(0, 4, paper.shape), 0, 255).astype(np.uint8)
    return Image.fromarray(paper, "L").convert("RGB")


def id_card(template: int, seed: int, size: tuple[int, int] = (600, 380), portrait: bool = False) -> Image.Image:
    """A specimen ID card of one country's ``template``: the same patterned ground and labels for
    every ``seed``, another holder (entries, the three MRZ lines; a ``portrait`` on the front).

    Cards of one template are different documents that share their layout, as the PRADO
    register's specimens do: a hash, the thumbnail and the 32 and 96 px squares see the layout."""
    card, own = np.random.default_rng(20_000 + template), np.random.default_rng(30_000 + seed)
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    f1, f2, tint = card.uniform(0.05, 0.12), card.uniform(0.03, 0.08), card.uniform(200, 240, 3)
    ground = np.sin(f1 * xx + 9 * np.sin(f2 * yy)) + np.sin(f2 * yy + 7 * np.sin(f1 * xx))
    img = Image.fromarray(np.clip(tint[None, None] + 6 * ground[..., None], 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img)
    if portrait:
        img.paste(photo(seed, (90, 115)), (w - 114, 16))

    def word(rng: np.random.Generator, lo: int, hi: int, top: int = 91) -> str:
        return "".join(chr(int(c)) for c in rng.integers(65, top, int(rng.integers(lo, hi))))

    for k in range(6):  # labels in the template's places, the holder's entries under them
        y = 12 + 34 * k
        draw.text((24, y), f"{word(card, 8, 14)} / {word(card, 8, 18)}", fill=(60, 60, 80), font_size=12)
        draw.text((24, y + 14), f"{word(own, 5, 12)} {own.integers(1, 99):02d} {word(own, 3, 9)}", fill=(10, 10, 20),
                  font_size=16)
    for k in range(3):  # the machine-readable zone: the template's prefix and fillers, the holder's numbers
        line = (word(card, 5, 6) + "".join(str(int(c)) for c in own.integers(0, 10, 12))).ljust(28, "<")
        draw.text((30, h - 118 + 34 * k), line, fill=(20, 20, 20), font_size=26)
    dx, dy = (int(v) for v in own.integers(-3, 4, 2))  # never photographed quite the same
    return img.transform(size, Image.Transform.AFFINE, (1, 0, dx, 0, 1, dy), fillcolor=tuple(int(c) for c in tint))


def linked_pairs(report: object, severity: str) -> set[tuple[str, str]]:
    """Pairs of files (sorted paths) in one finding of ``severity`` of a check's report, whatever its kind."""
    out: set[tuple[str, str]] = set()
    for f in getattr(report, "findings", ()):
        if f.severity == severity:
            paths = sorted(m.path for m in f.members)
            out |= {(a, b) for n, a in enumerate(paths) for b in paths[n + 1:]}
    return out
