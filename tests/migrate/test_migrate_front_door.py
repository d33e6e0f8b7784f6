"""``kubedra migrate`` reads its input through the front door ``validate``, ``convert`` and ``simulate`` use: what
they refuse it refuses, with exit 2, the very message ``simulate`` prints and nothing written (issue 37, item 3).
Each input below was migrated with exit 0 into objects the API server rejects (or echoed back) before."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def pod(limits: str = "{nvidia.com/gpu: 1}", resources: str = "limits", name: str = "p", image: str = "x") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: c\n"
            f"    image: {image}\n    resources:\n      {resources}: {limits}\n")


def deployment(replicas: str) -> str:
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n"
            f"  replicas: {replicas}\n  selector: {{matchLabels: {{a: b}}}}\n  template:\n"
            "    metadata: {labels: {a: b}}\n    spec:\n      containers:\n      - name: c\n        image: x\n"
            "        resources: {limits: {nvidia.com/gpu: 1}}\n")


def template(count: str) -> str:
    return ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\nspec:\n  spec:\n"
            "    devices:\n      requests:\n      - name: gpu\n"
            f"        exactly: {{deviceClassName: gpu.nvidia.com, count: {count}}}\n")


JOB_ALWAYS = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n"
              "      restartPolicy: Always\n      containers:\n      - name: c\n        image: x\n"
              "        resources: {limits: {nvidia.com/gpu: 1}}\n")

BAD = {
    "negative-count": ("in.yaml", template("-1"), "exactly.count: Invalid value: -1: must be greater than zero"),
    "count-1e20": ("in.yaml", template("1e20"), "exactly.count: Invalid value"),
    "replicas-string": ("in.yaml", deployment('"3"'), 'spec.replicas: Invalid value: "3": must be an integer'),
    "replicas-past-int32": ("in.yaml", deployment("2147483648"), "spec.replicas: Invalid value: 2147483648"),
    "same-kind-and-name": ("in.yaml", pod() + "---\n" + pod(image="y"),
                           'in.yaml[1]: Pod/p: metadata.name: Duplicate value: "default/p"'),
    "job-restart-always": ("in.yaml", JOB_ALWAYS, 'restartPolicy: Unsupported value: "Always"'),
    "yaml-scalar": ("in.yaml", '"hello"\n', "a document must be a mapping with apiVersion and kind, not str"),
    "requests-only": ("in.yaml", pod(resources="requests"),
                      "resources.limits: Required value: Limit must be set for non overcommitable resources"),
    "json-error": ("in.json", '{"apiVersion": "v1", "kind": "Pod",\n', "in.json[0]: invalid JSON: "),
}


@pytest.mark.parametrize(("name", "text", "message"), BAD.values(), ids=list(BAD))
def test_migrate_refuses_what_simulate_refuses_with_its_message_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, message: str
) -> None:
    source = tmp_path / name
    source.write_text(text)
    target = tmp_path / "out"
    code, out, err = run(capsys, "migrate", "-f", str(source), "--output-dir", str(target))
    assert (code, out) == (2, ""), err
    assert message in err, err
    assert not target.exists()
    assert run(capsys, "migrate", "-f", str(source))[:2] == (2, "")  # nor anything on stdout
    simulated = run(capsys, "simulate", "-f", str(source))
    assert simulated[0] == 2
    assert err == simulated[2]  # the same words, the same order


def test_a_directory_tree_a_bom_and_the_size_limit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Kept from migrate's own reader: subdirectories are read (after the directory's files), a byte order mark is
    dropped; and now --max-file-size as the other commands have it."""
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "b.yaml").write_bytes(b"\xef\xbb\xbf" + pod(name="b").encode())
    (tmp_path / "in" / "sub" / "a.yaml").write_text(pod(name="a"))
    code, out, err = run(capsys, "migrate", str(tmp_path / "in"), "-o", "name", "-q")
    assert code == 0, err
    assert out.splitlines() == ["resourceclaimtemplate.resource.k8s.io/b-c-gpu", "pod/b",
                                "resourceclaimtemplate.resource.k8s.io/a-c-gpu", "pod/a"]
    code, out, err = run(capsys, "migrate", str(tmp_path / "in"), "--max-file-size", "100")
    assert (code, out) == (2, "")
    assert "b.yaml" in err and "a.yaml" in err


def test_identical_copies_are_noted_as_the_loader_notes_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One file given twice: the loader's note on stderr, as simulate prints it; -q drops it."""
    source = tmp_path / "in.yaml"
    source.write_text(pod())
    code, _, err = run(capsys, "migrate", "-f", str(source), "-f", str(source))
    assert code == 0
    assert "Pod default/p again, identical to the one at" in err
    assert run(capsys, "migrate", "-f", str(source), "-f", str(source), "-q")[2] == ""


@pytest.mark.parametrize(("name", "text", "message"), BAD.values(), ids=list(BAD))
def test_convert_refuses_the_same_with_the_same_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, message: str
) -> None:
    """One front door for every command: convert exited 0 on replicas: "3" and a Job with restartPolicy Always
    before, and printed them back."""
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run(capsys, "convert", "-f", str(path))
    simulated = run(capsys, "simulate", "-f", str(path))
    assert (code, out) == (2, "")
    assert message in err
    assert err == simulated[2]
