"""What would make it fit, kinds ``fallback`` and ``count``: a request for more devices than any node can give.

An 8-GPU Job on nodes of 4 says "4 devices match class gpu.nvidia.com, 8 requested". Two changes answer it, found by
the same search (the largest count below the request's that fits, proven on a copy of the end state) and each proven
on its own:

- ``fallback``: the request keeps asking for 8 first and falls back to the count that fits, written as
  ``firstAvailable`` (DRAPrioritizedList, on by default since 1.34): ``[{gpu-8: 8}, {gpu-4: 4}]``, the request's class,
  selectors and tolerations copied to each alternative. A request already written with ``firstAvailable`` gets one
  more alternative, a copy of its last with the smaller count. The workload gets 8 wherever 8 are free and 4 where
  not; the containers still name the request, so nothing else changes. Cost: the devices the fallback gives up.
- ``count``: ``spec.devices.requests[i].exactly.count`` lowered to that count: the workload asks for less than it said
  it needs, everywhere. Cost: the devices given up, plus one (ranked after the fallback, which gives up less).

Where the largest count that fits does not divide the one asked (7 of 8, one GPU held on every node), both are offered
again for the largest divisor that fits (4 of 8): data- and tensor-parallel workloads split their work by the count.

Both rank after a release: a workload made smaller costs more than waiting for a pod to end.

Only a claim the user writes is changed: the ResourceClaimTemplate the pod's claim is made from, or the ResourceClaim
the pod names (a claim's spec is immutable: the manifest is edited and the claim made again). ``change.patch`` is a
JSON patch (RFC 6902) on that object's manifest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from kubedra.cluster.state import PodRecord
from kubedra.objects.model import DeviceRequest, DeviceSubRequest, ResourceClaim
from kubedra.sim.whatif import Cost, Inputs, Limits, Suggestion, _copy, _fits, _on, _pending_claims, _template_of
from kubedra.sim.whatif_patches import claim_object, entry

EXACT_COUNT = ("", "ExactCount")


def _last(request: DeviceRequest) -> tuple[int, Any] | None:
    """(count, the alternative asked last) where the request asks an exact count above one of its last alternative."""
    last: Any = request.first_available[-1] if request.first_available else request.exactly
    if last is None or last.allocation_mode not in EXACT_COUNT or (last.count or 1) <= 1:
        return None
    return int(last.count or 1), last


def _sub_name(request: str, count: int, taken: set[str]) -> str:
    name = f"{request[: 55]}-{count}"
    while name in taken:
        name = f"{name[: 60]}x"
    return name


def _replaced(claim: ResourceClaim, index: int, request: DeviceRequest) -> ResourceClaim:
    requests = list(claim.spec.devices.requests)
    requests[index] = request
    devices = msgspec.structs.replace(claim.spec.devices, requests=requests)
    return msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, devices=devices))


def with_count(request: DeviceRequest, count: int) -> DeviceRequest:
    """``request`` (an ``exactly`` one) asking ``count`` devices."""
    assert request.exactly is not None
    return msgspec.structs.replace(request, exactly=msgspec.structs.replace(request.exactly, count=count))


def _alternative(last: Any, name: str, count: int) -> DeviceSubRequest:
    return DeviceSubRequest(name=name, device_class_name=last.device_class_name, selectors=list(last.selectors),
                            allocation_mode=last.allocation_mode, count=count, tolerations=list(last.tolerations),
                            capacity=last.capacity)


def with_fallback(request: DeviceRequest, count: int) -> DeviceRequest:
    """``request`` with one more ``firstAvailable`` alternative asking ``count`` devices (an ``exactly`` request
    written as two alternatives, its own first)."""
    found = _last(request)
    assert found is not None
    asked, last = found
    if request.first_available:
        taken = {s.name for s in request.first_available}
        added = _alternative(last, _sub_name(request.name, count, taken), count)
        return msgspec.structs.replace(request, first_available=[*request.first_available, added])
    first = _alternative(last, _sub_name(request.name, asked, set()), asked)
    second = _alternative(last, _sub_name(request.name, count, {first.name}), count)
    return msgspec.structs.replace(request, exactly=None, first_available=[first, second])


def _wire(sub: DeviceSubRequest) -> dict[str, Any]:
    return msgspec.to_builtins(sub)  # type: ignore[no-any-return]


def _largest(inputs: Inputs, record: PodRecord, target: tuple[str, ResourceClaim, int], *, asked: int,
             limits: Limits) -> tuple[int, list[str]] | None:
    """The largest count below ``asked`` with which the request's last alternative fits (bisected: fewer devices of
    the same kind never fit on fewer nodes), and where; the answer is proven, the bisection only finds it."""
    key, claim, index = target
    request = claim.spec.devices.requests[index]
    low, high, best = 1, asked - 1, None
    tries = 0
    while low <= high and tries < limits.counts:
        tries += 1
        middle = (low + high + 1) // 2
        changed = with_fallback(request, middle) if request.first_available else with_count(request, middle)
        fitting = _fits(inputs, _copy(inputs, claims={key: _replaced(claim, index, changed)}), record, None,
                        limits.nodes_checked)
        if fitting:
            best, low = (middle, fitting), middle + 1
        else:
            high = middle - 1
    return best


def _owner(record: PodRecord, key: str) -> tuple[str, str, str]:
    """(kind, namespace/name, the JSON pointer to the claim spec's requests) of the object the user edits."""
    return claim_object(_template_of(record, key), key)


def requests(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    """For each request of the pod's pending claims asking more than one device of its last alternative: the fallback
    to, and the lowering to, the largest count that fits."""
    for key, claim in _pending_claims(inputs.state, record):
        for index, request in enumerate(claim.spec.devices.requests):
            found = _last(request)
            if found is None:
                continue
            asked, _ = found
            largest = _largest(inputs, record, (key, claim, index), asked=asked, limits=limits)
            if largest is None:
                continue
            counts = [largest[0]]
            if asked % largest[0]:
                divisor = _largest_divisor(inputs, record, (key, claim, index), asked=asked, below=largest[0],
                                           limits=limits)
                counts += [divisor] if divisor is not None else []
            owner = _owner(record, key)
            for count in counts:
                even = count != counts[0]  # the divisor offered beside a larger count that does not divide
                if inputs.features.prioritized_list and not (request.exactly and request.exactly.admin_access):
                    yield from _fallback(inputs, record, (key, claim, index), count=count, owner=owner,
                                         limits=limits, even=even)
                if request.exactly is not None:
                    yield from _lowered(inputs, record, (key, claim, index), count=count, owner=owner, limits=limits,
                                        even=even)


def _largest_divisor(inputs: Inputs, record: PodRecord, target: tuple[str, ResourceClaim, int], *, asked: int,
                     below: int, limits: Limits) -> int | None:
    """The largest count below ``below`` that divides ``asked`` and fits: where the largest count that fits (7 of 8)
    would split the work unevenly, the count a data- or tensor-parallel workload can run with (4 of 8)."""
    key, claim, index = target
    request = claim.spec.devices.requests[index]
    divisors = [d for d in range(below - 1, 0, -1) if asked % d == 0][: limits.counts]
    for divisor in divisors:
        changed = with_fallback(request, divisor) if request.first_available else with_count(request, divisor)
        if _fits(inputs, _copy(inputs, claims={key: _replaced(claim, index, changed)}), record, None,
                 limits.nodes_checked):
            return divisor
    return None


def _divides(asked: int, count: int) -> str:
    return f"; {count} divides {asked}: the work splits evenly"


def _fallback(inputs: Inputs, record: PodRecord, target: tuple[str, ResourceClaim, int], *, count: int,
              owner: tuple[str, str, str], limits: Limits, even: bool = False) -> Iterator[Suggestion]:
    key, claim, index = target
    kind, name, pointer = owner
    request = claim.spec.devices.requests[index]
    changed = with_fallback(request, count)
    fitting = _fits(inputs, _copy(inputs, claims={key: _replaced(claim, index, changed)}), record, None,
                    limits.nodes_checked)
    if not fitting:
        return
    asked = _last(request)
    assert asked is not None
    added = changed.first_available[-1]
    patch: list[dict[str, Any]]
    if request.first_available:
        patch = [{"op": "add", "path": f"{pointer}/{index}/firstAvailable/-", "value": _wire(added)}]
        what = f"a last firstAvailable alternative {added.name} asking {count}"
    else:
        patch = [{"op": "remove", "path": f"{pointer}/{index}/exactly"},
                 {"op": "add", "path": f"{pointer}/{index}/firstAvailable",
                  "value": [_wire(s) for s in changed.first_available]}]
        what = f"firstAvailable [{asked[0]}, {count}] devices instead of exactly {asked[0]}"
    given_up = asked[0] - count
    yield Suggestion(
        f"fits on {_on(fitting)} if {kind} {name}, request {request.name}, asked {what} "
        f"(it still gets {asked[0]} where {asked[0]} are free{_divides(asked[0], count) if even else ''})",
        Cost("fallback", given_up, "devices", f"fall back to {count} of {asked[0]} devices"),
        {"object": {"kind": kind, "name": name}, "request": request.name, "from": asked[0], "to": count,
         "firstAvailable": [_wire(s) for s in changed.first_available], "patch": patch,
         "patches": [entry(kind, name, patch)]}, fitting)


def _lowered(inputs: Inputs, record: PodRecord, target: tuple[str, ResourceClaim, int], *, count: int,
             owner: tuple[str, str, str], limits: Limits, even: bool = False) -> Iterator[Suggestion]:
    key, claim, index = target
    kind, name, pointer = owner
    request = claim.spec.devices.requests[index]
    assert request.exactly is not None
    asked = int(request.exactly.count or 1)
    fitting = _fits(inputs, _copy(inputs, claims={key: _replaced(claim, index, with_count(request, count))}), record,
                    None, limits.nodes_checked)
    if not fitting:
        return
    field = f"{pointer}/{index}/exactly/count"
    yield Suggestion(
        f"fits on {_on(fitting)} if {kind} {name}, request {request.name}, asked {count} devices instead of {asked}"
        f"{f' ({_divides(asked, count)[2:]})' if even else ''}",
        Cost("count", asked - count + 1, "devices", f"ask {count} of {asked} devices"),
        {"object": {"kind": kind, "name": name}, "request": request.name,
         "field": field.replace("/", ".").lstrip(".").replace(f".{index}.", f"[{index}]."), "from": asked,
         "to": count, "patch": [{"op": "replace", "path": field, "value": count}],
         "patches": [entry(kind, name, [{"op": "replace", "path": field, "value": count}])]}, fitting)
