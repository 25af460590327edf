"""Datasets laid out as users keep them, each with planted copies and one subject split (issue 25).

One set of pictures, written as an ImageFolder tree, COCO, a Kaggle-style
``labels.csv``, a Hugging Face imagefolder with per-split ``metadata.jsonl``,
YOLO, Hugging Face Parquet shards (written by ``datasets``) and WebDataset tar
shards (written by ``webdataset``).  Subjects have two shots each; subject 3
has a third shot in the other split; seven test images are copies of train
images made as ``COPIES`` says.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from pytest_leakcheck.testing import cropped, photo, resized, save

#: Planted copy -> how it is made from the train image.
COPIES: dict[str, Callable[[Image.Image], Image.Image | None]] = {
    "bytes": lambda img: None,  # the very same file
    "jpeg_q60": lambda img: img,  # re-saved at quality 60 below
    "hflip": lambda img: img.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
    "upscale2x": lambda img: resized(img, 2.0),
    "crop10": lambda img: cropped(img, 0.10),
    "rot90": lambda img: img.transpose(Image.Transpose.ROTATE_90),
    "grey": lambda img: img.convert("L"),
}
TRAIN_SUBJECTS = 15
TEST_SUBJECTS = range(20, 25)
SPLIT_SUBJECT = 3


@dataclass(frozen=True)
class Shot:
    name: str  # subject-03_frame001.jpg
    split: str
    subject: str
    label: str
    data: bytes
    copy_of: str | None = None  # the name of the train shot it copies, for planted copies
    how: str = ""


def _jpeg(img: Image.Image, quality: int = 92) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def shots(test_split: str = "test") -> list[Shot]:
    out: list[Shot] = []
    for s in range(TRAIN_SUBJECTS):
        for k in range(2):
            seed = 2 * s + k
            out.append(Shot(f"subject-{s:02d}_frame{k:03d}.jpg", "train", f"S{s:02d}", ("cat", "dog")[s % 2],
                            _jpeg(photo(seed))))
    for s in TEST_SUBJECTS:
        for k in range(2):
            out.append(Shot(f"subject-{s:02d}_frame{k:03d}.jpg", test_split, f"S{s:02d}", ("cat", "dog")[s % 2],
                            _jpeg(photo(1000 + 2 * s + k))))
    # The subject split: a third, different shot of subject 3, in the other split.
    out.append(Shot(f"subject-{SPLIT_SUBJECT:02d}_frame009.jpg", test_split, f"S{SPLIT_SUBJECT:02d}", "dog",
                    _jpeg(photo(777))))
    train = out[: 2 * TRAIN_SUBJECTS]
    for n, (how, make) in enumerate(COPIES.items()):
        src = train[2 * n + 1]  # one copy per subject 0..6, never subject 3's split shot
        img = Image.open(io.BytesIO(src.data)).convert("RGB")
        made = make(img)
        data = src.data if made is None else _jpeg(made, 60 if how == "jpeg_q60" else 90)
        out.append(Shot(f"subject-{30 + n:02d}_frame000.jpg", test_split, f"S{30 + n:02d}", src.label, data,
                        src.name, how))
    return out


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path.as_posix()


def imagefolder(root: Path) -> dict[str, str]:
    """train/<class>/<name>, test/<class>/<name>; returns name -> path relative to root."""
    return {s.name: _rel(root, _write(root / s.split / s.label / s.name, s.data)) for s in shots()}


def coco(root: Path) -> dict[str, str]:
    found = {s.name: _rel(root, _write(root / "images" / s.name, s.data)) for s in shots()}
    for split in ("train", "test"):
        images = [{"id": i, "file_name": s.name, "width": 160, "height": 120}
                  for i, s in enumerate(shots()) if s.split == split]
        (root / "annotations").mkdir(exist_ok=True)
        (root / f"annotations/instances_{split}.json").write_text(
            json.dumps({"images": images, "annotations": [], "categories": []}))
    return found


def kaggle(root: Path) -> dict[str, str]:
    """``labels.csv`` with filename,label,split; names relative to images/."""
    found = {s.name: _rel(root, _write(root / "images" / s.name, s.data)) for s in shots()}
    (root / "labels.csv").write_text("filename,label,split\n" + "".join(
        f"{s.name},{s.label},{s.split}\n" for s in shots()))
    return found


def kaggle_split_tables(root: Path) -> dict[str, str]:
    """``train.csv`` and ``test.csv`` with image,class; names relative to imgs/."""
    found = {s.name: _rel(root, _write(root / "imgs" / s.name, s.data)) for s in shots()}
    for split in ("train", "test"):
        (root / f"{split}.csv").write_text("image,class\n" + "".join(
            f"{s.name},{s.label}\n" for s in shots() if s.split == split))
    return found


def opaque(s: Shot, n: int) -> str:
    """A file name that says nothing about the subject: the group must come from a column."""
    return f"{n:05d}.jpg"


def hf_imagefolder(root: Path) -> dict[str, str]:
    """train/ and test/ with a metadata.jsonl each: file_name, label, subject_id."""
    found = {}
    lines: dict[str, list[str]] = {"train": [], "test": []}
    for n, s in enumerate(shots()):
        name = opaque(s, n)
        found[s.name] = _rel(root, _write(root / s.split / name, s.data))
        lines[s.split].append(json.dumps({"file_name": name, "label": s.label, "subject_id": s.subject}))
    for split, rows in lines.items():
        (root / split / "metadata.jsonl").write_text("\n".join(rows) + "\n")
    return found


def yolo(root: Path) -> dict[str, str]:
    """images/train, images/val, labels/..., data.yaml with `path: .`."""
    found = {}
    for s in shots(test_split="val"):
        found[s.name] = _rel(root, _write(root / "images" / s.split / s.name, s.data))
        _write(root / "labels" / s.split / (s.name.rsplit(".", 1)[0] + ".txt"), b"0 0.5 0.5 0.2 0.2\n")
    (root / "data.yaml").write_text("path: /home/someone/datasets/mine\ntrain: images/train\nval: images/val\n"
                                    "names:\n  0: thing\n")
    return found


def hf_parquet_named(root: Path, scratch: Path | None = None) -> dict[str, str]:
    """Parquet shards without a subject column: the image names carry the subject."""
    return hf_parquet(root, scratch, named=True)


def hf_parquet(root: Path, scratch: Path | None = None, named: bool = False) -> dict[str, str]:
    """data/train-00000-of-00001.parquet, data/test-...: image (Image feature), label, subject_id; via datasets."""
    from datasets import Dataset, Features, Value
    from datasets import Image as HFImage

    found = {}
    columns = {"image": HFImage(), "label": Value("string"), **({} if named else {"subject_id": Value("string")})}
    for split in ("train", "test"):
        mine = [s for s in shots() if s.split == split]
        # Embedded as the Hub stores them: {bytes, path} per row.
        images = [{"bytes": s.data, "path": s.name if named else opaque(s, n)} for n, s in enumerate(mine)]
        values = {"image": images, "label": [s.label for s in mine]}
        if not named:
            values["subject_id"] = [s.subject for s in mine]
        ds = Dataset.from_dict(values, features=Features(columns))
        out = root / f"data/{split}-00000-of-00001.parquet"
        out.parent.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(out))
        width = max(6, len(str(len(mine) - 1)))
        found.update({s.name: f"data/{split}-00000-of-00001.parquet#row={n:0{width}d}/"
                      f"{s.name if named else opaque(s, n)}" for n, s in enumerate(mine)})
    return found


def hf_save_to_disk(root: Path, scratch: Path | None = None) -> dict[str, str]:
    """``DatasetDict.save_to_disk``: train/data-00000-of-00001.arrow, test/...; image, label, subject_id."""
    from datasets import Dataset, DatasetDict, Features, Value
    from datasets import Image as HFImage

    features = Features({"image": HFImage(), "label": Value("string"), "subject_id": Value("string")})
    parts, found = {}, {}
    for split in ("train", "test"):
        mine = [s for s in shots() if s.split == split]
        parts[split] = Dataset.from_dict({"image": [{"bytes": s.data, "path": opaque(s, n)} for n, s in enumerate(mine)],
                                          "label": [s.label for s in mine], "subject_id": [s.subject for s in mine]},
                                         features=features)
        found.update({s.name: f"{split}/data-00000-of-00001.arrow#row={n:06d}/{opaque(s, n)}"
                      for n, s in enumerate(mine)})
    DatasetDict(parts).save_to_disk(str(root))
    return found


def webdataset(root: Path) -> dict[str, str]:
    """shards/train-000000.tar, shards/test-000000.tar: <key>.jpg, <key>.cls, <key>.json; via webdataset."""
    import webdataset as wds

    found = {}
    (root / "shards").mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        shard = f"shards/{split}-000000.tar"
        with wds.TarWriter(str(root / shard)) as sink:
            for s in (s for s in shots() if s.split == split):
                key = s.name.rsplit(".", 1)[0]
                sink.write({"__key__": key, "jpg": s.data, "cls": s.label.encode(),
                            "json": json.dumps({"subject_id": s.subject}).encode()})
                found[s.name] = f"{shard}#{key}.jpg"
    return found


def _rel(root: Path, path: str) -> str:
    return Path(path).relative_to(root).as_posix()


LAYOUTS: dict[str, Callable[..., dict[str, str]]] = {
    "imagefolder": imagefolder, "coco": coco, "kaggle": kaggle, "kaggle_split_tables": kaggle_split_tables,
    "hf_imagefolder": hf_imagefolder, "yolo": yolo,
    "hf_parquet": hf_parquet, "hf_parquet_named": hf_parquet_named, "hf_save_to_disk": hf_save_to_disk,
    "webdataset": webdataset,
}


def build(kind: str, root: Path, scratch: Path) -> dict[str, str]:
    """Write layout ``kind`` under root; name of each shot -> its path in findings."""
    make = LAYOUTS[kind]
    return make(root, scratch) if kind.startswith("hf_") and kind != "hf_imagefolder" else make(root)


def planted() -> list[tuple[str, str, str]]:
    """(how, copy's name, original's name) of every planted copy."""
    return [(s.how, s.name, s.copy_of) for s in shots() if s.copy_of is not None]


def imagenet(root: Path) -> None:
    """A clean ImageNet-style tree: synset folders and synset-prefixed names, the same synsets under val/."""
    synsets = ["n01440764", "n01443537", "n01484850", "n01491361"]
    for c, synset in enumerate(synsets):
        for k in range(5):
            save(photo(100 * c + k), root / f"train/{synset}/{synset}_{10026 + k}.JPEG", quality=90)
        for k in range(2):
            save(photo(5000 + 100 * c + k), root / f"val/{synset}/ILSVRC2012_val_{c:04d}{k:04d}.JPEG", quality=90)
        save(photo(7000 + c), root / f"val/{synset}/{synset}_{20000 + c}.JPEG", quality=90)


def numbered_shards(root: Path) -> None:
    """A clean tree sharded into numbered folders that every split has: train/000/, test/000/, ..."""
    for shard in range(3):
        for k in range(4):
            save(photo(300 + 10 * shard + k), root / f"train/{shard:03d}/img_{shard * 4 + k:06d}.jpg", quality=90)
        for k in range(2):
            save(photo(900 + 10 * shard + k), root / f"test/{shard:03d}/img_{100 + shard * 2 + k:06d}.jpg",
                 quality=90)


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
