"""Every ``helm install``/``helm upgrade`` of the docs site and the README renders with the real helm: the values
each sets exist and pass the chart's schema, and no guard fails. Upgrades with ``--reuse-values`` render with the
page's install values plus theirs. (The runbook has its own, closer check: tests/helm/test_runbook_helm.py.)"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from tests.docs.pages import README, pages, shown_commands
from tests.helm.chart import CHART, ROOT, render
from tests.helm.test_runbook_helm import _settings
from tests.runbook import RUNBOOK

PAGES = [p for p in [*pages(), README] if p != RUNBOOK]


def helm_steps(page: Path) -> list[tuple[str, list[str]]]:
    """Each helm command of the page with the values in force after it."""
    steps, values = [], []
    for _, _, command in shown_commands(page):
        words = shlex.split(command)
        if words[:1] != ["helm"]:
            continue
        assert words[1] in ("install", "upgrade"), command
        assert (ROOT / words[3]).resolve() == CHART.resolve(), command
        if words[1] == "install":
            values = []
        else:
            assert "--reuse-values" in words, command
        values = [*values, *_settings(words)]
        steps.append((command, values))
    return steps


WITH_HELM = [p for p in PAGES if helm_steps(p)]


def test_the_install_pages_show_helm_commands() -> None:
    names = {p.name for p in WITH_HELM}
    assert {"install-the-chart.md", "helm.md"} <= names, names


@pytest.mark.parametrize("page", WITH_HELM, ids=[p.name for p in WITH_HELM])
def test_every_helm_command_renders(helm: Path, page: Path) -> None:
    for command, values in helm_steps(page):
        assert render(helm, values), command
