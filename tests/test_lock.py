"""requirements/ci.txt, the lock file CI installs from (.ci/run; scripts/lock writes it with uv).

It must pin, with hashes, a version of every requirement pyproject.toml states (the package's, its test extra's and
the build backend's) that satisfies it, and be what scripts/lock writes. Where .ci/run installed from it
(KUBEDRA_LOCKED=1), the environment the tests run in must hold exactly the pinned versions.
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "ci.txt"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


def _pins() -> dict[str, tuple[Version, str | None, int]]:
    """name -> (version, marker, number of hashes)."""
    pins: dict[str, tuple[Version, str | None, int]] = {}
    current = None
    for line in LOCK.read_text().splitlines():
        found = PIN.match(line)
        if found:
            current = canonicalize_name(found.group(1))
            assert current not in pins, f"{current} pinned twice"
            pins[current] = (Version(found.group(2)), found.group(3), 0)
        elif line.strip().startswith("--hash=sha256:") and current is not None:
            version, marker, hashes = pins[current]
            pins[current] = (version, marker, hashes + 1)
    return pins


PINS = _pins()


def _stated() -> list[Requirement]:
    project = PYPROJECT["project"]
    stated = [*project["dependencies"], *project["optional-dependencies"]["test"], *PYPROJECT["build-system"]["requires"]]
    return [Requirement(r) for r in stated]


def test_every_stated_requirement_is_pinned_to_a_version_it_allows() -> None:
    for requirement in _stated():
        name = canonicalize_name(requirement.name)
        assert name in PINS, f"{requirement} is not in {LOCK.name}: run scripts/lock"
        version = PINS[name][0]
        assert requirement.specifier.contains(version, prereleases=True), f"{requirement}: locked at {version}"


def test_every_pin_has_hashes() -> None:
    assert len(PINS) > 30
    assert [n for n, (_, _, hashes) in PINS.items() if not hashes] == []


def test_the_lock_is_what_scripts_lock_writes() -> None:
    command = re.search(r"uv pip compile .*", (ROOT / "scripts" / "lock").read_text().replace("\\\n  ", ""))
    assert command is not None
    written = command.group(0).replace(' "$@"', "")
    assert f"#    {written}" in LOCK.read_text().splitlines()[1], "the lock was written by another command"


@pytest.mark.skipif(os.environ.get("KUBEDRA_LOCKED") != "1", reason="installed from the lock only in .ci/run")
def test_the_environment_is_the_lock() -> None:
    environment = default_environment()
    wrong = {}
    for name, (version, marker, _) in PINS.items():
        if marker and not Requirement(f"x; {marker}").marker.evaluate(environment):
            continue
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "not installed"
        if installed != str(version):
            wrong[name] = (installed, str(version))
    assert not wrong, wrong
