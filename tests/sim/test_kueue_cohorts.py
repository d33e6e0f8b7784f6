"""Kueue's cohorts in ``kubedra simulate`` (``sim.kueue``): ClusterQueues naming the same ``cohortName`` borrow each
other's unused nominal quota within their borrowingLimit and what the others' lendingLimit lends, as Kueue v0.17's
cache computes it (``pkg/cache/scheduler/resource_node.go``: ``available``), and a scheduling cycle admits the
heads that do not borrow before those that do (``scheduler.go``: ``makeClassicalIterator``). ``tests/kueue`` runs
the real controller on the same shapes at t=0."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from tests.sim.test_kueue import V1B2, admitted, flavor, job, nodes, run

from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario


def cq(name: str, gpus: str, cohort: str | None = "org", borrowing: str | None = None,
       lending: str | None = None, **spec: Any) -> dict[str, Any]:
    gpu: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
    if borrowing is not None:
        gpu["borrowingLimit"] = borrowing
    if lending is not None:
        gpu["lendingLimit"] = lending
    group = {"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "64"}, gpu]}]}
    return {"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [group], **({"cohortName": cohort} if cohort else {}), **spec}}


def lq(name: str, cluster_queue: str) -> dict[str, Any]:
    return {"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": name, "namespace": "default"},
            "spec": {"clusterQueue": cluster_queue}}


def queues(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    return [flavor("default"), a, b, lq("qa", "a"), lq("qb", "b"), nodes(4)]


def test_a_cluster_queue_borrows_what_its_cohort_leaves_unused() -> None:
    """``a`` has 4 GPUs, ``b`` 4 unused: ``a`` runs 8 at once; the ninth waits for one to finish."""
    result = run(*queues(cq("a", "4"), cq("b", "4")),
                 *(job(f"j{i}", 2, queue="qa") for i in range(4)), job("late", 2, queue="qa", start_after="1s"))
    assert set(admitted(result, 0.0)) == {"j0", "j1", "j2", "j3"}
    assert admitted(result).keys() == {"j0", "j1", "j2", "j3", "late"}
    assert next(e.time for e in result.events if e.type == "Admitted" and e.object.endswith("/late")) == 3600.0


def test_without_a_cohort_nothing_is_borrowed() -> None:
    result = run(*queues(cq("a", "4", cohort=None), cq("b", "4", cohort=None)),
                 *(job(f"j{i}", 2, queue="qa") for i in range(4)))
    assert set(admitted(result, 0.0)) == {"j0", "j1"}


@pytest.mark.parametrize(("a", "b", "expected"), [
    (cq("a", "4", borrowing="2"), cq("b", "4"), {"j0", "j1", "j2"}),  # 4 + 2 borrowed
    (cq("a", "4"), cq("b", "4", lending="2"), {"j0", "j1", "j2"}),  # b lends only 2
    (cq("a", "4", lending="0"), cq("b", "4", lending="0"), {"j0", "j1"}),  # nothing lent
    (cq("a", "4", borrowing="0"), cq("b", "4"), {"j0", "j1"}),  # nothing borrowed
])
def test_borrowing_and_lending_limits_bound_what_is_borrowed(
    a: dict[str, Any], b: dict[str, Any], expected: set[str]
) -> None:
    result = run(*queues(a, b), *(job(f"j{i}", 2, queue="qa") for i in range(4)))
    assert set(admitted(result, 0.0)) == expected


def test_quota_lent_is_not_lent_again_and_the_lender_takes_what_is_left() -> None:
    """``a`` borrows 2 of ``b``'s 4; ``b`` then has 2 left for its own and waits for the rest."""
    result = run(*queues(cq("a", "4"), cq("b", "4")), job("big", 6, queue="qa"),
                 job("mine", 2, queue="qb", start_after="1s"), job("more", 4, queue="qb", start_after="2s"))
    assert set(admitted(result, 0.0)) == {"big"}
    assert next(e.time for e in result.events if e.type == "Admitted" and e.object.endswith("/mine")) == 1.0
    assert next(e.time for e in result.events if e.type == "Admitted" and e.object.endswith("/more")) == 3600.0


def test_in_one_cycle_the_head_within_nominal_quota_goes_before_the_borrower() -> None:
    """Both heads arrive together; ``b``'s own 4 GPUs go to ``b`` (no borrowing) before ``a`` may borrow them:
    ``a``'s head no longer fits in that cycle, and the next finds nothing left to borrow."""
    result = run(*queues(cq("a", "0"), cq("b", "4")), job("borrower", 4, queue="qa"), job("owner", 4, queue="qb"))
    assert set(admitted(result, 0.0)) == {"owner"}
    reasons = {e.object: e.message for e in result.events if e.type == "Inadmissible"}
    assert reasons == {"Job default/borrower": "couldn't assign flavors to pod set main: insufficient unused quota "
                                               "for nvidia.com/gpu in flavor default, 4 more needed"}


def test_a_limit_without_a_cohort_is_refused() -> None:
    with pytest.raises(InvalidInputError) as refused:
        build_scenario(load_text(yaml.safe_dump_all([flavor("default"), cq("a", "4", cohort=None, borrowing="1")])))
    (problem,) = refused.value.problems
    assert "borrowingLimit must be nil when cohort is empty" in problem.message


def test_a_lending_limit_over_the_nominal_quota_is_refused() -> None:
    with pytest.raises(InvalidInputError) as refused:
        build_scenario(load_text(yaml.safe_dump_all([flavor("default"), cq("a", "4", lending="5")])))
    (problem,) = refused.value.problems
    assert problem.location.field == "spec.resourceGroups[0].flavors[0].resources[1].lendingLimit"
