"""The shipped Prometheus rules: promtool's own checks and unit tests, and the PrometheusRule copy kept equal."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "dra-rules.yaml"
OPERATOR = ROOT / "deploy" / "prometheus" / "dra-prometheusrule.yaml"
UNIT_TESTS = ROOT / "tests" / "prometheus" / "dra-rules.test.yaml"
SEED_EXPR = "kube_resourceclaim_pending > 10"

needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="promtool not installed (Debian package prometheus; .ci/run installs it)")


def _promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *map(str, args)], capture_output=True, text=True, check=False, timeout=120)


@needs_promtool
def test_the_rules_file_is_valid() -> None:
    checked = _promtool("check", "rules", RULES)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 8 rules found" in checked.stdout


@needs_promtool
def test_the_promtool_unit_tests_pass() -> None:
    tested = _promtool("test", "rules", UNIT_TESTS)
    assert tested.returncode == 0, tested.stdout + tested.stderr


@needs_promtool
def test_the_unit_tests_reject_the_seed_rule(tmp_path: Path) -> None:
    """With the seed's expression (each claim's 0/1 series compared with 10) the firing cases fail."""
    seed = yaml.safe_load(RULES.read_text())
    exhausted = next(r for r in seed["groups"][0]["rules"] if r["alert"] == "DRAResourceExhausted")
    exhausted["expr"] = SEED_EXPR
    (tmp_path / "deploy" / "prometheus").mkdir(parents=True)
    (tmp_path / "deploy" / "prometheus" / "dra-rules.yaml").write_text(yaml.safe_dump(seed, allow_unicode=True))
    (tmp_path / "tests" / "prometheus").mkdir(parents=True)
    shutil.copy(UNIT_TESTS, tmp_path / "tests" / "prometheus" / UNIT_TESTS.name)
    tested = _promtool("test", "rules", tmp_path / "tests" / "prometheus" / UNIT_TESTS.name)
    assert tested.returncode != 0
    assert "DRAResourceExhausted" in tested.stdout + tested.stderr


def test_the_prometheusrule_carries_the_same_groups() -> None:
    operator = yaml.safe_load(OPERATOR.read_text())
    assert (operator["apiVersion"], operator["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert operator["spec"]["groups"] == yaml.safe_load(RULES.read_text())["groups"]


def test_every_alert_has_a_unit_test() -> None:
    alerts = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    tested = {t["alertname"] for case in yaml.safe_load(UNIT_TESTS.read_text())["tests"]
              for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert tested == alerts


@needs_promtool
def test_the_example_configuration_loads_the_rules() -> None:
    checked = _promtool("check", "config", RULES.parent / "prometheus.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 8 rules found" in checked.stdout
