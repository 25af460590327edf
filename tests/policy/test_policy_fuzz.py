"""Any YAML document gives a `Policy` or a `PolicyError`, never another exception (issue 10, class 7).

Three generators, each a few seconds: text that is mostly not YAML at all, YAML built from
random values under the policy's real keys, and valid policies with one value replaced.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_leakcheck import detectors
from pytest_leakcheck.errors import LeakcheckError
from pytest_leakcheck.policy.load import Policy, load

KEYS = ["version", "root", "splits", "pairs", "detectors", "augmentations", "files", "ignore", "cache", "baseline",
        "executor", "groups", "ungrouped", "group_split", "split_share", "train", "test", "manifest", "coco",
        "metadata", "compare", "within_split", "severity", "bits", "max_distance", "kind", "size", "min_cosine",
        "extensions", "unassigned", "outside_root", "max_pixels", "regex", "folder_depth", "csv", "column", "min",
        "max", "by", *(d.section for d in detectors.registry())]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["all", "off", "error", "train~test", "[z-a]",
                                                                     "**", "../x", "/proc/self/environ", "a" * 300]),
    st.text(max_size=20),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), inner, max_size=4),
                      max_leaves=25)
BASE: dict[str, Any] = {
    "version": 1, "splits": {"train": ["train/**"], "test": ["test/**"]},
    "pairs": {"compare": ["train~test"], "within_split": "warning"},
    "detectors": {"phash": {"severity": "error", "bits": 64, "max_distance": 8}, "thumbnail": {"size": 16}},
    "augmentations": ["hflip"], "files": {"unassigned": "warning", "max_pixels": 1000}, "ignore": ["docs/**"],
    "groups": [{"folder_depth": 1}], "split_share": {"test": {"min": 0.1, "max": 0.5}},
}
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    for name in ("train", "test", "docs"):
        (root / name).mkdir()
    return root


def _load(folder: Path, text: str) -> None:
    path = folder / "leakcheck.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        policy = load(path)
    except LeakcheckError as exc:
        assert str(exc)  # a message, rendered without raising
        return
    assert isinstance(policy, Policy)


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, allow_unicode=True, sort_keys=False)


@FUZZ
@pytest.mark.slow
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
       | st.lists(st.sampled_from(["version: 1\n", "splits:", " {", "}", "[", "]", "&a ", "*a", "<<: ", "- ",
                                   "  ", "\n", ": ", "train", "!!int ", "!!binary ", "? ", "'", '"', "#", "\t"]),
                  max_size=40).map("".join))
def test_any_text_gives_a_policy_or_a_policy_error(folder: Path, text: str) -> None:
    """300 examples of arbitrary text and YAML-ish fragments."""
    _load(folder, text)


@pytest.mark.slow
@FUZZ
@given(value=VALUES)
def test_any_yaml_value_gives_a_policy_or_a_policy_error(folder: Path, value: Any) -> None:
    """300 random YAML documents over the policy's own keys."""
    if isinstance(value, float) and math.isnan(value):
        value = {"version": 1, "splits": value}
    _load(folder, _dump(value))


def _paths(value: Any, at: tuple = ()) -> list[tuple]:
    out = [at]
    if isinstance(value, dict):
        out += [p for k, v in value.items() for p in _paths(v, (*at, k))]
    elif isinstance(value, list):
        out += [p for i, v in enumerate(value) for p in _paths(v, (*at, i))]
    return out


def _replace(value: Any, at: tuple, new: Any) -> Any:
    if not at:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[at[0]] = _replace(copy[at[0]], at[1:], new)
    return copy


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_a_valid_policy_with_one_value_changed_gives_a_policy_or_a_policy_error(folder: Path, data: Any) -> None:
    """300 valid policies with one value (anywhere, of any type) replaced."""
    at = data.draw(st.sampled_from(_paths(BASE)))
    _load(folder, _dump(_replace(BASE, at, data.draw(VALUES))))
