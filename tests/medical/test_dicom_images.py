"""DICOM files as images (issue 36): windowed 8 bits for the signals, raw values for identical-pixels,
frames as members, unreadable syntaxes and files without pixels named, the extra's absence exit 2."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import EXIT_USAGE, testing_dicom as td
from pytest_leakcheck.dataset import inventory
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.signals.decode import SignTask, decode, pixel_digest, sign

from ..conftest import write_policy
from .conftest import patient

PACKAGE = str(Path(__file__).resolve().parents[2])
GLOBS = "version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\n"


def _grey(path: Path) -> np.ndarray:
    return np.asarray(decode(path.read_bytes(), 10**8).grey)


def _pixels(path: Path) -> bytes:
    data = path.read_bytes()
    ok, digest = pixel_digest((str(path), 10**8, hashlib.sha256(data).digest()))
    assert ok, digest
    return digest


def test_a_slice_decodes_through_its_window_as_its_png_export_does(tmp_path: Path) -> None:
    hu = td.ct_slice(3)
    dcm = td.write(tmp_path / "a.dcm", hu, patient(1))
    png = td.png_export(hu, tmp_path / "a.png")
    assert np.array_equal(_grey(dcm), _grey(png))
    # Another window shows other grey levels, from the same stored values: identical pixels.
    lung = td.write(tmp_path / "b.dcm", hu, patient(1), window=td.LUNG)
    assert not np.array_equal(_grey(dcm), _grey(lung))
    assert _pixels(dcm) == _pixels(lung) != _pixels(png)
    other = td.write(tmp_path / "c.dcm", td.ct_slice(4), patient(1))
    assert _pixels(other) != _pixels(dcm)


def test_each_frame_of_a_multi_frame_file_is_a_member_decoded_as_its_own_slice(tmp_path: Path) -> None:
    slices = [td.ct_slice(10 + k) for k in range(3)]
    td.write(tmp_path / "train/cine.dcm", np.stack(slices), patient(1))
    td.write(tmp_path / "test/one.dcm", slices[2], patient(2))
    inv = inventory.scan(load(write_policy(tmp_path, GLOBS.replace("val: [val/**], ", ""))))
    assert [r.path for r in inv.records] == [
        "test/one.dcm", "train/cine.dcm#frame=0001", "train/cine.dcm#frame=0002", "train/cine.dcm#frame=0003"]
    out = [sign(SignTask(str(tmp_path / r.path), 10**8, ())) for r in inv.records]
    assert all(ok for _, ok, _ in out), out
    assert len({digest for digest, _, _ in out}) == 4  # one content per frame
    from pytest_leakcheck.files.remote import read_bytes

    greys = [np.asarray(decode(read_bytes(str(tmp_path / r.path)), 10**8).grey) for r in inv.records]
    assert np.array_equal(greys[0], greys[3]) and not np.array_equal(greys[1], greys[3])


def test_a_check_finds_the_frame_copied_into_a_single_file(tmp_path: Path, run_cli) -> None:
    slices = [td.ct_slice(20 + k) for k in range(3)]
    td.write(tmp_path / "train/cine.dcm", np.stack(slices), patient(1))
    td.write(tmp_path / "test/one.dcm", slices[1], patient(2))
    td.write(tmp_path / "test/other.dcm", td.ct_slice(99), patient(3))
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "")
                 + "detectors: {aligned: {severity: 'off'}, same_scene: {severity: 'off'}}\n")
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--format", "json")
    assert code == 1, err
    found = [sorted(m["path"] for m in f["members"]) for f in json.loads(out)["findings"]]
    assert ["test/one.dcm", "train/cine.dcm#frame=0002"] in found


def _syntax_file(tmp_path: Path, uid: str) -> Path:
    return td.write(tmp_path / "x.dcm", td.ct_slice(1), patient(1), syntax=uid)


def test_an_unsupported_syntax_is_unreadable_naming_syntax_and_what_reads_it(tmp_path: Path) -> None:
    path = _syntax_file(tmp_path, "1.2.840.10008.1.2.4.100")  # MPEG2 video: no still-image decoder
    _, ok, failed = sign(SignTask(str(path), 10**8, ()))
    why = failed.why
    assert not ok
    assert "MPEG2 Main Profile / Main Level (1.2.840.10008.1.2.4.100)" in why and "gdcmconv" in why


@pytest.mark.slow
def test_a_syntax_whose_decoder_is_not_installed_names_the_package(tmp_path: Path) -> None:
    """JPEG lossless without pylibjpeg (blocked in a child): the finding names pylibjpeg-libjpeg."""
    path = _syntax_file(tmp_path, "1.2.840.10008.1.2.4.70")
    script = textwrap.dedent(f"""
        import sys
        for m in ("pylibjpeg", "libjpeg", "openjpeg", "gdcm"):
            sys.modules[m] = None
        from pytest_leakcheck.signals.decode import SignTask, sign
        print(sign(SignTask({str(path)!r}, 10**8, ()))[2].why)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": PACKAGE})
    assert run.returncode == 0, run.stderr
    assert "JPEG Lossless" in run.stdout and "1.2.840.10008.1.2.4.70" in run.stdout
    assert "pylibjpeg-libjpeg" in run.stdout and "pytest-leakcheck[dicom]" in run.stdout


def test_a_dicom_file_without_pixels_is_unreadable_saying_so(tmp_path: Path) -> None:
    import pydicom

    path = td.write(tmp_path / "x.dcm", td.ct_slice(1), patient(1))
    ds = pydicom.dcmread(path)
    del ds.PixelData
    ds.save_as(path)
    _, ok, failed = sign(SignTask(str(path), 10**8, ()))
    why = failed.why
    # A CT slice's class: its pixels were cut off (a truncated copy), it is no report.
    assert not ok and "DICOM image without pixel data (CT Image Storage): truncated" in why
    ds.SOPClassUID = "1.2.840.10008.5.1.4.1.1.88.11"  # Basic Text SR: a report has no pixels
    ds.save_as(path)
    _, ok, failed = sign(SignTask(str(path), 10**8, ()))
    assert not ok and "DICOM file without pixel data (Basic Text SR Storage): a report" in failed.why


def test_a_big_endian_copy_is_identical_pixels(tmp_path: Path, run_cli) -> None:
    """pydicom's own MR_small.dcm and MR_small_bigendian.dcm hold the same stored values in two byte
    orders: identical pixels, whatever the perceptual hashes say (held out: once only a near-duplicate)."""
    import shutil

    from pydicom.data import get_testdata_file

    for split, name in (("train", "MR_small.dcm"), ("test", "MR_small_bigendian.dcm")):
        (tmp_path / split).mkdir()
        shutil.copy(get_testdata_file(name, download=False), tmp_path / split / name)
    policy = write_policy(tmp_path, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
                                    "detectors: {phash: {severity: 'off'}, thumbnail: {severity: 'off'}, "
                                    "aligned: {severity: 'off'}, same_scene: {severity: 'off'}}\n")
    code, out, err = run_cli("check", "--policy", str(policy), "--no-cache", "--format", "json")
    assert code == 1, err
    found = [(f["kind"], f["severity"]) for f in json.loads(out)["findings"]]
    assert found == [("identical-pixels", "error")], found


def test_a_slice_over_max_pixels_is_refused_before_its_pixels_are_decoded(tmp_path: Path) -> None:
    path = td.write(tmp_path / "x.dcm", td.ct_slice(1, side=256), patient(1))
    _, ok, failed = sign(SignTask(str(path), 256 * 255, ()))
    why = failed.why
    assert not ok and "decompression bomb" in why and "files.max_pixels" in why


@pytest.mark.slow
def test_without_the_extra_a_dicom_set_is_exit_2_naming_the_extra(tmp_path: Path) -> None:
    td.write(tmp_path / "train/a.dcm", td.ct_slice(1), patient(1))
    td.write(tmp_path / "test/b.dcm", td.ct_slice(2), patient(2))
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", ""))
    script = ("import sys; sys.modules['pydicom'] = None\n"
              "from pytest_leakcheck.cli import main\nsys.exit(main(['check']))")
    for text in (None, GLOBS.replace("val: [val/**], ", "") + "groups: [{dicom: PatientID}]\n"):
        if text:
            write_policy(tmp_path, text)
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path, env={**os.environ, "PYTHONPATH": PACKAGE})
        assert run.returncode == EXIT_USAGE, run.stderr
        assert "pip install 'pytest-leakcheck[dicom]'" in run.stderr
        assert "Traceback" not in run.stderr


def test_files_named_by_uid_alone_are_read_when_their_bytes_are_dicom(tmp_path: Path, run_cli) -> None:
    """Exports name files by UID (a numeric last part) or not at all: listed by their bytes, frames too;
    other files without a suffix are not listed."""
    td.write(tmp_path / "train/IM000001", td.ct_slice(1), patient(1))
    td.write(tmp_path / "train/1.2.840.113619.2.55.3.6046.320", np.stack([td.ct_slice(2), td.ct_slice(3)]),
             patient(1))
    td.write(tmp_path / "test/1.2.840.113619.2.55.3.6046.321", td.ct_slice(3), patient(2))
    (tmp_path / "train/README").write_text("not an image")
    code, out, err = run_cli("init", str(tmp_path))
    assert code == 0, err
    assert "2 images in train" in out  # files: a multi-frame file is one here
    inv = inventory.scan(load(tmp_path / "leakcheck.yaml"))
    assert [r.path for r in inv.records] == [
        "test/1.2.840.113619.2.55.3.6046.321", "train/1.2.840.113619.2.55.3.6046.320#frame=0001",
        "train/1.2.840.113619.2.55.3.6046.320#frame=0002", "train/IM000001"]
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "")
                 + "detectors: {aligned: {severity: 'off'}, same_scene: {severity: 'off'}}\n")
    code, out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--format", "json")
    assert code == 1, err
    found = [sorted(m["path"] for m in f["members"]) for f in json.loads(out)["findings"]]
    assert ["test/1.2.840.113619.2.55.3.6046.321", "train/1.2.840.113619.2.55.3.6046.320#frame=0002"] in found


def test_the_hook_checks_every_frame_of_a_staged_multi_frame_file(tmp_path: Path, run_cli, monkeypatch) -> None:
    """A commit adding a cine to test whose second frame is a train slice is rejected; so is one
    adding a slice named by UID alone."""
    td.write(tmp_path / "train/a.dcm", td.ct_slice(30), patient(1))
    td.write(tmp_path / "train/b.dcm", td.ct_slice(31), patient(1))
    td.write(tmp_path / "test/c.dcm", td.ct_slice(32), patient(2))
    write_policy(tmp_path, GLOBS.replace("val: [val/**], ", "")
                 + "detectors: {aligned: {severity: 'off'}, same_scene: {severity: 'off'}}\n")
    monkeypatch.chdir(tmp_path)
    assert run_cli("check")[0] == 0
    td.write(tmp_path / "test/cine.dcm", np.stack([td.ct_slice(40), td.ct_slice(30)]), patient(2))
    code, out, err = run_cli("hook", "test/cine.dcm")
    assert code == 1, out + err
    assert "cine.dcm#frame=0002" in out
    (tmp_path / "test/cine.dcm").unlink()
    td.write(tmp_path / "test/1.2.3.4.5.6", td.ct_slice(31), patient(2))
    code, out, err = run_cli("hook", "test/1.2.3.4.5.6")
    assert code == 1 and "test/1.2.3.4.5.6" in out, out + err
