"""The README fits two screens, starts with the two commands (install and run the main job; install the test
dependencies and run the whole suite), and every link it gives into the docs leads to a page."""

from __future__ import annotations

import re
import tomllib

from tests.docs.pages import README, ROOT
from tests.runbook import blocks

from kubedra.cli import main

TWO_COMMANDS = [
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && kubedra simulate",
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && scripts/test",
]


def test_the_readme_fits_two_screens() -> None:
    assert len(README.read_text().splitlines()) < 150


def test_the_first_block_is_the_two_commands() -> None:
    first = blocks(README)[0]
    assert first.tag == "sh"
    assert [line for line in first.text.splitlines() if not line.startswith("#")] == [
        TWO_COMMANDS[0], "", TWO_COMMANDS[1]]
    assert first.line < 20, "the commands must be on the first screen"


def test_what_the_commands_need_is_there() -> None:
    """The test extra exists, scripts/test is executable, and the main job on the embedded default succeeds (its
    output is the README's console block, which tests/docs/test_pages.py compares)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "test" in project["optional-dependencies"]
    assert project["scripts"]["kubedra"] == "kubedra.cli:entrypoint"
    script = ROOT / "scripts" / "test"
    assert script.stat().st_mode & 0o111
    assert main(["simulate", "-q"]) == 0


def test_every_link_into_the_docs_exists() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text())
    assert len(links) >= 15
    assert all((ROOT / link).is_file() for link in links), [link for link in links if not (ROOT / link).is_file()]
