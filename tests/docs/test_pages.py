"""The docs cannot rot: every console command of every page prints what the page shows, and every other command a
page shows is one a test runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.cli.test_help_examples import COMMANDS, examples
from tests.docs.pages import DOCS, README, console_pages, pages, run_page, shown_commands
from tests.runbook import console_commands

from kubedra.cli import main

CONSOLE_PAGES = console_pages()
CLUSTER_TOOLS = ("kubectl", "helm", "docker", "curl")
"""Commands for a real cluster, shown in ``shell`` blocks; the helm ones are rendered by tests/helm/test_docs_helm.py."""
INSTALLS = ("python3 -m venv .venv", ". .venv/bin/activate", "pip install -e .", "pip install -e '.[test]'",
            "scripts/test")
"""The two install-and-run commands (README, getting started); tests/docs/test_readme.py checks them."""


def test_the_pages_the_site_promises_exist() -> None:
    names = {str(p.relative_to(DOCS)) for p in pages()}
    assert {"index.md", "getting-started.md", "tutorials/what-if-before-migrating.md",
            "tutorials/explain-a-pending-pod.md", "tutorials/migrate-a-pool.md", "tutorials/install-the-chart.md",
            "tutorials/monitor.md", "reference/commands.md", "fidelity.md", "performance.md",
            "migrating-from-device-plugin.md"} <= names
    assert len(CONSOLE_PAGES) >= 6  # the README, getting started, four tutorials (install-the-chart: cluster only)


@pytest.mark.slow
@pytest.mark.parametrize("page", CONSOLE_PAGES, ids=[p.name if p == README else str(p.relative_to(DOCS)) for p in CONSOLE_PAGES])
def test_every_console_command_prints_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    for outcome in run_page(page, tmp_path):
        where = f"{page.name}:{outcome.command.line}: {outcome.command.command}"
        assert outcome.returncode == 0, f"{where}\n{outcome.output}"
        assert outcome.output == outcome.command.expected, (
            f"{where}\n--- the page shows\n{outcome.command.expected}--- it prints\n{outcome.output}")


def _help_examples(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> set[str]:
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setenv("TERMINAL_WIDTH", "400")
    found: set[str] = set()
    for path in COMMANDS:
        assert main([*path, "-h"]) == 0
        found.update(re.sub(r"\s+#.*", "", e) for e in examples(capsys.readouterr().out))
    return found


def test_every_command_outside_a_console_block_is_run_elsewhere(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kubedra command in a ``sh``/``shell`` block is a ``--help`` example (tests/cli/test_help_examples.py runs
    those); anything else is a cluster tool or the install commands."""
    run_by_help = _help_examples(capsys, monkeypatch)
    stray = []
    for page in [*pages(), README]:
        for tag, line, command in shown_commands(page):
            if re.sub(r"\s+#.*", "", command) in run_by_help:
                continue
            if command.startswith("kubedra "):
                stray.append(f"{page.name}:{line}: {command}")
            elif not command.startswith(CLUSTER_TOOLS + INSTALLS):
                stray.append(f"{page.name}:{line} ({tag}): {command}")
    assert not stray, "commands no test runs:\n" + "\n".join(stray)


def test_console_blocks_run_only_what_the_runner_allows() -> None:
    for page in CONSOLE_PAGES:
        for command in console_commands(page):
            assert command.command.split()[0] in ("kubedra", "cat", "curl", "ls"), (page, command.command)
