"""``kubectl dra`` (issue 40): kubectl's flags turned into kubedra's command line, and the plugin run by the real
kubectl v1.37.2 (built with the control plane) against the control plane through a kubeconfig context: ``explain``
finds the pod in the context's namespace, ``-A`` everywhere, completion answers kubectl's protocol."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.controlplane.fixture import BIN, ControlPlane
from tests.kube import builders as b

from kubedra.cli import kubectl_plugin as plugin
from kubedra.cli.live import request_timeout
from kubedra.kube.api import KubeError

KUBECTL = BIN / "kubectl"


def _kubeconfig(tmp_path: Path, namespace: str | None = "ml") -> dict[str, str]:
    context: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": "https://x:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "work", "context": context}, {"name": "other", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "work"}))
    return {"KUBECONFIG": str(path)}


def test_kubectl_flags_anywhere_become_kubedras(tmp_path: Path) -> None:
    env = _kubeconfig(tmp_path)
    assert plugin.translate(["explain", "pod", "p"], env) == (["explain", "pod", "p", "--context", "work", "-n", "ml"],
                                                              {})
    assert plugin.translate(["-n", "team", "explain", "pod", "p", "--context=other"], env)[0] == [
        "explain", "pod", "p", "--context", "other", "-n", "team"]
    assert plugin.translate(["explain", "--context", "other", "pod", "p"], env)[0][-2:] == ["-n", "default"]
    assert plugin.translate(["explain", "pod", "p", "-A"], env)[0] == ["explain", "pod", "p", "--context", "work"]
    assert plugin.translate(["simulate", "-f", "x.yaml", "--request-timeout", "5s"], env) == (
        ["simulate", "-f", "x.yaml", "--context", "work"], {"KUBEDRA_REQUEST_TIMEOUT": "5s"})
    assert plugin.translate(["validate", "-f", "x.yaml"], env)[0] == ["validate", "-f", "x.yaml", "--context", "work"]
    assert plugin.translate(["migrate", "x.yaml"], env)[0] == ["migrate", "x.yaml"]
    assert plugin.translate([], env)[0] == ["--kubectl-dra-usage"]


@pytest.mark.parametrize(("argv", "message"), [
    (["explain", "pod", "p", "-n"], "flag needs an argument: -n"),
    (["explain", "pod", "p", "-n", "a", "-A"], "give -n or -A, not both"),
    (["simulate", "-n", "a"], "covers every namespace"),
    (["migrate", "x", "--context", "c"], "reads files, not the cluster"),
    (["validate", "-f", "x", "-n", "a"], "covers every namespace"),
])
def test_flags_that_do_not_fit_are_usage_errors(tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(plugin.UsageError, match=message):
        plugin.translate(argv, _kubeconfig(tmp_path))


def test_no_kubeconfig_at_all_is_said(tmp_path: Path) -> None:
    with pytest.raises(plugin.UsageError, match="no kubeconfig context"):
        plugin.translate(["explain", "pod", "p"], {"KUBECONFIG": str(tmp_path / "none")})


def test_request_timeouts_read_as_kubectl_reads_them() -> None:
    assert request_timeout({}) == 30.0
    assert request_timeout({"KUBEDRA_REQUEST_TIMEOUT": "5"}) == 5.0
    assert request_timeout({"KUBEDRA_REQUEST_TIMEOUT": "1m30s"}) == 90.0
    assert request_timeout({"KUBEDRA_REQUEST_TIMEOUT": "0"}) is None
    with pytest.raises(KubeError, match="--request-timeout"):
        request_timeout({"KUBEDRA_REQUEST_TIMEOUT": "soon"})


def test_completion_follows_the_words_typed() -> None:
    assert plugin.completions(["ex"]) == (["explain"], 4)
    assert plugin.completions(["explain", "dep"]) == (["deployment"], 4)
    assert plugin.completions(["explain", "ray"]) == (["raycluster", "rayjob"], 4)  # every kind explain reads
    assert plugin.completions(["explain", "pod", "p", "--all"]) == (["--all-namespaces"], 4)
    assert plugin.completions(["--kubeconfig", ""]) == ([], 0)  # a file name: the shell's


def _on_path(tmp_path: Path) -> dict[str, str]:
    """A $PATH where kubectl finds this checkout's kubectl-dra and kubectl_complete-dra (the venv's scripts)."""
    scripts = Path(sys.executable).parent
    for name in ("kubectl-dra", "kubectl_complete-dra"):
        if not (scripts / name).exists():
            pytest.skip(f"{name} is not installed in {scripts} (pip install -e .)")
    return {**os.environ, "PATH": f"{scripts}:{BIN}:{os.environ.get('PATH', '')}", "HOME": str(tmp_path)}


@pytest.mark.controlplane
@pytest.mark.skipif(not KUBECTL.is_file(), reason="tests/controlplane/build.sh builds kubectl")
def test_the_real_kubectl_runs_the_plugin_on_the_context(control_plane: ControlPlane, namespace: str,
                                                        tmp_path: Path) -> None:
    driver, device_class = f"{namespace}.example.com", f"{namespace}-gpu"
    control_plane.create(b.device_class(device_class, driver))
    control_plane.create_node(f"{namespace}-n", cpu="8", memory="32Gi")
    control_plane.create(b.node_slice(f"{namespace}-n", driver, 1))
    control_plane.create(b.claim("pair", namespace, device_class, count=2))
    control_plane.create(b.pod("waits", namespace, claim_name="pair"))
    admin = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    admin["contexts"][0]["context"]["namespace"] = namespace
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump(admin))
    env = {**_on_path(tmp_path), "KUBECONFIG": str(config)}
    kubectl = shutil.which("kubectl", path=env["PATH"])
    assert kubectl == str(KUBECTL)

    listed = subprocess.run([kubectl, "plugin", "list"], env=env, capture_output=True, text=True, check=False)
    assert "kubectl-dra" in listed.stdout, listed.stdout + listed.stderr
    done = subprocess.run([kubectl, "dra", "explain", "pod", "waits", "--request-timeout", "20s"], env=env,
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    # kubectl describe's layout, through kubectl
    assert done.stdout.startswith(f"Name:         waits\nNamespace:    {namespace}\nStatus:       Pending\n")
    assert "pair" in done.stdout  # the claim that cannot be allocated is named
    elsewhere = subprocess.run([kubectl, "dra", "explain", "pod", "waits", "-n", "default"], env=env,
                               capture_output=True, text=True, check=False, timeout=120)
    assert elsewhere.returncode == 2 and "waits" in elsewhere.stderr
    everywhere = subprocess.run([kubectl, "dra", "explain", "pod", "waits", "-A"], env=env, capture_output=True,
                                text=True, check=False, timeout=120)
    assert everywhere.returncode == 0, everywhere.stderr
    completed = subprocess.run([kubectl, "__complete", "dra", "explain", "pod", "wa"], env=env,
                               capture_output=True, text=True, check=False, timeout=60)
    assert completed.stdout.splitlines()[:2] == ["waits", ":4"], completed.stdout + completed.stderr
    usage = subprocess.run([kubectl, "dra"], env=env, capture_output=True, text=True, check=False)
    assert usage.returncode == 0 and usage.stdout.startswith("kubectl dra:")


WORDS = st.sampled_from(["explain", "simulate", "snapshot", "validate", "pod", "p", "-n", "--namespace", "-A",
                         "--all-namespaces", "--context", "--context=", "--kubeconfig", "--request-timeout", "5s",
                         "-f", "x.yaml", "--", "-h", "", "=", "-n=a", "--kubeconfig=/nonexistent", "\x00", "é"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(WORDS | st.text(max_size=8), max_size=8))
@example(argv=["explain", "--context", "-A"])  # a context named "-A": the value of a flag, as kubectl reads it
def test_any_command_line_is_translated_or_refused_with_a_message(tmp_path: Path, argv: list[str]) -> None:
    """kubectl passes whatever the user typed: every line becomes kubedra's argv or a usage error, never a crash."""
    try:
        words, env = plugin.translate(argv, _kubeconfig(tmp_path))
    except (plugin.UsageError, KubeError) as exc:
        message = str(exc)
        words, env = [], {}
    else:
        message = ""
    if not words:
        assert message
        return
    assert isinstance(words, list) and all(isinstance(w, str) for w in words)
    assert set(env) <= {"KUBEDRA_REQUEST_TIMEOUT"}
    head = words[: words.index("--")] if "--" in words else words
    values = {i + 1 for i, w in enumerate(head[:-1]) if w in ("--context", "--kubeconfig", "-n")}
    for flag in ("-A", "--all-namespaces", "--request-timeout"):  # kubectl's own: gone, unless a flag's value
        assert all(i in values for i, w in enumerate(head) if w == flag), (argv, words)
    comp, directive = plugin.completions(argv)
    assert directive in (0, 4) and all(isinstance(c, str) for c in comp)
