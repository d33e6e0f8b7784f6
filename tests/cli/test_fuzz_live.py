"""Hypothesis fuzzing of the commands that read a live cluster: snapshot, exporter --once, and simulate and explain
with --kubeconfig, against a real control plane of this module's own (test_fuzz_cli.py has the contract).

Each example puts random objects into the cluster (the fuzz documents, mutated; whatever the real kube-apiserver
accepts stays, for the real scheduler and controller-manager to act on), then runs every live command with a random
kubeconfig: the admin's, a token without rights (403), the admin's mutated or damaged, a missing file, a closed
port, or a local HTTP server that answers every request with a random status and body (the kube adapter's parsing).
Snapshot writes to stdout or to a random --output-dir (nothing written on exit 2, every file whole on exit 0), and a
snapshot of the real cluster must read back: ``simulate -f`` on it exits 0 or 1. The exporter's exposition must
parse. Examples: ``KUBEDRA_FUZZ_LIVE_EXAMPLES``, else tests/depth.py's per-run or deep count.
"""

from __future__ import annotations

import contextlib
import copy
import http.server
import json
import secrets
import tempfile
import threading
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzzing import CLAIM, CLASS, NODE, POD, SLICE, TEMPLATE, as_yaml, check, documents, invoke, mutate, tree, values
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from tests import depth
from tests.controlplane.fixture import ControlPlane, free_port, running_control_plane

from kubedra.kube.kinds import DOCUMENT_KINDS

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

EXAMPLES = depth.examples(per_run=15, deep=200, override="KUBEDRA_FUZZ_LIVE_EXAMPLES")
LIVE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each live example takes seconds; it reports as drawn
)
LIVE_HANG_SECONDS = 60.0
"""A live command lists seven kinds; against a loaded 2-core machine's control plane that stays under ~5 s."""
CLUSTER_DOCUMENTS = [NODE, SLICE, CLASS, CLAIM, TEMPLATE, POD]
KUBECONFIGS = ["admin", "admin", "admin", "reader", "mutated", "damaged", "missing", "closed-port", "odd-server"]
SNAPSHOT_FILES = [f"{10 * (i + 1)}-{kind.plural}.yaml" for i, kind in enumerate(DOCUMENT_KINDS)]  # as snapshot names them
SNAPSHOT_DIRS = ["stdout", "stdout", "fresh", "existing", "is-a-file", "target-is-a-directory"]


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """This module's own control plane: random Nodes and classes must not reach other tests' scheduling."""
    with running_control_plane() as started:
        yield started


# ---------------------------------------------------------------------------------------------- what is drawn


responses = st.one_of(
    st.tuples(st.sampled_from([200, 200, 201, 400, 403, 404, 410, 500, 503]),
              st.one_of(
                  values.map(lambda v: json.dumps(v).encode()),
                  st.builds(lambda items, rv: json.dumps({"kind": "List", "apiVersion": "v1", "items": items,
                                                          "metadata": {"resourceVersion": rv}}).encode(),
                            st.lists(values, max_size=3), st.one_of(st.text(max_size=4), st.integers())),
                  st.builds(lambda code, message: json.dumps({"kind": "Status", "apiVersion": "v1", "code": code,
                                                              "message": message, "status": "Failure"}).encode(),
                            values, values),
                  st.binary(max_size=40),
                  st.just(b""),
              )),
)


# The admin kubeconfig with placeholders for what only the started plane knows (mutations keep or replace them).
KUBECONFIG_TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "test", "cluster": {"server": "@SERVER@", "certificate-authority": "@CA@"}}],
    "users": [{"name": "admin", "user": {"token": "@TOKEN@"}}],
    "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin", "namespace": "default"}}],
    "current-context": "test",
}


@st.composite
def kubeconfigs(draw: st.DrawFn) -> tuple[str, Any]:
    """How the kubeconfig is made for this example, and what that needs (mutations, server answers)."""
    how = draw(st.sampled_from(KUBECONFIGS))
    if how == "mutated":
        docs = [copy.deepcopy(KUBECONFIG_TEMPLATE)]
        mutate(draw, docs, draw(st.integers(1, 3)))
        return how, docs[0]
    if how == "damaged":
        return how, (draw(st.integers(0, 2000)), draw(st.binary(max_size=4)))
    if how == "odd-server":
        return how, draw(st.lists(responses, min_size=1, max_size=4))
    return how, None


@st.composite
def cluster_objects(draw: st.DrawFn) -> list[Any]:
    docs = draw(documents((CLUSTER_DOCUMENTS,)))
    return [d for d in docs if isinstance(d, dict)]


# ---------------------------------------------------------------------------------------------- helpers


class OddServer(http.server.ThreadingHTTPServer):
    """Answers every request with the next of ``answers`` (cycling): a random status and body."""

    daemon_threads = True

    def __init__(self, answers: list[tuple[int, bytes]]) -> None:
        self.answers = answers
        self.calls = 0
        super().__init__(("127.0.0.1", 0), OddHandler)


class OddHandler(http.server.BaseHTTPRequestHandler):
    server: OddServer

    def _answer(self) -> None:
        status, body = self.server.answers[self.server.calls % len(self.server.answers)]
        self.server.calls += 1
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _filled(plane: ControlPlane, document: Any) -> bytes:
    text = yaml.safe_dump(document)
    for placeholder, value in (("@SERVER@", plane.server), ("@CA@", str(plane.cert_dir / "apiserver.crt")),
                               ("@TOKEN@", plane.token)):
        text = text.replace(placeholder, value)
    return text.encode()


@contextlib.contextmanager
def kubeconfig_file(plane: ControlPlane, directory: Path, how: str, detail: Any) -> Iterator[Path]:
    admin = yaml.safe_load(_filled(plane, KUBECONFIG_TEMPLATE))
    path = directory / "kubeconfig"
    server: OddServer | None = None
    if how == "admin":
        path.write_text(yaml.safe_dump(admin))
    elif how == "reader":
        path = plane.kubeconfig_for(plane.reader_token, "reader")
    elif how == "mutated":
        path.write_bytes(_filled(plane, detail))
    elif how == "damaged":
        at, junk = detail
        text = _filled(plane, KUBECONFIG_TEMPLATE)
        at %= len(text)
        path.write_bytes(text[:at] + junk + text[at + 1 :])
    elif how == "missing":
        path = directory / "no-such-kubeconfig"
    elif how in ("closed-port", "odd-server"):
        if how == "odd-server":
            server = OddServer(detail)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            port = server.server_address[1]
        else:
            port = free_port()
        config = copy.deepcopy(admin)
        config["clusters"][0]["cluster"] = {"server": f"http://127.0.0.1:{port}"}
        path.write_text(yaml.safe_dump(config))
    try:
        yield path
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()


_COLLECTIONS = {
    ("v1", "Node"): "/api/v1/nodes",
    ("v1", "Pod"): "/api/v1/namespaces/{ns}/pods",
    ("resource.k8s.io/v1", "DeviceClass"): "/apis/resource.k8s.io/v1/deviceclasses",
    ("resource.k8s.io/v1", "ResourceSlice"): "/apis/resource.k8s.io/v1/resourceslices",
    ("resource.k8s.io/v1", "ResourceClaim"): "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
    ("resource.k8s.io/v1beta1", "ResourceClaimTemplate"):
        "/apis/resource.k8s.io/v1beta1/namespaces/{ns}/resourceclaimtemplates",
}


@contextlib.contextmanager
def populated(plane: ControlPlane, objects: list[dict[str, Any]]) -> Iterator[str]:
    """The objects the API server accepts, created (namespaced ones in a fresh namespace, whose name is yielded);
    the cluster-scoped ones deleted again after the example."""
    namespace = f"fz-{secrets.token_hex(4)}"
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": namespace}})
    created: list[str] = []
    for document in objects:
        collection = _COLLECTIONS.get((str(document.get("apiVersion")), str(document.get("kind"))))
        if collection is None:
            continue
        body = document
        if "{ns}" in collection and isinstance(document.get("metadata"), dict):
            body = {**document, "metadata": {**document["metadata"], "namespace": namespace}}
        try:
            answer = plane.request("POST", collection.format(ns=namespace), body)
        except (urllib.error.HTTPError, TypeError, ValueError):
            continue  # refused by the API server (or not even JSON): not part of the cluster
        if "{ns}" not in collection:
            created.append(f"{collection}/{answer['metadata']['name']}")
    try:
        yield namespace
    finally:
        for path in created:
            with contextlib.suppress(urllib.error.HTTPError):
                plane.request("DELETE", path)


def _snapshot_output(root: Path, where: str) -> Path | None:
    if where == "stdout":
        return None
    out = root / "snapshot"
    if where == "existing":
        out.mkdir()
        (out / "keep.txt").write_text("not ours\n")
    elif where == "is-a-file":
        out.write_text("a file\n")
    elif where == "target-is-a-directory":
        (out / SNAPSHOT_FILES[2]).mkdir(parents=True)
    return out


def reads_back(path: Path) -> None:
    """A snapshot of a real cluster is valid input: simulate reads it and decides (0 or 1), never refuses it."""
    outcome = invoke(["simulate", "-f", str(path), "-o", "json"])
    check(outcome, json_output=True, codes=(0, 1))


# ---------------------------------------------------------------------------------------------- the tests


# Found by this test: lightkube's JSONDecodeError on an error status whose body is no JSON (a proxy's HTML page) was
# a traceback; kube/api.py's READ_ERRORS now make it exit 2 naming the listing.
PROXY_PAGE = ("odd-server", [(502, b"<html><body>Bad Gateway</body></html>")])


@LIVE
@given(cluster_objects(), kubeconfigs(), st.sampled_from(SNAPSHOT_DIRS))
@example([], PROXY_PAGE, "stdout")
@example([], ("odd-server", [(200, b'{"kind": "List", "items": 5}')]), "fresh")
@example([], ("admin", None), "target-is-a-directory")
def test_snapshot(plane: ControlPlane, objects: list[dict[str, Any]], kubeconfig: tuple[str, Any], where: str) -> None:
    with populated(plane, objects), tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        with kubeconfig_file(plane, root, *kubeconfig) as path:
            output = _snapshot_output(root, where)
            before = tree(root)
            argv = ["snapshot", "--kubeconfig", str(path)] + (["--output-dir", str(output)] if output else [])
            outcome = invoke(argv, hang=LIVE_HANG_SECONDS)
            check(outcome, codes=(0, 2))
            event(f"{kubeconfig[0]}: exit {outcome.code}")
        after = tree(root)
        if outcome.code == 2 or output is None:
            assert after == before, f"snapshot exited {outcome.code} and changed {sorted(set(after) ^ set(before))}"
        if outcome.code != 0:
            return
        if output is None:
            documents_out = list(yaml.safe_load_all(outcome.out))
            (root / "snapshot.yaml").write_text(outcome.out)
            output = root / "snapshot.yaml"
        else:
            written = [p for p in output.iterdir() if p.name != "keep.txt"]
            assert sorted(p.name for p in written) == sorted(SNAPSHOT_FILES), sorted(p.name for p in written)
            documents_out = [d for p in written for d in yaml.safe_load_all(p.read_text())]
        assert all(isinstance(d, dict) and d.get("kind") for d in documents_out if d is not None)
        if kubeconfig[0] == "admin":
            assert documents_out, "the admin's snapshot of a cluster with namespaces and objects is empty"
            reads_back(output)


@LIVE
@given(cluster_objects(), kubeconfigs(), st.sampled_from(["0.5", "2", "5"]),
       st.sampled_from(["1.37", "1.37", "1.34", "1.36", "1.20", "x", ""]))
@example([], PROXY_PAGE, "2", "1.37")
@example([], ("admin", None), "5", "1.37")
def test_exporter_once(plane: ControlPlane, objects: list[dict[str, Any]], kubeconfig: tuple[str, Any],
                       sync_timeout: str, version: str) -> None:
    with populated(plane, objects), tempfile.TemporaryDirectory() as directory, \
            kubeconfig_file(plane, Path(directory), *kubeconfig) as path:
        argv = ["exporter", "--kubeconfig", str(path), "--once", "--sync-timeout", sync_timeout,
                "--kubernetes-version", version]
        outcome = invoke(argv, hang=LIVE_HANG_SECONDS)
    check(outcome, codes=(0, 2))
    event(f"{kubeconfig[0]}: exit {outcome.code}")
    if outcome.code == 0:
        families = {f.name for f in text_string_to_metric_families(outcome.out)}
        assert "kubedra_exporter_synced" in families, sorted(families)


@LIVE
@given(cluster_objects(), kubeconfigs(), st.one_of(st.just(b""), st.builds(as_yaml, documents())))
def test_simulate_and_explain_live(plane: ControlPlane, objects: list[dict[str, Any]], kubeconfig: tuple[str, Any],
                                   what_if: bytes) -> None:
    """simulate --kubeconfig (sometimes with more objects on stdin: a what-if) and explain pod/claim live."""
    with populated(plane, objects) as namespace, tempfile.TemporaryDirectory() as directory, \
            kubeconfig_file(plane, Path(directory), *kubeconfig) as path:
        live = ["--kubeconfig", str(path)]
        simulate = ["simulate", *live, "-o", "json"] + (["-f", "-"] if what_if else [])
        runs = [
            (simulate, what_if),
            (["explain", "pod", f"{namespace}/p1", *live, "-o", "json"], b""),
            (["explain", "claim", f"{namespace}/c1", *live], b""),
        ]
        for argv, stdin in runs:
            outcome = invoke(argv, stdin, hang=LIVE_HANG_SECONDS)
            check(outcome, json_output="json" in argv)
            event(f"{argv[0]} {kubeconfig[0]}: exit {outcome.code}")
