"""The runbook's helm commands render with the real helm (every value they set exists and passes the schema), and
what the page says the cluster then shows (DeviceClasses, the DaemonSet's node selector) is what they render."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.helm.chart import CHART, ROOT, by_kind, one, render
from tests.runbook import blocks


def helm_commands() -> list[list[str]]:
    lines = [line for b in blocks() if b.tag == "shell" for line in b.text.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("helm ") and "deploy/helm/kubedra" in line]


def _settings(words: list[str]) -> list[str]:
    """The command's --set and --set-string values, as chart.set_args takes them; any other value flag fails."""
    assert not {"-f", "--values", "--set-json", "--set-file"} & set(words), words
    prefixes = {"--set": "", "--set-string": "string:"}
    return [prefixes[word] + words[i + 1] for i, word in enumerate(words) if word in prefixes]


def cumulative() -> list[tuple[list[str], list[str]]]:
    """Each command with the values in force after it (upgrades here all --reuse-values)."""
    out, values = [], []
    for words in helm_commands():
        assert words[1] in ("install", "upgrade"), words
        assert words[3] == "deploy/helm/kubedra" and (ROOT / words[3]).resolve() == CHART.resolve(), words
        if words[1] == "upgrade":
            assert "--reuse-values" in words, words
        values = [*values, *_settings(words)]
        out.append((words, values))
    return out


def test_the_runbook_installs_and_upgrades(helm: Path) -> None:
    steps = cumulative()
    assert [w[1] for w, _ in steps] == ["install", "upgrade", "upgrade"]
    for _, values in steps:
        assert render(helm, values)  # renders: the schema accepts every value, no guard fails


def test_what_the_page_shows_is_what_the_install_renders(helm: Path) -> None:
    (_, values), *_ = cumulative()
    objects = render(helm, values)
    shown = next(b.text for b in blocks() if b.tag == "text" and b.text.startswith("NAME                    AGE"))
    classes = [line.split()[0] for line in shown.split("\n\n")[0].splitlines()[1:]]
    assert classes == sorted(c["metadata"]["name"] for c in by_kind(objects, "DeviceClass"))
    daemonset = one(objects, "DaemonSet")
    selector = ",".join(f"{k}={v}" for k, v in daemonset["spec"]["template"]["spec"]["nodeSelector"].items())
    assert f"daemonset.apps/{daemonset['metadata']['name']}" in shown
    assert selector in shown
    assert f"deployment.apps/{one(objects, 'Deployment')['metadata']['name']}" in shown
    image = daemonset["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "registry.example/kubedra:0.1.0"
