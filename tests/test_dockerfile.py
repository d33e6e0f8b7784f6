"""The Dockerfile's references hold (docker cannot run here): every COPY source from the build context exists, is
tracked, and survives .dockerignore; the entry point is a console script of pyproject.toml that resolves; the
final stage installs from the builder's wheels only and runs as a non-root user."""

from __future__ import annotations

import importlib
import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[int, str, str]]:
    """(stage index, INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stage, found = -1, []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stage += 1
        found.append((stage, word.upper(), rest.strip()))
    return found


def _pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go's filepath.Match plus **) as a regex over slash paths."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + pattern[i : end + 1].replace("[!", "[^"), end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def excluded(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent directories decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    verdict = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = _pattern(raw.removeprefix("!").strip("/").removeprefix("./"))
        if any(pattern.fullmatch(p) for p in prefixes):
            verdict = not negate
    return verdict


def ignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_the_ignore_matcher_follows_docker() -> None:
    patterns = ["**/__pycache__", "tests", "*.egg-info", "!tests/keep.txt"]
    assert excluded("src/kubedra/__pycache__/x.pyc", patterns)
    assert excluded("tests/helm/chart.py", patterns)
    assert excluded("kubedra.egg-info/PKG-INFO", patterns)
    assert not excluded("src/kubedra/__init__.py", patterns)
    assert not excluded("tests/keep.txt", patterns)
    assert not excluded("testsuite/x", patterns)


def context_sources() -> list[str]:
    """The sources of every COPY/ADD from the build context (not --from another stage)."""
    sources = []
    for _, word, rest in instructions():
        if word not in ("COPY", "ADD"):
            continue
        words = shlex.split(rest)
        if any(w.startswith("--from=") for w in words):
            continue
        paths = [w for w in words if not w.startswith("--")]
        sources.extend(paths[:-1])
    return sources


def test_the_builder_copies_what_the_wheel_needs() -> None:
    assert context_sources() == ["pyproject.toml", "README.md", "src"]
    readme = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["readme"]
    assert readme in context_sources()  # hatchling reads it into the wheel's metadata


@pytest.mark.parametrize("source", context_sources())
def test_every_copied_source_exists_and_is_not_ignored(source: str) -> None:
    assert (ROOT / source).exists(), source
    patterns = ignore_patterns()
    assert not excluded(source, patterns), f"{source} is excluded by .dockerignore"
    tracked = subprocess.run(["git", "ls-files", "--", source], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert tracked, f"{source} is not tracked by git: a fresh clone would not have it"
    lost = [path for path in tracked if excluded(path, patterns)]
    assert not lost, f".dockerignore drops tracked files the image needs: {lost}"


def test_the_entrypoint_is_a_console_script_that_resolves() -> None:
    (entrypoint,) = [json.loads(rest) for _, word, rest in instructions() if word == "ENTRYPOINT"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint == ["kubedra"]
    assert entrypoint[0] in scripts
    module, _, attribute = scripts[entrypoint[0]].partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))


def test_final_stage_installs_wheels_only_and_is_not_root() -> None:
    steps = instructions()
    final = max(stage for stage, _, _ in steps)
    assert final == 1, "a builder stage and a final stage"
    froms = [rest for _, word, rest in steps if word == "FROM"]
    assert froms == ["python:3.11-slim AS builder", "python:3.11-slim"]
    runs = [rest for stage, word, rest in steps if stage == final and word == "RUN"]
    assert len(runs) == 1
    assert "pip install --no-index --find-links /wheels kubedra" in runs[0]
    assert not re.search(r"apt-get|apk |gcc|build-essential|pip install (?!--no-index)", runs[0]), runs[0]
    users = [rest for stage, word, rest in steps if stage == final and word == "USER"]
    assert users == ["65532:65532"]
    assert not [rest for stage, word, rest in steps if stage == final and word in ("COPY", "ADD")]
