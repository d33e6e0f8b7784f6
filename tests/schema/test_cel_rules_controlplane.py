"""The vendored CRDs' CEL rules (``x-kubernetes-validations``) as the real kube-apiserver v1.37.2 applies them: each
CRD with create-time rules is installed on the test control plane, documents that break each rule (and one that
also breaks the schema, after which the server leaves the rules unchecked) are created with a server-side dry run,
and the causes the server answers (field and message) are exactly the problems kubedra's schema checker finds."""

from __future__ import annotations

import copy
import json
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest
from tests.controlplane.fixture import ControlPlane
from tests.schema.test_vendored_crds import (
    CONTAINERS,
    GPUCLUSTER,
    JOBSET,
    RAYJOB,
    TRAINING_RUNTIME,
    TRAINJOB,
    ray_cluster,
)

from kubedra.schema import SchemaChecker
from kubedra.schema.published import manifest, read

pytestmark = pytest.mark.controlplane

UNPROCESSABLE = 422
# the vendored kinds with rules that run on create
RULED = ("GPUCluster", "JobSet", "RayCluster", "RayJob", "TrainJob", "ClusterTrainingRuntime")
PLURALS = {"GPUCluster": "gpuclusters", "JobSet": "jobsets", "RayCluster": "rayclusters", "RayJob": "rayjobs",
           "TrainJob": "trainjobs", "ClusterTrainingRuntime": "clustertrainingruntimes"}
CLUSTER_SCOPED = ("GPUCluster", "ClusterTrainingRuntime")


def _edited(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(document)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    node[last] = value
    return out


IN_ORDER = {"startupPolicyOrder": "InOrder"}
SECOND_JOB = {"name": "b", "dependsOn": [{"name": "w", "status": "Complete"}],
              "template": {"spec": {"template": {"spec": {"restartPolicy": "Never", **CONTAINERS}}}}}
CLAIM_TEMPLATE = {"metadata": {"name": "data", "namespace": "other"},
                  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}

# (kind, what it breaks, the document)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("GPUCluster", "the singleton's name", _edited(GPUCLUSTER, "metadata.name", "mine")),
    ("JobSet", "InOrder with dependsOn", _edited(_edited(JOBSET, "spec.startupPolicy", IN_ORDER),
                                                 "spec.replicatedJobs", [*JOBSET["spec"]["replicatedJobs"],
                                                                         SECOND_JOB])),
    ("JobSet", "a volume claim template's namespace",
     _edited(JOBSET, "spec.volumeClaimPolicies", [{"templates": [CLAIM_TEMPLATE]}])),
    ("JobSet", "an enum and a rule: the rules are left unchecked",
     _edited(_edited(JOBSET, "spec.startupPolicy", {"startupPolicyOrder": "Sideways"}), "spec.replicatedJobs",
             [*JOBSET["spec"]["replicatedJobs"], SECOND_JOB])),
    ("RayCluster", "managedBy", _edited({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
                                          "spec": ray_cluster()["spec"]}, "spec.managedBy", "someone")),
    ("RayJob", "both deletion styles", _edited(RAYJOB, "spec.deletionStrategy", {
        "onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteNone"},
        "deletionRules": [{"condition": {"jobStatus": "SUCCEEDED"}, "policy": "DeleteCluster"}]})),
    ("RayJob", "an empty deletionStrategy", _edited(RAYJOB, "spec.deletionStrategy", {})),
    ("TrainJob", "a name that is no DNS-1035 label", _edited(TRAINJOB, "metadata.name", "llm.v2")),
    ("TrainJob", "managedBy", _edited(TRAINJOB, "spec.managedBy", "someone")),
    ("TrainJob", "a storage URI", _edited(TRAINJOB, "spec.initializer", {"dataset": {"storageUri": "no-scheme"}})),
    ("ClusterTrainingRuntime", "two ML policies", _edited(TRAINING_RUNTIME, "spec.mlPolicy",
                                                          {"torch": {}, "mpi": {"numProcPerNode": 1}})),
    ("RayJob", "managedBy twice", _edited(_edited(RAYJOB, "spec.managedBy", "me"), "spec.rayClusterSpec.managedBy",
                                          "you")),
]


@pytest.fixture(scope="module")
def served(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """The vendored CRDs with create-time rules, served by the session's API server (removed afterwards)."""
    names = []
    for source in {manifest()[key] for key in manifest() if key[1] in RULED}:
        crd = read(source)["crd"]
        names.append(crd["metadata"]["name"])
        body = {**crd, "metadata": {"name": crd["metadata"]["name"]}}
        control_plane.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)

    def established() -> bool:
        for name in names:
            crd = control_plane.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conditions = (crd.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    control_plane.wait_for(established, timeout=60, what="the vendored CRDs to be established")
    try:
        yield control_plane
    finally:
        for name in names:
            control_plane.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")


def _causes(plane: ControlPlane, namespace: str, document: dict[str, Any]) -> list[tuple[str, str]]:
    group_version = document["apiVersion"]
    scoped = "" if document["kind"] in CLUSTER_SCOPED else f"/namespaces/{namespace}"
    if scoped:
        document = {**document, "metadata": {**document["metadata"], "namespace": namespace}}
    path = f"/apis/{group_version}{scoped}/{PLURALS[document['kind']]}?dryRun=All&fieldValidation=Strict"
    with pytest.raises(urllib.error.HTTPError) as refused:
        plane.request("POST", path, document)
    body = refused.value.read()
    assert refused.value.code == UNPROCESSABLE, body
    return sorted((c.get("field", ""), c["message"]) for c in json.loads(body)["details"]["causes"])


@pytest.mark.parametrize(("kind", "what", "document"), CASES, ids=[f"{k}-{w}" for k, w, _ in CASES])
def test_kubedra_refuses_what_the_api_server_refuses_in_its_words(
    served: ControlPlane, namespace: str, kind: str, what: str, document: dict[str, Any]
) -> None:
    real = _causes(served, namespace, document)
    ours = sorted((p.path, p.message) for p in SchemaChecker("1.35").check(document))
    assert ours == real
