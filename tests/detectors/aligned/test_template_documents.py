"""Documents of one printed template held at warning (``aligned.holds.documents``), copies kept."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_leakcheck.detectors import aligned
from pytest_leakcheck.detectors.aligned import hires, pairs
from pytest_leakcheck.detectors.aligned.descriptors import describe
from pytest_leakcheck.detectors.aligned.families import HIRES_FAMILY
from pytest_leakcheck.search.kernels import Match
from pytest_leakcheck.signals.decode import COLOUR, decode
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import id_card, photo, save, scene, view

#: A set whose look-alike neighbours are themselves near-identical (``prado`` of
#: ``benchmarks/field.py``: each template's other documents, level 0.9968 + hair over 1), so the
#: look-alike level binds nothing and a hash match is held to the impostors' floor only.
LEVELS = {"threshold": 0.80, "error_threshold": 0.9968, "within_threshold": 0.83, "within_error_threshold": 0.9968,
          "hash_error_threshold": 0.85, "within_hash_error_threshold": 0.86, "neighbour_level": 0.9968,
          "small_sample": True, "hair": 0.01}


def _files(root: Path) -> list[str]:
    """Two cards of one template (other holders), a card re-saved, two fronts, two shots of a burst:
    the files of the matches of :func:`_refined`, each a (train, test) pair."""
    save(id_card(3, 1), root / "train/card.jpg", quality=92)
    save(id_card(3, 2), root / "test/sibling.jpg", quality=92)
    save(id_card(3, 1), root / "test/resaved.jpg", quality=75)
    save(id_card(5, 7), root / "train/front.jpg", quality=92)  # a front: the holder's portrait too
    save(id_card(5, 8, portrait=True), root / "test/front.jpg", quality=92)
    big = scene(4)
    save(view(big, 40, 30), root / "train/shot.jpg", quality=92)
    # The next shot of a burst, the camera turned a little: its 288 px residual (3.98) says "differs" too.
    save(view(big, 44, 32, tilt=20), root / "test/shot.jpg", quality=92)
    return ["train/card.jpg", "test/sibling.jpg", "train/card.jpg", "test/resaved.jpg", "train/front.jpg",
            "test/front.jpg", "train/shot.jpg", "test/shot.jpg"]


def _refined(monkeypatch: pytest.MonkeyPatch, root: Path, hits: list[Match]) -> list[tuple[int, int, str, bool]]:
    """``refine`` of ``hits`` between the files of :func:`_files`, each scoring 0.99 at 32 px (an
    error-level hash match): (i, j, detector, weak) of what is kept."""
    paths = _files(root)
    monkeypatch.setattr(pairs, "prepare", lambda *args, **kwargs: None)
    monkeypatch.setattr(pairs, "pair_scores", lambda data, i, j, *a, **k: np.full(len(i), 0.99))
    n = len(paths)
    digests = tuple(bytes([k]) * 32 for k in range(n))
    decoded = [decode((root / p).read_bytes(), 10**8, COLOUR) for p in paths]
    grey32 = np.stack([describe(np.asarray(d.colour))["grey32"].reshape(-1) for d in decoded])
    run = SimpleNamespace(
        stats={"aligned": dict(LEVELS)}, root=root, paths=tuple(paths), max_pixels=10**8,
        sigs=SimpleNamespace(valid=np.ones(n, bool), digests=digests,
                            arrays={"desc:grey32": grey32, "fine": np.ones((n, 1), np.uint8)}),  # each a fine square
        orientations=("identity", "hflip"), split_of=("train", "test") * (n // 2), focus=None, memo={}, groups=None)
    with open_store(None) as run.store:
        run.store.put_signatures((dg, HIRES_FAMILY.name, HIRES_FAMILY.params, True, hires.row(d, HIRES_FAMILY))
                                 for dg, d in zip(digests, decoded))
        got = aligned.DETECTOR.refine(run, aligned.AlignedSettings(), hits)  # type: ignore[arg-type]
    return [(m.i, m.j, m.detector, m.weak) for m in got]


@pytest.mark.slow
def test_documents_of_one_template_are_warnings_a_resaved_copy_an_error(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two specimen cards of one template (same ground and labels, another holder's entries and MRZ;
    two fronts with another portrait) match by hash at a 32 px score over every level: warnings.
    The card re-saved as a lower-quality JPEG stays an error, and so does the next frame of a photo
    burst, which differs from its partner as much but is no document (``prado``'s siblings and
    ``eggs``' bursts of ``benchmarks/field.py``)."""
    hits = [Match(0, 1, "thumbnail", 0.98), Match(2, 3, "phash", 0.0), Match(4, 5, "phash", 2.0),
            Match(6, 7, "thumbnail", 0.97)]
    got = _refined(monkeypatch, tmp_path, hits)
    assert got == [(0, 1, "thumbnail", True), (2, 3, "phash", False), (4, 5, "phash", True),
                   (6, 7, "thumbnail", False)]


def test_the_document_test_fires_on_cards_and_not_on_photos() -> None:
    """Cards are documents by their 96 px square; the synthetic photos and scenes are not."""
    from pytest_leakcheck.detectors.aligned.holds import documents

    def fine(img: object) -> np.ndarray:
        import io
        out = io.BytesIO()
        img.save(out, "JPEG", quality=92)  # type: ignore[attr-defined]
        return hires.square(hires.row(decode(out.getvalue(), 10**8, COLOUR), None))  # type: ignore[arg-type]

    cards = np.stack([fine(id_card(t, s)) for t, s in ((0, 1), (1, 2), (2, 3))])
    photos = np.stack([fine(photo(s, (640, 480))) for s in range(3)] + [fine(view(scene(1), 20, 10))])
    assert documents.documents(cards).all()
    assert not documents.documents(photos).any()
