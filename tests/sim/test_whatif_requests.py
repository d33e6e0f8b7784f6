"""What would make it fit, kinds ``fallback`` and ``count`` (``sim.whatif_requests``): each suggestion's JSON patch is
applied to the manifest it names and the whole scenario simulated again, where the pod must then run; no smaller
count is offered than the largest that fits, and a request no count helps gets none."""

from __future__ import annotations

import copy
from typing import Any

from fixtures.patches import applied as apply_patches
from fixtures.scenarios import claim_template, job, nodepool, pod, resource_claim, run
from hypothesis import given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.scheduler.scoring import Policy
from kubedra.sim.whatif import Inputs, Suggestion, what_would_fit

Doc = dict[str, Any]


def _suggest(*docs: Doc, pod_key: str = "default/waiting") -> list[Suggestion]:
    result = run(*docs).result
    assert result.state.pods[pod_key].phase == "Pending"
    assert result.allocator is not None
    return what_would_fit(Inputs(result.state, result.allocator.features, Policy.KUBE_SCHEDULER), pod_key)


def applied(docs: list[Doc], suggestion: Suggestion) -> list[Doc]:
    """``docs`` with the suggestion's patches applied to the objects they name."""
    return apply_patches(docs, suggestion.change)


def _phases(docs: list[Doc]) -> dict[str, str]:
    return {k: r.phase for k, r in run(*docs).result.state.pods.items()}


def test_an_eight_gpu_job_on_nodes_of_four_falls_back_to_four() -> None:
    """Issue 40's example: 8 GPUs asked, nodes of 4. A fallback keeps asking 8 first; lowering the count asks 4."""
    docs = [nodepool("a100", count=2, gpus=4), claim_template("eight", count=8), pod("waiting", template="eight")]
    suggestions = _suggest(*docs)
    assert [s.cost.kind for s in suggestions] == ["fallback", "count"]
    fallback, lowered = suggestions
    assert fallback.text == ("fits on 2 nodes (a100-0, a100-1) if ResourceClaimTemplate default/eight, request gpu, "
                             "asked firstAvailable [8, 4] devices instead of exactly 8 (it still gets 8 where 8 are free)")
    assert [(s["name"], s["count"]) for s in fallback.change["firstAvailable"]] == [("gpu-8", 8), ("gpu-4", 4)]
    assert lowered.change["field"] == "spec.spec.devices.requests[0].exactly.count"
    assert lowered.change["patch"] == [{"op": "replace", "path": "/spec/spec/devices/requests/0/exactly/count",
                                        "value": 4}]
    assert lowered.text == ("fits on 2 nodes (a100-0, a100-1) if ResourceClaimTemplate default/eight, request gpu, "
                            "asked 4 devices instead of 8")
    for suggestion in suggestions:
        assert _phases(applied(docs, suggestion))["default/waiting"] == "Running"


def test_a_claim_the_pod_names_is_patched_as_a_resource_claim() -> None:
    docs = [nodepool("a100", count=1, gpus=2), resource_claim("shared", count=3), pod("waiting", claim="shared")]
    lowered = next(s for s in _suggest(*docs) if s.cost.kind == "count")
    assert lowered.change["object"] == {"kind": "ResourceClaim", "name": "default/shared"}
    assert lowered.change["field"] == "spec.devices.requests[0].exactly.count"
    assert _phases(applied(docs, lowered))["default/waiting"] == "Running"


def test_a_request_already_written_with_first_available_gets_one_more_alternative() -> None:
    template = claim_template("prefer-h100")
    template["spec"]["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com", "count": 4,
         "selectors": [{"cel": {"expression": 'device.attributes["gpu.nvidia.com"].productName == "H100-80GB"'}}]},
        {"name": "any", "deviceClassName": "gpu.nvidia.com", "count": 4}]}]
    docs = [nodepool("a100", count=1, gpus=2), template, pod("waiting", template="prefer-h100")]
    suggestions = _suggest(*docs)
    assert [s.cost.kind for s in suggestions] == ["fallback"]  # no exactly.count to lower
    (fallback,) = suggestions
    assert fallback.change["patch"][0]["path"] == "/spec/spec/devices/requests/0/firstAvailable/-"
    assert fallback.change["patch"][0]["value"]["count"] == 2 and fallback.change["patch"][0]["value"]["name"] == "gpu-2"
    assert _phases(applied(docs, fallback))["default/waiting"] == "Running"


def test_where_the_largest_count_does_not_divide_the_one_asked_the_largest_divisor_is_offered_too() -> None:
    """One GPU held on a node of 8: 7 fits, but an 8-rank training job splits its work by 4, not 7."""
    docs = [nodepool("h100", count=1, gpus=8), claim_template("one", count=1), pod("holder", template="one"),
            claim_template("eight", count=8), pod("waiting", template="eight", start_after="1m")]
    counts = [(s.cost.kind, s.change["to"]) for s in _suggest(*docs) if s.cost.kind in ("fallback", "count")]
    assert counts == [("fallback", 7), ("fallback", 4), ("count", 7), ("count", 4)]
    four = next(s for s in _suggest(*docs) if s.cost.kind == "count" and s.change["to"] == 4)
    assert four.text.endswith("asked 4 devices instead of 8 (4 divides 8: the work splits evenly)")
    assert _phases(applied(docs, four))["default/waiting"] == "Running"


def test_a_job_asking_one_device_gets_no_count_change() -> None:
    docs = [nodepool("a100", count=1, gpus=1, model="A100-40GB"),
            claim_template("h100", selector='device.attributes["gpu.nvidia.com"].productName == "H100-80GB"'),
            job("waiting", template="h100")]
    result = run(*docs).result
    key = next(k for k in result.state.pods if k.startswith("default/waiting-"))
    assert result.allocator is not None
    assert what_would_fit(Inputs(result.state, result.allocator.features, Policy.KUBE_SCHEDULER), key) == []


@settings(max_examples=depth.examples(25, 250), deadline=None)
@given(gpus=st.integers(1, 4), nodes=st.integers(1, 2), asked=st.integers(2, 9), held=st.integers(0, 3),
       first_available=st.booleans())
def test_every_request_change_offered_runs_the_pod_and_none_is_missed(
    gpus: int, nodes: int, asked: int, held: int, first_available: bool
) -> None:
    """The property: each fallback or count suggested, applied, runs the pod; where none is suggested no smaller count
    would have; the counts suggested are the largest that runs it and, where that does not divide the count asked, the
    largest divisor that runs it."""
    template = claim_template("many", count=asked)
    if first_available:
        template["spec"]["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
            {"name": "all", "deviceClassName": "gpu.nvidia.com", "count": asked}]}]
    holder = claim_template("held", count=min(held, gpus)) if held else None
    docs = [nodepool("a100", count=nodes, gpus=gpus), template,
            *([holder, pod("holder", template="held")] if holder else []), pod("waiting", template="many")]
    result = run(*docs).result
    if result.state.pods["default/waiting"].phase != "Pending":
        return
    assert result.allocator is not None
    found = [s for s in what_would_fit(Inputs(result.state, result.allocator.features, Policy.KUBE_SCHEDULER),
                                       "default/waiting") if s.cost.kind in ("fallback", "count")]
    for suggestion in found:
        assert _phases(applied(docs, suggestion))["default/waiting"] == "Running", suggestion.text

    def runs_with(count: int) -> bool:
        lowered = copy.deepcopy(docs)
        lowered[1] = claim_template("many", count=count)
        return _phases(lowered)["default/waiting"] == "Running"

    largest = max((c for c in range(1, asked) if runs_with(c)), default=None)
    divisor = max((c for c in range(1, largest) if asked % c == 0 and runs_with(c)), default=None) if (
        largest is not None and asked % largest) else None
    assert {s.change["to"] for s in found} == {c for c in (largest, divisor) if c is not None}
