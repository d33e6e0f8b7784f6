"""docs/migrating-from-device-plugin.md cannot rot: every ``$`` command of its console blocks runs, in order, from a
scratch directory that sees the clone's examples/, and prints exactly what the page shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from tests.runbook import ROOT, RUNBOOK, blocks, console_commands


def test_the_runbook_has_the_steps_the_issue_names() -> None:
    text = RUNBOOK.read_text()
    for step in ("kubedra migrate", "helm install", "kubectl get deviceclasses", "kubectl describe pod",
                 "kubedra explain", "Dashboards and alerts", "The next pool", "Rollback"):
        assert step in text, step
    commands = [c.command.split()[:2] for c in console_commands()]
    assert ["kubedra", "migrate"] in commands
    assert ["kubedra", "explain"] in commands


def test_every_console_command_prints_what_the_page_shows(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "COLUMNS": "100", "PYTHONUNBUFFERED": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("KUBECONFIG", None)
    for command in console_commands():
        assert command.command.split()[0] in ("kubedra", "cat"), command.command
        done = subprocess.run(["bash", "-c", command.command], cwd=tmp_path, env=env, capture_output=False,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
        where = f"{RUNBOOK.name}:{command.line}: {command.command}"
        assert done.returncode == 0, f"{where}\n{done.stdout}"
        assert done.stdout == command.expected, f"{where}\n--- the page shows\n{command.expected}--- kubedra prints\n" \
                                                f"{done.stdout}"


def test_the_alerts_it_names_are_the_rules_files() -> None:
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "dra-rules.yaml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    named = set(re.findall(r"\bDRA[A-Z]\w+", RUNBOOK.read_text()))
    named.discard("DRAExtendedResource")  # a feature gate, not an alert
    assert named, "no alert named"
    assert named <= alerts, named - alerts


def test_the_example_files_it_uses_exist() -> None:
    text = "\n".join(b.text for b in blocks()) + RUNBOOK.read_text()
    for name in ("examples/runbook/gpu-test.yaml", "examples/runbook/first-pool.yaml",
                 "examples/migrate/training-job.yaml", "deploy/grafana/kubedra-dra.json",
                 "deploy/prometheus/dra-rules.yaml", "deploy/rbac.yaml"):
        assert name in text, name
        assert (ROOT / name).is_file(), name
