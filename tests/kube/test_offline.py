"""The adapter's parts that need no cluster: manifests from server objects, kubeconfig errors, the backoff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.kube.api import KubeError, connect
from kubedra.kube.mirror import Backoff
from kubedra.kube.read import ClusterDocuments, manifest, to_loaded
from kubedra.objects import model as m
from kubedra.objects.errors import InvalidInputError

SERVER_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "ml",
        "uid": "u-1",
        "resourceVersion": "812",
        "generation": 1,
        "creationTimestamp": "2026-12-01T10:00:00Z",
        "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
    },
    "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
    "status": {"phase": "Running", "qosClass": "BestEffort"},
}


def test_a_manifest_keeps_state_and_drops_bookkeeping() -> None:
    out = manifest(SERVER_POD)
    assert out["metadata"] == {"name": "p", "namespace": "ml", "uid": "u-1",
                               "creationTimestamp": "2026-12-01T10:00:00Z"}
    assert out["spec"]["nodeName"] == "n1"
    assert out["status"] == {"phase": "Running", "qosClass": "BestEffort"}
    assert SERVER_POD["metadata"]["managedFields"]  # the input is not changed


def test_node_images_are_dropped_and_betas_written_as_v1() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8"}, "images": [{"names": ["x"], "sizeBytes": 1}]}}
    assert manifest(node)["status"] == {"allocatable": {"cpu": "8"}}
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu"}]}}}
    out = manifest(claim)
    assert out["apiVersion"] == "resource.k8s.io/v1"
    assert out["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]


def test_a_server_object_kubedra_cannot_read_names_the_object() -> None:
    """A field kubedra does not know is ignored in a server's object (a newer server's), as clients ignore it; what
    is still wrong is named, with the object and field."""
    bad = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"},
           "spec": {"selectors": [{"cel": {"expresion": "true"}}]}}
    with pytest.raises(InvalidInputError) as caught:
        to_loaded(ClusterDocuments({"DeviceClass": [bad]}))
    assert [str(p) for p in caught.value.problems] == [
        "cluster[0]: DeviceClass/x: spec.selectors[0].cel.expression: Required value",
    ]


def test_a_server_objects_unknown_fields_are_ignored_but_a_files_are_not(tmp_path: Path) -> None:
    newer = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"},
             "spec": {"selectors": [{"cel": {"expression": "true", "costLimit": 5}}], "futureField": {}}}
    loaded = to_loaded(ClusterDocuments({"DeviceClass": [newer]}))
    assert [c.metadata.name for c in loaded.of_kind(m.DeviceClass)] == ["x"]
    written = tmp_path / "class.yaml"
    written.write_text(json.dumps(newer))
    with pytest.raises(InvalidInputError, match=r'unknown field "spec\.futureField"'):
        to_loaded(ClusterDocuments(), [str(written)])


def test_cluster_objects_come_first_and_files_are_added(tmp_path: Path) -> None:
    extra = tmp_path / "pod.yaml"
    extra.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ml}\nspec: {containers: []}\n")
    loaded = to_loaded(ClusterDocuments({"Pod": [SERVER_POD]}), [str(extra)])
    assert [p.metadata.name for p in loaded.of_kind(m.Pod)] == ["p", "q"]
    assert str(loaded.location_of(loaded.objects[0])) == "cluster[0]: Pod/p"


def test_kubeconfig_problems_are_kube_errors(tmp_path: Path) -> None:
    with pytest.raises(KubeError, match="not found"):
        connect(str(tmp_path / "missing"))
    broken = tmp_path / "broken"
    broken.write_text("clusters: 3\n")
    with pytest.raises(KubeError, match="not a valid kubeconfig"):
        connect(str(broken))
    good = tmp_path / "config"
    good.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
    )
    with pytest.raises(KubeError, match="Context 'b' not found"):
        connect(str(good), "b")
    connect(str(good)).close()
    # Found by tests/cli/test_fuzz_live.py: a stray quote in the server's port raised httpx's InvalidURL uncaught.
    quoted = tmp_path / "quoted"
    quoted.write_text(good.read_text().replace("'https://127.0.0.1:1'", '"https://127.0.0.1:1\'"'))
    with pytest.raises(KubeError, match="the cluster's server is not a URL"):
        connect(str(quoted))


def test_backoff_grows_to_its_ceiling() -> None:
    backoff = Backoff(initial=0.2, factor=2.0, maximum=1.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 10)] == [0.2, 0.4, 0.8, 1.0, 1.0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty: no configuration has been provided"),
        (b"\n# nothing\n", "the file is empty"),
        (b"hello: world\n", "not a kubeconfig (no clusters, contexts or users)"),
        (b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "not a kubeconfig (kind Pod)"),
        (b"- 1\n- 2\n", "not a kubeconfig: a list, not a mapping"),
        (b"a: 1\n---\nb: 2\n", "not a kubeconfig: invalid YAML at line 2"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not a kubeconfig: not UTF-8 text (byte 0x89 at offset 0)"),
        (b"clusters: {a: 1}\n", "not a valid kubeconfig: clusters must be a list"),
    ],
    ids=["empty", "comment-only", "other-yaml", "a-pod", "a-list", "two-documents", "binary", "clusters-mapping"],
)
@pytest.mark.parametrize("command", ["simulate", "snapshot", "exporter"])
def test_a_file_that_is_no_kubeconfig_is_exit_2_with_a_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str, command: str
) -> None:
    from kubedra.cli import main
    path = tmp_path / "kubeconfig"
    path.write_bytes(content)
    assert main([command, "--kubeconfig", str(path)]) == 2
    out, err = capsys.readouterr()
    assert f"error: kubeconfig {path}: {message}" in err, err
    assert "Traceback" not in out + err
