"""The evidence of a same-scene match: the matched keypoints drawn between the two images.

The detector keeps up to 40 inlier point pairs per match in the report
(``stats.same_scene.points``, as fractions of each image's width and height),
so the page needs no OpenCV and no second search: it draws both thumbnails
side by side and a line from each point to its match.
"""

from __future__ import annotations

from PIL import Image, ImageDraw

from ..report.model import Report

#: Line colours, cycled so that neighbouring matches can be told apart.
COLOURS = ((255, 64, 64), (64, 200, 64), (64, 128, 255), (255, 200, 0), (255, 64, 255), (0, 220, 220))


def points_by_pair(report: Report) -> dict[tuple[str, str], list[list[float]]]:
    """(path a, path b) -> inlier points (x_a, y_a, x_b, y_b as fractions), both orders."""
    scene = report.stats.get("same_scene")
    out: dict[tuple[str, str], list[list[float]]] = {}
    if not isinstance(scene, dict):
        return out
    for entry in scene.get("points") or ():
        try:
            a, b, pts = str(entry["a"]), str(entry["b"]), [[float(v) for v in p[:4]] for p in entry["points"]]
        except (KeyError, TypeError, ValueError, IndexError):
            continue  # a hand-edited or foreign JSON report: no picture rather than a failed page
        out[(a, b)] = pts
        out[(b, a)] = [[p[2], p[3], p[0], p[1]] for p in pts]
    return out


def overlay(a: Image.Image, b: Image.Image, points: list[list[float]], height: int) -> Image.Image:
    """Both images at ``height`` pixels, side by side, with a line between each pair of matched points."""
    def fit(img: Image.Image) -> Image.Image:
        w = max(1, round(img.width * height / max(1, img.height)))
        return img.convert("RGB").resize((w, height), Image.Resampling.BILINEAR)

    a, b = fit(a), fit(b)
    gap = 8
    canvas = Image.new("RGB", (a.width + gap + b.width, height), (255, 255, 255))
    canvas.paste(a, (0, 0))
    canvas.paste(b, (a.width + gap, 0))
    draw = ImageDraw.Draw(canvas)
    for n, (xa, ya, xb, yb) in enumerate(points):
        colour = COLOURS[n % len(COLOURS)]
        pa = (xa * a.width, ya * height)
        pb = (a.width + gap + xb * b.width, yb * height)
        draw.line((*pa, *pb), fill=colour, width=1)
        for x, y in (pa, pb):
            draw.ellipse((x - 2, y - 2, x + 2, y + 2), outline=colour)
    return canvas
