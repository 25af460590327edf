"""The composite Action: metadata validates, and its run steps work in a simulated runner.

No Docker engine or runner is available here, so the test plays the runner:
it executes each ``run:`` step of action.yml in order with bash, the step's
``env:`` (expressions resolved from simulated contexts) and fresh
GITHUB_OUTPUT / GITHUB_PATH files, and simulates the ``uses:`` steps.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pytest
import yaml

from ..gitrepo import add_clean, add_leak, commit_all, dataset_repo, git

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent.parent / "data"
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def test_action_yml_validates_against_the_metadata_schema() -> None:
    """action.yml is valid Action metadata (SchemaStore's github-action schema)."""
    schema = json.loads((DATA / "github-action.schema.json").read_text())
    jsonschema.validate(ACTION, schema)
    assert ACTION["runs"]["using"] == "composite"


def test_run_steps_name_a_shell_and_never_paste_expressions() -> None:
    """Every run step has `shell:`, and inputs reach scripts only through env."""
    runs = [s for s in ACTION["runs"]["steps"] if "run" in s]
    assert runs
    for step in runs:
        assert step.get("shell") == "bash", step.get("name")
        assert "${{" not in step["run"], step.get("name")


@dataclass
class Run:
    outputs: dict[str, str]
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    stdout: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    failed: tuple[str, int] | None = None
    uploaded: list[str] = field(default_factory=list)
    cache_paths: list[str] = field(default_factory=list)


def _resolve(text: str, ctx: dict) -> str:
    def one(m: re.Match) -> str:
        value: object = ctx
        for part in m.group(1).split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return str(value)

    return _EXPR.sub(one, str(text))


def _read_kv(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


def run_action(workspace: Path, tmp: Path, *, event: dict, event_name: str, sha: str,
               inputs: dict[str, str] | None = None) -> Run:
    """Play the runner: run steps in order, stop at the first that fails."""
    defaults = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    ctx: dict = {
        "inputs": {**defaults, **(inputs or {})},
        "github": {"action_path": str(REPO), "sha": sha, "event_name": event_name},
        "steps": {},
    }
    tmp.mkdir(parents=True, exist_ok=True)
    event_path = tmp / "event.json"
    event_path.write_text(json.dumps(event))
    summary = tmp / "summary.md"
    summary.write_text("")
    runner_temp = tmp / "runner"
    runner_temp.mkdir(exist_ok=True)
    extra_path: list[str] = []
    result = Run(outputs={})
    base_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "GITHUB_WORKSPACE": str(workspace), "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_EVENT_NAME": event_name, "GITHUB_SHA": sha, "GITHUB_REPOSITORY": "octo/data",
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(runner_temp), "RUNNER_OS": "Linux",
    }
    for n, step in enumerate(ACTION["runs"]["steps"]):
        sid = step.get("id", f"step{n}")
        if "uses" in step:
            with_ = {k: _resolve(v, ctx) for k, v in (step.get("with") or {}).items()}
            if step["uses"].startswith("actions/setup-python"):
                extra_path.insert(0, os.path.dirname(sys.executable))  # this interpreter
            elif step["uses"].startswith("actions/cache"):
                result.cache_paths.append(with_["path"])  # no-op: the store stays on disk
            elif step["uses"].startswith("actions/upload-artifact"):
                result.uploaded = [p for p in with_["path"].split("\n") if p]
            continue
        if sid == "install":
            # Installing would replace this editable install; the venv's bin already has
            # `leakcheck`.  Check the script parses, and put that bin on PATH as it would.
            subprocess.run(["bash", "-n"], input=step["run"], text=True, check=True)
            extra_path.insert(0, os.path.dirname(sys.executable))
            continue
        output, path_file = tmp / f"out_{n}", tmp / f"path_{n}"
        output.write_text("")
        path_file.write_text("")
        env = {**base_env, "GITHUB_OUTPUT": str(output), "GITHUB_PATH": str(path_file),
               "PATH": os.pathsep.join([*extra_path, os.environ["PATH"]])}
        env.update({k: _resolve(v, ctx) for k, v in (step.get("env") or {}).items()})
        script = tmp / f"step_{n}.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=workspace, env=env, capture_output=True, text=True)
        result.stdout[sid] = proc.stdout
        ctx["steps"][sid] = {"outputs": _read_kv(output)}
        extra_path[:0] = path_file.read_text().split()
        if proc.returncode != 0:
            result.failed = (sid, proc.returncode)
            result.stdout[sid] += proc.stderr
            break
    result.outputs = {k: _resolve(v["value"], ctx) for k, v in ACTION["outputs"].items()}
    result.steps = {k: v["outputs"] for k, v in ctx["steps"].items()}
    result.summary = summary.read_text()
    return result


def _pr_event(base: str, head: str) -> dict:
    return {"pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": head}}}


@pytest.fixture
def pr_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """main with a leak already in it; branch pr adds a new leak and a clean image."""
    repo = tmp_path / "ws"
    base = dataset_repo(repo, base_leak=True)
    add_leak(repo)
    add_clean(repo)
    head = commit_all(repo, "more images")
    return repo, base, head


@pytest.mark.slow
def test_pull_request_run(pr_repo, tmp_path: Path) -> None:
    """A PR adding a leak: outputs, summary, annotations and SARIF; the action fails."""
    repo, base, head = pr_repo
    run = run_action(repo, tmp_path, event=_pr_event(base, head), event_name="pull_request", sha=head)
    assert run.failed == ("verdict", 1), run.stdout
    assert run.outputs["findings"] == "2"
    assert run.outputs["new-findings"] == "1"
    assert run.steps["prep"]["base"] == base
    assert run.cache_paths and all(p == str(repo / ".leakcheck") for p in run.cache_paths)
    # The summary: verdict, counts, and thumbnails from the PR head in the repository.
    assert "1 new error-level finding; 1 already on the base branch" in run.summary
    assert f"https://github.com/octo/data/blob/{head}/test/new_leak.jpg?raw=true" in run.summary
    # Annotations: the new leak first, on the test copy, then the one already on main.
    notes = [line for line in run.stdout["check"].splitlines() if line.startswith("::")]
    assert notes[0].startswith("::error file=test/new_leak.jpg,title=leakcheck near-duplicate::")
    assert notes[1].startswith("::error file=test/old_leak.jpg,title=leakcheck identical-file (already on base)::")
    # SARIF and JSON report exist, are uploaded, and the SARIF validates.
    report = Path(run.outputs["report-path"])
    assert json.loads(report.read_text())["stats"]["search"] == "full"
    sarif = Path(run.steps["check"]["sarif-path"])
    assert sorted(run.uploaded) == sorted([str(report), str(sarif)])
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(json.loads(sarif.read_text()), schema)


@pytest.mark.slow
def test_push_run_then_pull_request_uses_the_base_report(pr_repo, tmp_path: Path) -> None:
    """A push to main saves its full report with the store; a PR on it searches only its changes."""
    repo, base, head = pr_repo
    git(repo, "checkout", "-q", "main")
    push = run_action(repo, tmp_path / "push", event={}, event_name="push", sha=base)
    assert push.failed == ("verdict", 1)  # main already leaks, and a full check fails on it
    assert (repo / ".leakcheck/reports" / f"{base}.json").is_file()
    git(repo, "checkout", "-q", "pr")
    pr = run_action(repo, tmp_path / "pr", event=_pr_event(base, head), event_name="pull_request", sha=head)
    report = json.loads(Path(pr.outputs["report-path"]).read_text())
    assert report["stats"]["search"] == "focused"
    assert (pr.outputs["findings"], pr.outputs["new-findings"]) == ("2", "1")


@pytest.mark.slow
def test_clean_pull_request_passes_with_existing_leak(pr_repo, tmp_path: Path) -> None:
    """fail-on new: a PR that brings no leak passes even though main has one."""
    repo, base, _ = pr_repo
    git(repo, "reset", "-q", "--hard", "main")
    add_clean(repo)
    head = commit_all(repo, "clean only")
    run = run_action(repo, tmp_path, event=_pr_event(base, head), event_name="pull_request", sha=head)
    assert run.failed is None, run.stdout
    assert (run.outputs["findings"], run.outputs["new-findings"]) == ("1", "0")
    assert "no new error-level findings" in run.summary


def test_bad_input_is_rejected_before_running(pr_repo, tmp_path: Path) -> None:
    """fail-on must be new or all; the prep step stops with an error annotation."""
    repo, base, head = pr_repo
    evil = "all; touch pwned"
    run = run_action(repo, tmp_path, event=_pr_event(base, head), event_name="pull_request",
                     sha=head, inputs={"fail-on": evil})
    assert run.failed == ("prep", 2)
    assert "::error title=leakcheck::input fail-on must be new or all" in run.stdout["prep"]
    assert not (repo / "pwned").exists()


def test_dogfood_workflow_runs_this_action_on_the_examples() -> None:
    """.github/workflows runs `uses: ./` on examples/, and is a valid workflow."""
    workflow = yaml.safe_load((REPO / ".github/workflows/leakcheck.yml").read_text())
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as a boolean
    jsonschema.validate(workflow, json.loads((DATA / "github-workflow.schema.json").read_text()))
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    ours = [s for s in steps if s.get("uses") == "./"]
    assert len(ours) == 1
    assert (REPO / ours[0]["with"]["policy"]).is_file()
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0
