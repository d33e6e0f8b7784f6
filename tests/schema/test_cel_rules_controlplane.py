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
PLURALS = {"Probe": "probes", "GPUCluster": "gpuclusters", "JobSet": "jobsets", "RayCluster": "rayclusters", "RayJob": "rayjobs",
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
    names = control_plane.install_crds([read(manifest()[key])["crd"] for key in manifest() if key[1] in RULED])
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


# A CRD of the tests' own: a rule for each of ``reason``, ``fieldPath``, ``messageExpression`` (one that is empty,
# blank, multi-line or fails), ``optionalOldSelf`` and transition rules on create, a runtime error, and rules inside
# a list of objects and maps (where the path carries indexes and keys).
def _string(*rules: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "string", "maxLength": 16, **more, **({"x-kubernetes-validations": list(rules)} if rules else {})}


ITEM = {"type": "object", "properties": {"name": _string({"rule": "self != 'bad'", "message": "bad name"}),
                                         "size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "!has(self.size) || self.size <= 100", "fieldPath": ".size",
                                      "message": "size at most 100"}]}
LIMIT = {"type": "object", "properties": {"max": {"type": "integer", "x-kubernetes-validations": [
    {"rule": "self < 1000", "messageExpression": "'max is ' + (self > 9999 ? 'far ' : '') + 'too big'"}]}},
         "x-kubernetes-validations": [{"rule": "!has(self.max) || self.max > 0", "fieldPath": ".max",
                                       "reason": "FieldValueForbidden", "message": "max must be positive"}]}
OK = "self == 'ok'"
SPEC = {
    "type": "object",
    "properties": {
        "forbidden": _string(), "needs": _string(), "required": _string(), "dotted.name": _string(),
        "names": {"type": "array", "maxItems": 8, "items": _string(), "x-kubernetes-validations": [
            {"rule": "self.all(x, self.exists_one(y, y == x))", "reason": "FieldValueDuplicate",
             "message": "names must be unique"}]},
        "tag": _string({"rule": "self != 'dup'", "reason": "FieldValueDuplicate"},
                       {"rule": "self.size() < 5", "reason": "FieldValueInvalid", "message": "  tag too long  "},
                       {"rule": "  self != 'spaced'  "}),
        "replicas": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self <= 10", "messageExpression": "self > 20 ? 'replicas far above 10' : 'replicas above 10'",
             "message": "too many"}]},
        "padded": _string({"rule": OK, "messageExpression": "'  padded ' + self + '  '"}),
        "quiet": _string({"rule": OK, "messageExpression": "''", "message": "quiet must be ok"}),
        "blank": _string({"rule": OK, "messageExpression": "'   '"}),
        "multiline": _string({"rule": OK, "messageExpression": "'line one\\nline two'", "message": "one line"}),
        "broken": {"type": "object", "properties": {"a": _string()}, "x-kubernetes-validations": [
            {"rule": "has(self.a)", "messageExpression": "'missing ' + self.a"}]},
        "count": {"type": "object", "properties": {"n": {"type": "integer"}}, "x-kubernetes-validations": [
            {"rule": "self.n > 0", "fieldPath": ".n", "reason": "FieldValueForbidden", "message": "n positive"}]},
        "flex": {"x-kubernetes-int-or-string": True, "x-kubernetes-validations": [{"rule": "self + 1 > 0"}]},
        "immutable": _string({"rule": "self == oldSelf", "message": "immutable"},
                             {"rule": "oldSelf.hasValue()", "optionalOldSelf": True, "message": "only on update"},
                             {"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": True,
                              "message": "unchanged"}),
        "escaped": {"type": "object", "properties": {
            "max-size": {"type": "integer"}, "namespace": _string(), "a.b": _string(), "x__y": _string(),
            "in": {"type": "integer"}, "my key": _string(),
            "labels": {"type": "object", "maxProperties": 8, "additionalProperties": _string()},
            "inner": {"type": "object", "properties": {"my/key": _string()}}},
            "x-kubernetes-validations": [
                {"rule": "!has(self.max__dash__size) || self.max__dash__size <= 4", "message": "max-size at most 4"},
                {"rule": "!has(self.__namespace__) || self.__namespace__ != 'kube-system'", "message": "namespace"},
                {"rule": "!has(self.a__dot__b) || self.a__dot__b.size() < 3", "message": "a.b short"},
                {"rule": "!has(self.x__underscores__y) || self.x__underscores__y != 'no'", "message": "x__y"},
                {"rule": "!has(self.__in__) || self.__in__ > 0"},
                {"rule": "!has(self.namespace) || self.namespace != 'default'", "message": "keyword as a field name"},
                {"rule": "!has(self.labels) || !('a.b' in self.labels)", "message": "map keys are not escaped"},
                {"rule": "!has(self.inner) || self.inner.my__slash__key != 'z'", "message": "nested"}]},
        "items": {"type": "array", "maxItems": 8, "items": ITEM},
        "limits": {"type": "object", "maxProperties": 8, "additionalProperties": LIMIT},
        "labels": {"type": "object", "maxProperties": 8, "additionalProperties": _string(
            {"rule": "self != 'bad'", "message": "bad label"}), "x-kubernetes-validations": [
            {"rule": "!('blocked' in self)", "fieldPath": "['blocked']", "reason": "FieldValueForbidden"}]},
    },
    "x-kubernetes-validations": [
        {"rule": "!has(self.forbidden)", "fieldPath": ".forbidden", "reason": "FieldValueForbidden",
         "message": "forbidden is forbidden"},
        {"rule": "!has(self.needs) || self.needs != 'required' || has(self.required)", "fieldPath": ".required",
         "reason": "FieldValueRequired", "message": "required when needs is required"},
        {"rule": "!has(self.needs) || self.needs != 'plain'", "reason": "FieldValueRequired"},
        {"rule": "!has(self.needs) || self.needs != 'dotted'", "fieldPath": "['dotted.name']",
         "reason": "FieldValueRequired", "message": "dotted"},
        {"rule": "!has(self.labels) || !('gated' in self.labels)", "fieldPath": ".labels['gated']",
         "reason": "FieldValueForbidden", "message": "no gated label"},
        {"rule": "!has(self.limits) || !(\"it's\" in self.limits)", "fieldPath": ".limits['it\\'s'].max",
         "reason": "FieldValueForbidden", "message": "no it's limit"},
    ],
}
PROBE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "probes.oracle.example.com"},
    "spec": {"group": "oracle.example.com", "scope": "Namespaced",
             "names": {"plural": "probes", "singular": "probe", "kind": "Probe", "listKind": "ProbeList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": SPEC}, "x-kubernetes-validations": [
                     {"rule": "!has(self.spec) || !has(self.spec.needs) || self.spec.needs != 'root'"
                              " || has(self.spec.required)", "fieldPath": ".spec.required",
                      "reason": "FieldValueRequired", "message": "root says required"}]}}}]},
}


def _probe(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "oracle.example.com/v1", "kind": "Probe", "metadata": {"name": "p"}, "spec": spec}


PROBES: list[tuple[str, dict[str, Any]]] = [
    ("Forbidden at a fieldPath", {"forbidden": "x"}),
    ("Required at a fieldPath", {"needs": "required"}),
    ("Required without message or fieldPath", {"needs": "plain"}),
    ("Required from the root", {"needs": "root"}),
    ("Required at a quoted fieldPath", {"needs": "dotted"}),
    ("Duplicate in a list", {"names": ["a", "b", "a"]}),
    ("Duplicate of a scalar", {"tag": "dup"}),
    ("Invalid with a padded message and a padded rule", {"tag": "spaced"}),
    ("messageExpression", {"replicas": 12}),
    ("messageExpression padded", {"padded": "no"}),
    ("messageExpression empty", {"quiet": "no"}),
    ("messageExpression blank without message", {"blank": "no"}),
    ("messageExpression multi-line", {"multiline": "no"}),
    ("messageExpression that errs", {"broken": {}}),
    ("a runtime error", {"count": {}}),
    ("an overload error at runtime", {"flex": "a"}),
    ("transition rules on create", {"immutable": "x"}),
    ("escaped property names", {"escaped": {"max-size": 9, "namespace": "kube-system", "a.b": "long", "x__y": "no",
                                            "in": 0, "labels": {"a.b": "1"}, "inner": {"my/key": "z"},
                                            "my key": "v"}}),
    ("escaped property names, all but one holding", {"escaped": {"max-size": 9, "namespace": "ml", "a.b": "s", "in": 2,
                                                      "my key": "v"}}),
    ("a keyword read as a field name", {"escaped": {"namespace": "default"}}),
    ("in a list of objects", {"items": [{"name": "a", "size": 1}, {"name": "bad", "size": 200}]}),
    ("in a map of objects", {"limits": {"gpu": {"max": -1}, "cpu": {"max": 5000}, "it's": {"max": 1}}}),
    ("in a map of strings and at its keys", {"labels": {"team": "bad", "blocked": "x", "gated": "y"}}),
]


@pytest.fixture(scope="module")
def probes(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """``PROBE_CRD``, served by the session's API server (removed afterwards)."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    control_plane.install_crds([PROBE_CRD])
    try:
        yield control_plane
    finally:
        control_plane.request("DELETE", f"{path}/probes.oracle.example.com")


@pytest.mark.parametrize(("what", "spec"), PROBES, ids=[w for w, _ in PROBES])
def test_rule_reasons_paths_and_messages_as_the_api_server_words_them(
    probes: ControlPlane, namespace: str, what: str, spec: dict[str, Any]
) -> None:
    document = _probe(spec)
    real = _causes(probes, namespace, document)
    checker = SchemaChecker("1.35")
    checker.add_crd(PROBE_CRD)
    assert sorted((p.path, p.message) for p in checker.check(document)) == real
