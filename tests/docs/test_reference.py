"""docs/reference/commands.md is what scripts/docs-reference writes from today's --help, for every command."""

from __future__ import annotations

import difflib

from tests.cli.test_help_examples import COMMANDS
from tests.docs.reference import PAGE, render


def test_the_command_reference_is_current() -> None:
    fresh, current = render(), PAGE.read_text()
    if fresh != current:
        diff = "".join(difflib.unified_diff(current.splitlines(True), fresh.splitlines(True), str(PAGE), "--help"))
        raise AssertionError("docs/reference/commands.md is stale: run scripts/docs-reference\n" + diff)


def test_it_has_a_section_per_command_with_its_examples() -> None:
    text = PAGE.read_text()
    for path in COMMANDS:
        assert f"\n## {' '.join(('kubedra', *path))}\n" in text, path
    assert text.count("\nExamples:\n") == len(COMMANDS)
    assert "| `--html FILE` |" in text
