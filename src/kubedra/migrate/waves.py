"""The order of a rollout: which device-plugin nodes each wave switches to DRA, and the runbook that carries it out.

``naive`` takes the nodes in name order. ``smart`` builds each wave greedily: of the nodes left, the one whose wave
(with the nodes already chosen for it) breaks the fewest PodDisruptionBudgets, restarts or fails the fewest
LeaderWorkerSet groups, JobSets and RayJobs (``group_restarts``, ``ray_restarts``), evicts or preempts the fewest pods
and leaves the fewest waiting — each candidate proven by simulating its wave — until the wave has ``--max-unavailable``
nodes; on clusters of up to ``LOOKAHEAD_UP_TO`` nodes a second greedy order scores each candidate with the rest of the
rollout in name order after it (a node drained last may have nowhere to send a budget's pods); beyond ``GREEDY_UP_TO``
nodes the greedy search is left out (name order, with a note), so that a large cluster's plan takes seconds. The best
order is then compared with the naive one over the whole rollout, and where naive is no worse (budgets broken, then
groups and JobSets restarted, then pods evicted or preempted, then waiting pods) smart keeps naive's order and says so:
smart is never worse than naive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubedra.migrate.drain import simulate_wave
from kubedra.migrate.group_restarts import GroupWave
from kubedra.migrate.job_failures import JobCount, JobWave
from kubedra.migrate.rollout import Cluster, Held, WaveOutcome, begin

PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"  # what the runbook's DRA driver install selects nodes by
DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"  # the GPU Operator's per-node switch


@dataclass
class Plan:
    order: str
    waves: list[WaveOutcome]
    start: dict[str, str]  # pod key -> node before the first wave
    waiting_at_start: dict[str, str]
    notes: list[str] = field(default_factory=list)
    held: dict[str, Held] = field(default_factory=dict, repr=False)  # the start's running pods, bound
    # each CronJob's next Job tried before the first wave, then after each (``cronjob_probe``): CronProbes by name
    cronjobs: list[dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def preempted(self) -> int:
        return sum(len(w.preempted) for w in self.waves)

    @property
    def evictions(self) -> int:
        return sum(len(w.evicted) for w in self.waves)

    @property
    def waiting(self) -> int:
        """Pod-waves spent pending: a pod waiting through two waves counts twice."""
        return sum(len(w.waiting) for w in self.waves)

    @property
    def breaks(self) -> int:
        return sum(w.breaks for w in self.waves)

    @property
    def lost(self) -> int:
        return sum(len(w.lost) for w in self.waves)

    @property
    def restarted(self) -> int:
        """LeaderWorkerSet groups, JobSets and RayJobs recreated, restarted or failed, wave by wave."""
        return sum(w.restarts for w in self.waves)

    def cost(self) -> tuple[int, int, int, int]:
        """Budgets broken, groups and JobSets that lose their progress, pods disrupted (evicted, preempted, deleted by
        a failed Job or with their group), waiting."""
        return (self.breaks, self.restarted, sum(w.disrupted for w in self.waves), self.waiting)


def _cost(outcome: WaveOutcome) -> tuple[int, int, int, int]:
    return (outcome.breaks, outcome.restarts, outcome.disrupted, len(outcome.waiting))


def _initial(cluster: Cluster, features: Any) -> tuple[dict[str, str], dict[str, str], dict[str, Held]]:
    first = begin(cluster, features)
    return ({k: n for k, (n, _) in first.status.items() if n},
            {k: why for k, (n, why) in first.status.items() if not n}, first.held)


def _tail(cluster: Cluster, features: Any, switched: set[str], placement: dict[str, str], order: list[str], *,
          max_unavailable: int, gone: frozenset[str] = frozenset(), held: dict[str, Held] | None = None,
          failures: dict[str, JobCount] | None = None) -> list[WaveOutcome]:
    """The waves that switch ``order`` from this state, ``max_unavailable`` nodes at a time (``gone``: the bare pods
    evicted before, never recreated)."""
    out = []
    switched = set(switched)
    for i in range(0, len(order), max_unavailable):
        wave = tuple(order[i: i + max_unavailable])
        outcome = simulate_wave(cluster, features, switched, wave, placement, gone=gone, held=held,
                                failures=failures)
        out.append(outcome)
        switched |= set(wave)
        placement, held, failures = outcome.placement, outcome.held, outcome.failures
        gone |= set(outcome.lost)
    return out


def plan_in_order(cluster: Cluster, features: Any, order: list[str], max_unavailable: int, name: str) -> Plan:
    placement, waiting, held = _initial(cluster, features)
    done = _tail(cluster, features, set(), placement, order, max_unavailable=max_unavailable, held=held)
    return Plan(name, done, dict(placement), waiting, held=held)


def naive(cluster: Cluster, features: Any, max_unavailable: int) -> Plan:
    return plan_in_order(cluster, features, sorted(cluster.gpu_nodes), max_unavailable, "naive")


def _total(outcomes: list[WaveOutcome]) -> tuple[int, int, int, int]:
    costs = [_cost(o) for o in outcomes]
    return (sum(c[0] for c in costs), sum(c[1] for c in costs), sum(c[2] for c in costs), sum(c[3] for c in costs))


def greedy(cluster: Cluster, features: Any, max_unavailable: int, *, lookahead: bool = False) -> Plan:
    """Each wave's nodes one at a time: the candidate whose wave costs least (``lookahead``: whose wave plus the
    rest of the rollout in name order costs least, which sees a budget the last nodes would break)."""
    placement, waiting, held = _initial(cluster, features)
    plan = Plan("smart", [], dict(placement), waiting, held=held)
    switched: set[str] = set()
    gone: frozenset[str] = frozenset()
    failures: dict[str, JobCount] = {}
    left = sorted(cluster.gpu_nodes)
    while left:
        wave: list[str] = []
        best: WaveOutcome | None = None
        while left and len(wave) < max_unavailable:
            tries = []
            for node in left:
                outcome = simulate_wave(cluster, features, switched, (*wave, node), placement, gone=gone,
                                        held=held, failures=failures)
                cost = _cost(outcome)
                if lookahead:
                    rest = [n for n in left if n != node]
                    cost = _total([outcome, *_tail(cluster, features, switched | {*wave, node}, outcome.placement,
                                                   rest, max_unavailable=max_unavailable,
                                                   gone=gone | set(outcome.lost), held=outcome.held,
                                                   failures=outcome.failures)])
                tries.append((cost, _cost(outcome), node, outcome))
            *_, node, best = min(tries, key=lambda t: t[:3])  # ties: the emptier wave, then name order
            wave.append(node)
            left.remove(node)
        assert best is not None
        plan.waves.append(best)
        switched |= set(wave)
        placement, held, failures = best.placement, best.held, best.failures
        gone |= set(best.lost)
    return plan


LOOKAHEAD_UP_TO = 12  # nodes: beyond, the lookahead's simulations (cubic in the nodes) are left out
GREEDY_UP_TO = 24  # nodes: beyond, the greedy search's simulations (quadratic in the nodes) are left out too


def smart(cluster: Cluster, features: Any, max_unavailable: int, baseline: Plan | None = None) -> Plan:
    """The best of the greedy orders (with lookahead on small clusters) and name order: budgets broken, then
    evictions, then waiting pods; name order where it is no worse."""
    baseline = baseline or naive(cluster, features, max_unavailable)
    if len(cluster.gpu_nodes) > GREEDY_UP_TO:
        kept = Plan("smart", baseline.waves, baseline.start, baseline.waiting_at_start)
        kept.notes.append(f"smart: {len(cluster.gpu_nodes)} nodes to switch, more than {GREEDY_UP_TO}: the greedy "
                          "search (a simulation per candidate node per wave) is left out; name order kept")
        return kept
    tried = [greedy(cluster, features, max_unavailable)]
    if len(cluster.gpu_nodes) <= LOOKAHEAD_UP_TO:
        tried.append(greedy(cluster, features, max_unavailable, lookahead=True))
    chosen = min(tried, key=Plan.cost)
    if baseline.cost() <= chosen.cost():
        kept = Plan("smart", baseline.waves, baseline.start, baseline.waiting_at_start)
        kept.notes.append("smart: no greedy order did better than name order over the whole rollout; name order "
                          "kept")
        return kept
    return chosen


def wave_rows(wave: WaveOutcome) -> list[tuple[str, str, str]]:
    """(pod, evicted, now) for each pod the wave touches, as the table and the report show them: the evicted pods,
    the other victims of preemption, the other pods a failed Job deleted, then the other pods left waiting."""
    rows = []
    deleted = [k for k in wave.job_lost if k not in wave.evicted and k not in wave.preempted]
    deleted += [k for k in wave.recreated if k not in wave.evicted and k not in wave.preempted and k not in deleted]
    for key in [*wave.evicted, *sorted(set(wave.preempted) - set(wave.evicted)), *deleted]:
        now = wave.placement.get(key) or "waiting"
        if key in wave.lost:
            now = "lost (its Job failed)" if key in wave.job_lost else "lost (bare pod)"
            now = f"lost ({wave.lost_why[key]})" if key in wave.lost_why else now
        evicted = ("yes" if key in wave.evicted else "no") + (", preempted" if key in wave.preempted else "")
        if key in wave.recreated and key not in wave.evicted:
            evicted += ", with its group"
        rows.append((key, evicted, now))
    shown = {key for key, _, _ in rows}
    rows += [(key, "no", "waiting") for key in sorted(set(wave.waiting) - shown)]
    return rows


def job_line(owner: str, job: JobWave) -> str:
    """A Job's cost in a wave, as the table prints it."""
    kind, name = owner.split("/", 1)
    evicted = f"{job.evicted} pod{'s' if job.evicted != 1 else ''} evicted"
    if job.preempted:
        preempted = f"{job.preempted} pod{'s' if job.preempted != 1 else ''} preempted"
        evicted = f"{evicted}, {preempted}" if job.evicted else preempted
    if job.failed:
        return f"{kind} {name} fails: {job.failed} ({evicted}; failures {job.counted}, backoffLimit {job.limit})"
    return (f"{kind} {name}: {evicted}, failures {job.counted} of backoffLimit {job.limit}; its new pods come after "
            f"a {job.backoff:g} s back-off")


def group_line(name: str, group: GroupWave) -> str:
    """A LeaderWorkerSet group or JobSet the wave restarts or fails, as the table prints it."""
    kind, rest = name.split("/", 1)
    hit = [f"{n} pod{'s' if n != 1 else ''} {done}" for n, done in ((group.evicted, "evicted"),
                                                                 (group.preempted, "preempted")) if n]
    pods = f"{', '.join(hit or ['0 pods evicted'])}, {group.deleted} more deleted"
    return f"{kind} {rest} {group.action} ({pods}): {group.why}"


def budget_line(budget: dict[str, Any]) -> str:
    """One broken budget, in words."""
    state = "loses quorum" if budget["losesQuorum"] else "below its budget"
    return (f"PodDisruptionBudget {budget['budget']}: {state}: wants {budget['desired']}, {budget['duringDrain']} "
            f"while draining, {budget['after']} after")


def detail_lines(wave: WaveOutcome, cronjobs: dict[str, Any]) -> list[str]:
    """What the table prints under a wave's pods: preemptions, waiting pods, budgets, Jobs, groups and the
    CronJobs' next Jobs (``cronjob_probe``), one line each."""
    return [*(f"preempted {key}: {by}" for key, by in sorted(wave.preempted.items())),
            *(f"waiting {key}: {why}" for key, why in sorted(wave.waiting.items())),
            *(budget_line(b) for b in wave.budgets),
            *(job_line(owner, job) for owner, job in wave.jobs.items()),
            *(group_line(name, group) for name, group in wave.workloads.items()),
            *(cron.line(name) for name, cron in cronjobs.items())]


def totals_row(plan: Plan, chosen: Plan) -> list[str]:
    """The order's totals, as the comparison table shows them."""
    return [plan.order + (" (chosen)" if plan is chosen else ""), str(len(plan.waves)), str(plan.evictions),
            str(plan.preempted), str(plan.lost), str(plan.waiting), str(plan.breaks)]


def commands(wave: WaveOutcome) -> list[str]:
    """What an operator runs for one wave, in order."""
    out: list[str] = []
    for node in wave.switching:
        out += [f"kubectl cordon {node}",
                f"kubectl drain {node} --ignore-daemonsets --delete-emptydir-data",
                f"kubectl label node {node} {DEVICE_PLUGIN_LABEL}=false --overwrite",
                f"kubectl label node {node} {PLUGIN_LABEL}=true --overwrite",
                f"kubectl get resourceslices --field-selector spec.nodeName={node}  # the driver published: uncordon",
                f"kubectl uncordon {node}"]
    return out


PREPARE = [
    "helm upgrade --install nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu --namespace nvidia-dra-driver-gpu "
    f"--create-namespace --set-string 'kubeletPlugin.nodeSelector.{PLUGIN_LABEL.replace('.', chr(92) + '.')}=true' "
    "-f driver-values.yaml",
    "kubectl apply -f deviceclasses.yaml  # kubedra migrate --mode extended-resource writes them",
]


def document(plan: Plan, other: Plan | None) -> dict[str, Any]:
    """The plan as ``-o yaml|json`` prints it: a runbook."""
    waves = []
    for i, w in enumerate(plan.waves, start=1):
        waves.append({
            "wave": i, "nodes": list(w.switching), "evicted": w.evicted, "lost": w.lost,
            "preempted": dict(sorted(w.preempted.items())), "landed": dict(sorted(w.moved.items())),
            "waiting": dict(sorted(w.waiting.items())),
            "budgets": w.budgets, **({"jobs": {o: j.as_dict() for o, j in w.jobs.items()}} if w.jobs else {}),
            **({"workloads": {o: g.as_dict() for o, g in w.workloads.items()}, "recreated": w.recreated}
               if w.workloads else {}),
            **({"cronjobs": {n: c.as_dict() for n, c in plan.cronjobs[i].items()}} if plan.cronjobs else {}),
            "commands": commands(w)})
    doc: dict[str, Any] = {
        "apiVersion": "kubedra.io/v1alpha1", "kind": "RolloutPlan", "order": plan.order,
        "summary": _summary(plan), "prepare": PREPARE, "waves": waves, "notes": plan.notes}
    if plan.cronjobs:
        doc["cronjobsAtStart"] = {n: c.as_dict() for n, c in plan.cronjobs[0].items()}
    if other is not None:
        doc["compare"] = {other.order: _summary(other)}
    return doc


def _summary(plan: Plan) -> dict[str, int]:
    return {"waves": len(plan.waves), "evictions": plan.evictions, "preempted": plan.preempted, "lost": plan.lost,
            "waiting": plan.waiting, "workloadsRestarted": plan.restarted,
            "budgetsBroken": plan.breaks}
