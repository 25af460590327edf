"""Issue 10, class 6: the policy cannot make leakcheck read, or print, files outside its folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_leakcheck.validate import ALLOW_ENV
from pytest_leakcheck.errors import EXIT_USAGE, PolicyError
from pytest_leakcheck.files.names import EXCERPT_CHARS, excerpt
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.testing import photo, save

GLOBS = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"
#: key -> policy naming a file in ../outside (which exists), and the key the refusal names.
ESCAPES = {
    "root": ("version: 1\nroot: ../outside\nsplits: {train: [train/**]}\n", "root"),
    "root_absolute": ("version: 1\nroot: {outside}\nsplits: {train: [train/**]}\n", "root"),
    "manifest": ("version: 1\nsplits: {manifest: ../outside/splits.csv}\n", "splits.manifest"),
    "manifest_absolute": ("version: 1\nsplits: {manifest: {outside}/splits.csv}\n", "splits.manifest"),
    "manifest_via_link": ("version: 1\nsplits: {manifest: link.csv}\n", "splits.manifest"),
    "group_csv": (GLOBS + "groups: [{csv: ../outside/groups.csv, column: group}]\n", "groups.0.csv"),
    "group_coco": (GLOBS + "groups: [{coco: ../outside/coco.json, field: video}]\n", "groups.0.coco"),
    "coco_split": ("version: 1\nsplits: {coco: {train: ../outside/coco.json}}\n", "splits.coco.train.file"),
    "baseline": (GLOBS + "baseline: ../outside/baseline.yaml\n", "baseline"),
}


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    save(photo(1), repo / "train/a.jpg")
    save(photo(2), repo / "test/b.jpg")
    save(photo(3), outside / "train/c.jpg")
    (outside / "splits.csv").write_text("path,split\ntrain/a.jpg,train\n")
    (outside / "groups.csv").write_text("path,group\ntrain/a.jpg,g\n")
    (outside / "coco.json").write_text(json.dumps({"images": [{"file_name": "train/a.jpg", "video": 1}]}))
    (outside / "baseline.yaml").write_text("version: 2\nfindings: {}\n")
    (repo / "link.csv").symlink_to(outside / "splits.csv")
    return repo, outside


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_paths_leaving_the_policy_folder_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     case: str) -> None:
    """Root, manifest, group sources, COCO files and the baseline resolve (links followed) inside the
    policy's folder; elsewhere only when the environment opts in, which a pull request cannot do."""
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    repo, outside = _repo(tmp_path)
    text, key = ESCAPES[case]
    path = repo / "leakcheck.yaml"
    path.write_text(text.replace("{outside}", str(outside)))
    with pytest.raises(PolicyError) as caught:
        load(path)
    assert caught.value.key == key
    assert "outside the policy's folder" in caught.value.problem
    assert ALLOW_ENV in (caught.value.fix or "")
    monkeypatch.setenv(ALLOW_ENV, str(outside))
    assert load(path).path == path  # the explicit opt-out


def _run(policy: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_leakcheck", "check", "--policy", str(policy), "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.slow
def test_proc_environ_is_neither_read_nor_printed(tmp_path: Path) -> None:
    """`splits: {manifest: /proc/self/environ}`, directly or through a link: exit 2, no secret in the output."""
    secret = "s3cr3t-" + os.urandom(8).hex()
    repo, _ = _repo(tmp_path)
    (repo / "env.csv").symlink_to("/proc/self/environ")
    # The filler comes first in the environment: with the opt-out, only an excerpt of it may show.
    env = {"FILLER": "x" * 200, **os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "LEAK_SECRET": secret}
    env.pop(ALLOW_ENV, None)
    for manifest in ("/proc/self/environ", "env.csv"):
        policy = repo / "leakcheck.yaml"
        policy.write_text(f"version: 1\nsplits: {{manifest: {manifest}}}\n")
        done = _run(policy, env)
        assert done.returncode == EXIT_USAGE, done.stderr
        assert "`splits.manifest`" in done.stderr and "outside the policy's folder" in done.stderr
        assert secret not in done.stdout + done.stderr
    done = _run(policy, {**env, ALLOW_ENV: "/proc"})  # opted in: read, but quoted at most as an excerpt
    assert done.returncode == EXIT_USAGE, done.stderr
    assert secret not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_excerpt_is_short_escaped_and_quoted(tmp_path: Path, run_cli) -> None:
    """A bad manifest header is quoted as at most 60 characters, control characters escaped, in quotes."""
    tail_marker = "TAIL-MARKER-" + "y" * 20
    header = "\x1b[31mred," + "::error::x," + "c" * 5000 + "," + tail_marker
    save(photo(1), tmp_path / "train/a.jpg")
    (tmp_path / "splits.csv").write_text(header + "\ntrain/a.jpg,train\n")
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits: {manifest: splits.csv}\n")
    code, _out, err = run_cli("check", "--policy", str(tmp_path / "leakcheck.yaml"), "--no-cache")
    assert code == EXIT_USAGE
    assert "no `path` column" in err
    assert tail_marker not in err and "c" * (EXCERPT_CHARS + 1) not in err
    assert "\x1b" not in err and "'\\x1b[31mred, ::error::x, ccc" in err and "…'" in err
    assert len(err) < 600
    # The helper itself: short text unchanged but quoted, long text cut, non-text as its repr.
    assert excerpt("abc") == "'abc'"
    assert excerpt("a\nb" * 100) == "'" + ("a\\nb" * 20) + "…'"
    assert excerpt(64.0) == "64.0" and excerpt([1] * 100).endswith("…")


class _Counting:
    """An HTTP server on loopback that counts connections and would answer with a secret."""

    def __init__(self) -> None:
        import socket
        import threading

        self.connections = 0
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 26\r\n\r\npath,split\nSECRET-TOKEN,x\n")
            conn.close()


@pytest.mark.parametrize("template", [
    "version: 1\nsplits: {{manifest: 'http://127.0.0.1:{port}/splits.csv'}}\n",
    "version: 1\nroot: 'http://127.0.0.1:{port}/data'\nsplits: {{train: [train/**]}}\n",
    GLOBS.replace("{", "{{").replace("}", "}}") + "groups: [{{csv: 'http://127.0.0.1:{port}/groups.csv', column: group}}]\n",
    "version: 1\nsplits: {{manifest: 'file://link.csv'}}\n",
    "version: 1\nsplits: {{manifest: 'file:///{outside}/splits.csv'}}\n",
    "version: 1\nsplits: {{manifest: 's3://bucket/splits.csv'}}\n",
], ids=["http-manifest", "http-root", "http-group-csv", "file-url-link", "file-url-absolute", "s3-not-enabled"])
def test_a_policy_url_contacts_no_host_and_reads_nothing_outside(tmp_path: Path, template: str, run_cli,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22, class 2: which hosts the check contacts is the owner's choice (LEAKCHECK_ALLOW_REMOTE);
    a policy URL of any scheme, or a file:// URL through a link, is refused before anything is read."""
    monkeypatch.delenv("LEAKCHECK_ALLOW_REMOTE", raising=False)
    repo, outside = _repo(tmp_path)
    (outside / "splits.csv").write_text("path,split\nSECRET-TOKEN,train\n")
    server = _Counting()
    try:
        (repo / "leakcheck.yaml").write_text(template.format(port=server.port, outside=outside))
        with pytest.raises(PolicyError) as info:
            load(repo / "leakcheck.yaml")
        code, out, err = run_cli("check", "--policy", str(repo / "leakcheck.yaml"))
    finally:
        server.server.close()
    assert code == EXIT_USAGE
    assert server.connections == 0
    assert "SECRET-TOKEN" not in str(info.value) + out + err
    assert "LEAKCHECK_ALLOW_REMOTE" in str(info.value) or "local paths" in str(info.value)
