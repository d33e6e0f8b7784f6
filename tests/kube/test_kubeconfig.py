"""kubedra finds and merges kubeconfigs as kubectl does (issue 40): ``--kubeconfig`` alone, else every file of
``$KUBECONFIG`` (first name and first current-context win, missing files skipped), else ``~/.kube/config``; relative
file references resolved against their own file. The real kubectl v1.37.2 (tests/controlplane/build.sh builds it) is
the oracle for the merge (``kubectl config view --flatten``), and the control plane is reached through a context that
only the merge can resolve."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import BIN, ControlPlane

from kubedra.cli import main
from kubedra.kube import kubeconfig as kc
from kubedra.kube.api import KubeError

KUBECTL = BIN / "kubectl"


def _write(path: Path, config: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", **config}))
    return str(path)


def _files(tmp_path: Path) -> tuple[str, str]:
    """Two files that disagree: both name cluster c1 and set a current context; each refers to files beside it."""
    for name in ("a/ca.crt", "a/certs/u1.crt", "a/u1.key", "b/ca2.crt", "b/tok"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"contents of {name}\n")
    first = _write(tmp_path / "a" / "config", {
        "clusters": [{"name": "c1", "cluster": {"server": "https://one:6443", "certificate-authority": "ca.crt"}}],
        "users": [{"name": "u1", "user": {"client-certificate": "certs/u1.crt", "client-key": "u1.key"}}],
        "contexts": [{"name": "ctx1", "context": {"cluster": "c1", "user": "u1", "namespace": "ml"}}],
        "current-context": "ctx1"})
    second = _write(tmp_path / "b" / "config", {
        "clusters": [{"name": "c1", "cluster": {"server": "https://shadowed:6443"}},
                     {"name": "c2", "cluster": {"server": "https://two:6443", "certificate-authority": "ca2.crt"}}],
        "users": [{"name": "u2", "user": {"tokenFile": "tok",
                                          "exec": {"command": "./bin/auth", "apiVersion": "v1"}}}],
        "contexts": [{"name": "ctx2", "context": {"cluster": "c2", "user": "u2"}}],
        "current-context": "ctx2"})
    return first, second


def test_the_precedence_is_kubectls(tmp_path: Path) -> None:
    first, second = _files(tmp_path)
    home = str(Path("~/.kube/config").expanduser())
    assert kc.candidates(first, {"KUBECONFIG": second}) == [first]
    assert kc.candidates(None, {"KUBECONFIG": f"{second}::{first}:{second}"}) == [second, first]
    assert kc.candidates(None, {}) == [home]
    found = kc.load(None, {"KUBECONFIG": f"{tmp_path}/missing:{second}:{first}"})
    assert found.files == [second, first] and found.missing == [f"{tmp_path}/missing"]
    assert found.config is not None and found.config["current-context"] == "ctx2"
    with pytest.raises(KubeError, match="not found"):
        kc.load(f"{tmp_path}/missing", {"KUBECONFIG": first})


def test_first_name_wins_and_paths_resolve_against_their_own_file(tmp_path: Path) -> None:
    first, second = _files(tmp_path)
    found = kc.load(None, {"KUBECONFIG": f"{first}:{second}"})
    assert found.config is not None
    clusters = {c["name"]: c["cluster"] for c in found.config["clusters"]}
    assert clusters["c1"] == {"server": "https://one:6443", "certificate-authority": f"{tmp_path}/a/ca.crt"}
    assert clusters["c2"]["certificate-authority"] == f"{tmp_path}/b/ca2.crt"
    users = {u["name"]: u["user"] for u in found.config["users"]}
    assert users["u2"]["tokenFile"] == f"{tmp_path}/b/tok"
    assert users["u2"]["exec"]["command"] == f"{tmp_path}/b/bin/auth"  # a path, not a PATH lookup
    assert found.config["current-context"] == "ctx1"


def test_empty_files_in_the_list_are_skipped_and_a_list_of_nothing_falls_back(tmp_path: Path) -> None:
    first, _ = _files(tmp_path)
    (tmp_path / "empty").write_text("")
    found = kc.load(None, {"KUBECONFIG": f"{tmp_path}/empty:{first}"})
    assert found.files == [first]
    assert kc.load(None, {"KUBECONFIG": f"{tmp_path}/empty:{tmp_path}/none"}).config is None


@pytest.mark.skipif(not KUBECTL.is_file(), reason="tests/controlplane/build.sh builds kubectl")
def test_the_merge_is_the_real_kubectls(tmp_path: Path) -> None:
    first, second = _files(tmp_path)
    for listed in (f"{first}:{second}", f"{second}:{first}", f"{tmp_path}/missing:{second}:{first}:{second}"):
        done = subprocess.run([str(KUBECTL), "config", "view", "--raw", "--flatten", "-o", "json"],
                              env={"KUBECONFIG": listed, "HOME": str(tmp_path)}, capture_output=True, text=True,
                              check=True)
        real = json.loads(done.stdout)
        ours = kc.load(None, {"KUBECONFIG": listed}).config
        assert ours is not None
        assert ours["current-context"] == real["current-context"]
        assert sorted(c["name"] for c in ours["contexts"]) == sorted(c["name"] for c in real["contexts"])
        assert {c["name"]: c["context"] for c in ours["contexts"]} == {c["name"]: c["context"] for c in real["contexts"]}
        real_clusters = {c["name"]: c["cluster"] for c in real["clusters"]}
        for cluster in ours["clusters"]:
            mine, theirs = cluster["cluster"], real_clusters[cluster["name"]]
            assert mine["server"] == theirs["server"]
            if "certificate-authority" in mine:  # --flatten embedded the file kubectl resolved: the same one
                assert base64.b64decode(theirs["certificate-authority-data"]) == Path(
                    mine["certificate-authority"]).read_bytes()
        real_users = {u["name"]: u["user"] for u in real["users"]}
        for user in ours["users"]:
            mine, theirs = user["user"], real_users[user["name"]]
            for key in ("client-certificate", "client-key"):
                if key in mine:
                    assert base64.b64decode(theirs[f"{key}-data"]) == Path(mine[key]).read_bytes()


@pytest.mark.controlplane
def test_a_context_only_the_merge_resolves_reaches_the_cluster(control_plane: ControlPlane, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The context is in one file, its cluster and user in another: kubectl (and kubedra) join them."""
    control_plane.create_node("kubeconfig-merge-node", cpu="4", memory="8Gi")
    admin = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    context = admin["contexts"][0]["context"]
    contexts = _write(tmp_path / "contexts", {"contexts": [{"name": "joined", "context": context}],
                                              "current-context": "joined"})
    rest = _write(tmp_path / "credentials", {"clusters": admin["clusters"], "users": admin["users"]})
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/missing:{contexts}:{rest}")
    capsys.readouterr()
    code = main(["snapshot"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "name: kubeconfig-merge-node" in out, (out, err)
    if KUBECTL.is_file():
        done = subprocess.run([str(KUBECTL), "get", "nodes", "-o", "name"], capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert "node/kubeconfig-merge-node" in done.stdout.split()


def test_a_context_without_a_user_asks_anonymously_as_kubectl_does(control_plane: ControlPlane, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the live fuzz: lightkube asserted "Missing user" (a traceback); kubectl sends no credentials, and the
    API server refuses an anonymous list, said with exit 2."""
    admin = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    context = {k: v for k, v in admin["contexts"][0]["context"].items() if k != "user"}
    path = _write(tmp_path / "config", {"apiVersion": "v1", "kind": "Config", "clusters": admin["clusters"],
                                        "contexts": [{"name": "nobody", "context": context}],
                                        "current-context": "nobody"})
    capsys.readouterr()
    code = main(["snapshot", "--kubeconfig", path])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    if KUBECTL.is_file():
        done = subprocess.run([str(KUBECTL), "--kubeconfig", path, "get", "nodes"], capture_output=True, text=True,
                              check=False)
        assert done.returncode != 0  # the real kubectl is refused the same way
