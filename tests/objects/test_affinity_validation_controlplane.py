"""``validate`` judges a pod's placement rules (``affinity``, ``topologySpreadConstraints``) as the real
kube-apiserver v1.37.2 does: for each pod, the same field paths with the same messages (server-side dry run; the
causes of its 422 answer against kubedra's front door), on hand-picked mistakes and on Hypothesis-drawn rules of
valid and invalid parts."""

from __future__ import annotations

import json
import urllib.error
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.controlplane.fixture import ControlPlane

from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text

pytestmark = pytest.mark.controlplane

NODE_TERM = {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}
POD_TERM = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}

CASES: dict[str, dict[str, Any]] = {
    "no node selector terms": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}},
    "In without values, Exists with values, unknown operator": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Near", "values": ["x"]}]}]}}},
    "Gt with two values, a bad key and value": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "cores", "operator": "Gt", "values": ["1", "2"]},
            {"key": "-bad/key/x", "operator": "In", "values": ["not a value!"]},
            {"key": "Example.com/x", "operator": "In", "values": ["ok"]}]}]}}},
    "match fields": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
                         {"key": "metadata.labels", "operator": "Exists"},
                         {"key": "metadata.name", "operator": "In", "values": ["Not_A_Name"]}]}]}}},
    "preferred weights and loose values": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": NODE_TERM},
        {"weight": 101, "preference": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["a b"]}]}}]}},
    "pod affinity term without a topology key": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}}]}},
    "bad topology key, namespaces and selector": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "-web", "bad key": "x"},
                              "matchExpressions": [{"key": "tier", "operator": "In"},
                                                   {"key": "tier", "operator": "DoesNotExist", "values": ["a"]},
                                                   {"key": "t", "operator": "Gt", "values": ["1"]}]},
            "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["x"]}]},
            "namespaces": ["ok", "a.b", "Caps"], "topologyKey": "zone/"}]}},
    "weighted pod affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": -1, "podAffinityTerm": POD_TERM}, {"weight": 100, "podAffinityTerm": {"topologyKey": ""}}]}},
    "match label keys": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {**POD_TERM, "matchLabelKeys": ["app", "pod-template-hash", "bad key"],
         "mismatchLabelKeys": ["pod-template-hash", "x/"]}]}},
    "match label keys the pod lacks a label for": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{**POD_TERM, "matchLabelKeys": ["tier"]}]}},
    "valid": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [NODE_TERM]},
                               "preferredDuringSchedulingIgnoredDuringExecution": [
                                   {"weight": 5, "preference": NODE_TERM}]},
              "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                  {**POD_TERM, "matchLabelKeys": ["pod-template-hash"], "namespaces": ["a", "b"]}]}},
}


SPREAD_CASES: dict[str, list[dict[str, Any]]] = {
    "skew, key, action, min domains": [
        {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Sometimes", "minDomains": 0},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}],
    "duplicates and policies": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "nodeAffinityPolicy": "Always"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "honor"},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
    "match label keys and selector": [
        {"maxSkew": 1, "topologyKey": "not a label key!", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "x", "operator": "In"}]},
         "matchLabelKeys": ["app", "pod-template-hash", "bad key"]},
        {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["app"]}],
}


def _pod(namespace: str, affinity: dict[str, Any], spread: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}], "affinity": affinity}
    if spread is not None:
        spec["topologySpreadConstraints"] = spread
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": namespace, "labels": {"app": "web", "pod-template-hash": "abc"}},
            "spec": spec}


def _real(plane: ControlPlane, pod: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        plane.request("POST", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods?dryRun=All", pod)
    except urllib.error.HTTPError as error:
        body = json.loads(error.read())
        assert body.get("reason") == "Invalid", body
        return sorted((c.get("field", ""), c["message"]) for c in body["details"]["causes"])
    return []


def _kubedra(pod: dict[str, Any]) -> list[tuple[str, str]]:
    """What kubedra's front door (every command's loader) says of the pod."""
    try:
        load_text(json.dumps(pod), source="pod.json")
    except InvalidInputError as error:
        return sorted((p.location.field, p.message) for p in error.problems)
    return []


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_mistake_is_named_as_the_api_server_names_it(control_plane: ControlPlane, namespace: str,
                                                          case: str) -> None:
    pod = _pod(namespace, CASES[case])
    real = _real(control_plane, pod)
    assert _kubedra(pod) == real
    assert (case == "valid" or case.endswith("lacks a label for")) == (real == [])


@pytest.mark.parametrize("case", sorted(SPREAD_CASES))
def test_each_spread_mistake_is_named_as_the_api_server_names_it(control_plane: ControlPlane, namespace: str,
                                                                 case: str) -> None:
    pod = _pod(namespace, {}, SPREAD_CASES[case])
    real = _real(control_plane, pod)
    assert real
    assert _kubedra(pod) == real


KEYS = st.sampled_from(["app", "kubernetes.io/hostname", "topology.kubernetes.io/zone", "", "a/b/c", "/x", "-x",
                        "example.com/", "UPPER.example.com/x", "x" * 64, "ok_key.1"])
VALUES = st.sampled_from(["web", "", "a b", "-x", "x" * 64, "A100", "1"])
OPERATORS = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "in", ""])
NAMESPACES = st.sampled_from(["default", "a.b", "Caps", "x" * 64, "ok-1"])


def _requirement(operators: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"key": KEYS, "operator": operators},
                                 optional={"values": st.lists(VALUES, max_size=2)})


SELECTOR = st.fixed_dictionaries({}, optional={
    "matchLabels": st.dictionaries(KEYS, VALUES, max_size=2),
    "matchExpressions": st.lists(_requirement(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt"])),
                                 max_size=2)})
NODE_TERMS = st.fixed_dictionaries({}, optional={
    "matchExpressions": st.lists(_requirement(OPERATORS), min_size=1, max_size=2),
    "matchFields": st.lists(st.fixed_dictionaries({"key": st.sampled_from(["metadata.name", "spec.x"]),
                                                   "operator": st.sampled_from(["In", "NotIn", "Exists"]),
                                                   "values": st.lists(st.sampled_from(["n1", "N_1"]),
                                                                      max_size=2)}), max_size=1)})
POD_TERMS = st.fixed_dictionaries({"topologyKey": KEYS}, optional={
    "labelSelector": SELECTOR, "namespaceSelector": SELECTOR, "namespaces": st.lists(NAMESPACES, max_size=2),
    "matchLabelKeys": st.lists(st.sampled_from(["app", "pod-template-hash", "tier", "bad key"]), max_size=2,
                               unique=True),
    "mismatchLabelKeys": st.lists(st.sampled_from(["pod-template-hash", "team", "x/"]), max_size=1)})
WEIGHTS = st.sampled_from([-1, 0, 1, 50, 100, 101])
AFFINITY = st.fixed_dictionaries({}, optional={
    "nodeAffinity": st.fixed_dictionaries({}, optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries(
            {"nodeSelectorTerms": st.lists(NODE_TERMS, max_size=2)}),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
            st.fixed_dictionaries({"weight": WEIGHTS, "preference": NODE_TERMS}), max_size=1)}),
    "podAffinity": st.fixed_dictionaries({}, optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(POD_TERMS, max_size=1),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
            st.fixed_dictionaries({"weight": WEIGHTS, "podAffinityTerm": POD_TERMS}), max_size=1)}),
    "podAntiAffinity": st.fixed_dictionaries({}, optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(POD_TERMS, max_size=1)})})


SPREAD = st.lists(st.fixed_dictionaries(
    {"maxSkew": st.sampled_from([-1, 0, 1, 3]), "topologyKey": KEYS,
     "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "Never", ""])},
    optional={"minDomains": st.sampled_from([-1, 0, 1, 3]), "labelSelector": SELECTOR,
              "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore", "honor"]),
              "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore", ""]),
              "matchLabelKeys": st.lists(st.sampled_from(["app", "pod-template-hash", "tier", "bad key"]),
                                         max_size=2, unique=True)}), max_size=3)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(affinity=AFFINITY, spread=SPREAD)
def test_drawn_placement_rules_are_judged_alike(control_plane: ControlPlane, namespace: str,
                                                affinity: dict[str, Any], spread: list[dict[str, Any]]) -> None:
    pod = _pod(namespace, affinity, spread or None)
    assert _kubedra(pod) == _real(control_plane, pod)
