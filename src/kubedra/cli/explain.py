"""``kubedra explain KIND/NAME``: the one simulation ``kubedra simulate`` reports, then why, node by node."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any

import typer

from kubedra.cli.explain_describe import print_claim, print_pod, print_workload
from kubedra.cli.helptext import command_help
from kubedra.cli.options import (
    ContextOption,
    GatesOption,
    KubeconfigOption,
    OutputOption,
    PolicyOption,
    QuietOption,
    ScenarioFiles,
    SeedOption,
    VersionOption,
)
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    EXIT_OK,
    TABLE_FORMATS,
    OutputFormat,
    default_format,
    print_data,
    require_format,
    stderr_console,
)
from kubedra.scheduler.scoring import Policy

HELP = command_help(
    "Why a pod is pending, where it runs, or how it ended; why a claim is not allocated; a workload's pods, grouped.",
    "Explains the simulation [bold]kubedra simulate[/bold] reports (same inputs, same run; with no -f the seed "
    "scenario on the demo cluster; with --kubeconfig, the live cluster's state, read only).",
    "KIND is pod, claim, deployment, statefulset, replicaset, daemonset, job, jobset, leaderworkerset, raycluster, "
    "rayjob, pytorchjob or trainjob (kubectl's short names too), as [bold]KIND NAME[/bold] or "
    "[bold]KIND/NAME[/bold]; NAME may be namespace/name. A workload's pods are grouped: pods with the same answer "
    "together; a JobSet's or TrainJob's are also counted per replicated job, a LeaderWorkerSet's per group, a "
    "RayCluster's per group, a RayJob's per group of its cluster and its submitter Job, a PyTorchJob's per replica "
    "type (their pods found by the label their controller puts on them; a RayJob's by the cluster and Job the run "
    "made for it).",
    "Every node is checked in kube-scheduler's order: the pod's claims, node rules (node name, selector and affinity, "
    "taints, cpu/memory/pods, device-plugin resources), claims already allocated elsewhere, then the allocator, whose "
    "diagnosis names the claim and request that failed and why (the selector and the values it reads, the claims "
    "holding the devices, matchAttribute, counter sets, taints, consumable capacity). Nodes with the same explanation "
    "are grouped. The table is laid out as kubectl describe lays out an object: Name, Namespace, Status, Node, "
    "Claims, Nodes, What Would Make It Fit, and last the Events kube-scheduler records (FailedScheduling with its "
    "message; Scheduled).",
    "For a pending pod, What Would Make It Fit: the few smallest changes that let it fit, each proven by running the "
    "scheduler's Filter for the pod on a copy of the end state with the change made, cheapest first: a resource a "
    "node pool does not publish published (cost: resources named), a numeric threshold of a CEL selector relaxed to "
    "the nearest value a device offers (cost: how far it moved), a node or device taint tolerated (cost: 1 "
    "NoSchedule, 2 NoExecute, +1 on a device), the pods holding devices on a node ended (cost: pods ended), a request "
    "for more devices than fit given a firstAvailable fallback to the largest count that fits, or its exactly.count "
    "lowered to it, and to the largest divisor of the count asked where the largest does not divide it (cost: "
    "devices given up; a JSON patch on the template or claim), the fewest lower-priority pods on a node deleted "
    "where kube-scheduler will not preempt them (preemptionPolicy Never; devices, which preemption does not free in "
    "1.37; offered instead of ending the same pods) (cost: pods deleted), one more node of a node pool (cost: nodes "
    "added); where no single change fits, a pool's missing resources published together with each other change. "
    "Each is proven for the pod alone "
    "(other pending pods may take what it frees). A waiting gang's members (a PodGroup) are placed as a group: "
    "they get the fewest more nodes of a pool with which every member runs, each count proven by simulating the "
    "whole run again (at most 8 runs, 8 nodes).",
    "-o json prints {pod, phase, node, message, summary, startedAt, endedAt, endReason, claims, groups: [{check, "
    "reason, reasons, count, nodes}]}; for a claim {claim, state, devices, allocatedOn, reservedFor, message, pods, "
    "groups}; for a workload {workload, summary, groups: [{phase, count, pods, nodes, explanation}]}. A PodGroup's "
    "member adds gang {podGroup, policy, minCount, memberCount, bound, condition, waiting, members}; a pod preemption "
    "concerns adds preemption {possible, node, victims, message}; a pending pod adds whatWouldFit [{kind: resources|"
    "selector|toleration|release|fallback|count|preemption|nodes, text, change, fitsOn, cost {amount, unit, text}}]; "
    "a change that edits manifests has patches [{object {kind, name}, patch}], JSON patches on the objects you write.",
    examples=[
        "kubedra explain pod trainer-n92p7 -n ml-training",
        "kubedra explain pod/ml-training/trainer-n92p7 -o json",
        "kubedra explain claim my-gpu-claim -n ml-training",
        "kubedra explain deployment/llm-inference",
        "kubedra explain pod inference-gpu -f examples/workloads/preemption.yaml",
        "kubedra explain trainjob/training/llm -f examples/workloads/trainjob.yaml   # its pods per replicated job",
        "kubedra explain pod no-such-pod   # exit 2: not found",
    ],
    exit_status="0 when explained, 2 when the object does not exist (close names are suggested) or the input is bad.",
)

KINDS = {
    **dict.fromkeys(("pod", "pods", "po"), "pod"),
    **dict.fromkeys(("claim", "claims", "resourceclaim", "resourceclaims"), "resourceclaim"),
    **dict.fromkeys(("deployment", "deployments", "deploy"), "Deployment"),
    **dict.fromkeys(("statefulset", "statefulsets", "sts"), "StatefulSet"),
    **dict.fromkeys(("replicaset", "replicasets", "rs"), "ReplicaSet"),
    **dict.fromkeys(("daemonset", "daemonsets", "ds"), "DaemonSet"),
    **dict.fromkeys(("job", "jobs"), "Job"),
    **dict.fromkeys(("jobset", "jobsets"), "JobSet"),
    **dict.fromkeys(("leaderworkerset", "leaderworkersets", "lws"), "LeaderWorkerSet"),
    **dict.fromkeys(("raycluster", "rayclusters"), "RayCluster"),
    **dict.fromkeys(("rayjob", "rayjobs"), "RayJob"),
    **dict.fromkeys(("pytorchjob", "pytorchjobs"), "PyTorchJob"),
    **dict.fromkeys(("trainjob", "trainjobs"), "TrainJob"),
}
# The kinds as users type them first (each also has the plural and kubectl's short names in KINDS).
KIND_NAMES = ("pod", "claim", "deployment", "statefulset", "replicaset", "daemonset", "job", "jobset",
              "leaderworkerset", "raycluster", "rayjob", "pytorchjob", "trainjob")
KIND_LIST = f"{', '.join(KIND_NAMES[:-1])} or {KIND_NAMES[-1]}"

NamespaceOption = Annotated[str | None, typer.Option("-n", "--namespace", help="Namespace (default: any).")]
MaxNodesOption = Annotated[
    int, typer.Option("--max-nodes", min=1, help="Node (and pod) names shown per group in the table.")
]


def _simulate(
    files: list[str] | None,
    policy: Policy,
    seed: int,
    version: str,
    gates: str,
    live: tuple[str | None, str | None] = (None, None),
    quiet: bool = False,
) -> tuple[Any, dict[str, Any], Any]:
    """The one run ``kubedra simulate`` makes of these inputs (its final state and allocator), the input
    pods as written (a live cluster's or a snapshot's carry the cluster's own status), and (scenario, options) to run
    it again changed (a gang's what would make it fit); ``live`` (kubeconfig, context) starts from a cluster; exits 2
    on bad input."""
    from kubedra.cli.simulate import load_scenario
    from kubedra.objects.model import Pod
    from kubedra.sim.simulate import Options, simulate

    loaded, scenario, features = load_scenario(files, seed, version, gates, *live)
    if loaded.warnings and not quiet:
        stderr_console().print(
            f"Note: {len(loaded.warnings)} conversion warning(s); kubedra simulate prints them", highlight=False,
            markup=False,
        )
    options = Options(policy=policy, seed=seed, features=features)
    result = simulate(scenario, options)
    observed = {
        f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}": pod
        for pod in loaded.of_kind(Pod)
        if pod.metadata.name
    }
    return result, observed, (scenario, replace(options, fragmentation_samples=0))


def _fail(message: str) -> None:
    stderr_console().print(f"error: {message}", highlight=False, markup=False)
    raise typer.Exit(EXIT_INVALID_INPUT)


def _not_found(kind: str, name: str, matches: list[str], ambiguous: bool) -> None:
    if ambiguous:
        _fail(f"{kind} name {name!r} is ambiguous: {', '.join(matches)}; use -n or ns/name")
    hint = f"; did you mean: {', '.join(matches)}?" if matches else ""
    _fail(f"{kind} {name!r} not found{hint}")


def _pod_with_cluster(result: Any, key: str, policy: Policy, observed: Any, again: Any) -> dict[str, Any]:
    """explain pod's answer, beside the cluster's own where the input pod carried it, with its gang and what
    preemption does for it."""
    from kubedra.scheduler.explain import explain_pod
    from kubedra.scheduler.explain_groups import gang_section, gang_summary, preemption_section
    from kubedra.scheduler.explain_results import compare_with_cluster

    state = result.state
    explanation = explain_pod(state, result.allocator, key, policy=policy.value)
    if observed is not None:
        explanation.cluster = compare_with_cluster(observed, explanation)
    record = state.pods[key]
    if record.group:
        members = [r for r in state.pods.values() if r.group == record.group]
        cycle = result.group_cycles.get(record.group)
        explanation.gang = gang_section(record.group, result.pod_groups.get(record.group), members, cycle)
        explanation.summary = gang_summary(explanation.summary, record, cycle)
    explanation.preemption = preemption_section(result.preemptions.get(key), record, record.pending_reason)
    return _with_what_would_fit(result, explanation.as_dict(), policy, again, {})


def _with_what_would_fit(
    result: Any, data: dict[str, Any], policy: Policy, again: Any, gangs: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """A pending pod's explanation plus ``whatWouldFit``: the proven changes that would let it fit (``sim.whatif``),
    cheapest first; for a gang's member, its group's (``sim.whatif_gangs``: the whole run again, once per group,
    remembered in ``gangs``)."""
    from kubedra.sim.whatif import Inputs, what_would_fit
    from kubedra.sim.whatif_gangs import gang_suggestions

    record = result.state.pods[data["pod"]]
    if record.phase != "Pending" or record.pod.spec.scheduling_gates:
        return data  # a gated pod's one change is its gates' removal, which the summary names
    if record.group:
        if record.group not in gangs:
            scenario, options = again
            gangs[record.group] = [s.as_dict() for s in gang_suggestions(scenario, options, record.group)]
        data["whatWouldFit"] = gangs[record.group]
        return data
    blocked = [n for g in data["groups"] if g["check"] == "devices" and g.get("heldBy") for n in g["nodes"]]
    inputs = Inputs(result.state, result.allocator.features, policy, blocked)
    data["whatWouldFit"] = [s.as_dict() for s in what_would_fit(inputs, data["pod"])]
    return data


def _workload_with_what_would_fit(result: Any, kind: str, key: str, policy: Policy, again: Any) -> dict[str, Any]:
    from kubedra.scheduler.explain_groups import gang_summary
    from kubedra.scheduler.explain_workload import explain_workload

    members = None
    if kind == "RayJob":  # no label on its pods names it: the run's own record of its cluster and submitter
        from kubedra.sim.rayjobs import rayjob_pods

        run = next(r for r in again[0].workloads.rayjobs if f"{r.namespace}/{r.name}" == key)
        members = rayjob_pods(result.state, run)
    data = explain_workload(result.state, result.allocator, kind, key, policy=policy.value,
                            members=members).as_dict()
    gangs: dict[str, list[dict[str, Any]]] = {}
    for group in data["groups"]:
        explanation = group["explanation"]
        record = result.state.pods[explanation["pod"]]
        if record.group:  # as explain pod says it: the count describes the pod alone, not its group
            explanation["summary"] = gang_summary(explanation["summary"], record, result.group_cycles.get(record.group))
        _with_what_would_fit(result, explanation, policy, again, gangs)
    return data


def _keys(kind: str, result: Any, again: Any) -> list[str]:
    """``ns/name`` of every object of ``kind`` the run knows."""
    from kubedra.scheduler.explain_workload import workload_keys

    if kind == "pod":
        return list(result.state.pods)
    if kind == "resourceclaim":
        return list(result.state.claims)
    if kind == "RayJob":
        return [f"{r.namespace}/{r.name}" for r in again[0].workloads.rayjobs]
    return workload_keys(result.state, kind)


def _explain(
    target: str,
    name: str | None,
    namespace: str | None,
    files: list[str] | None,
    policy: Policy,
    seed: int,
    version: str,
    gates: str,
    output: OutputFormat | None,
    max_nodes: int,
    quiet: bool = False,
    live: tuple[str | None, str | None] = (None, None),
) -> None:
    """Run the scenario once, find the object, explain it, print it; exits 0 (or 2 when it does not exist)."""
    from kubedra.scheduler.explain import explain_claim
    from kubedra.scheduler.lookup import lookup

    require_format(output or default_format(), (*TABLE_FORMATS, OutputFormat.json, OutputFormat.yaml), "explain")
    written, _, inline = target.partition("/")
    kind = KINDS.get(written.lower())
    if kind is None:
        _fail(f"unknown kind {written!r}: explain {KIND_LIST}")
    assert kind is not None
    if inline and name:
        _fail(f"give the name once: {target!r} or {written} {name!r}")
    wanted = inline or name
    if not wanted:
        _fail(f"which {kind.lower()}? e.g. kubedra explain {written} NAME")
    assert wanted is not None
    result, observed, again = _simulate(files, policy, seed, version, gates, live, quiet)
    state, allocator = result.state, result.allocator
    label = kind.lower()
    found = lookup(_keys(kind, result, again), wanted, namespace)
    if found.key is None:
        _not_found(label, wanted, found.matches, ambiguous=_ambiguous(found.matches, wanted))
    assert found.key is not None
    printer: Callable[[dict[str, Any], int], None]
    if kind == "pod":
        data = _pod_with_cluster(result, found.key, policy, observed.get(found.key), again)
        printer = print_pod
    elif kind == "resourceclaim":
        data, printer = explain_claim(state, allocator, found.key, policy=policy.value).as_dict(), print_claim
    else:
        data = _workload_with_what_would_fit(result, kind, found.key, policy, again)
        printer = print_workload
    fmt = output or default_format()
    if fmt in TABLE_FORMATS:
        printer(data, max_nodes)
    else:
        print_data(data, fmt)
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    @app.command("explain", help=HELP, no_args_is_help=True)
    def explain_command(
        target: Annotated[
            str,
            typer.Argument(
                metavar="KIND[/NAME]", help=f"{KIND_LIST}."
            ),
        ],
        name: Annotated[str | None, typer.Argument(metavar="NAME", help="Name, or namespace/name.")] = None,
        namespace: NamespaceOption = None,
        files: ScenarioFiles = None,
        policy: PolicyOption = Policy.KUBE_SCHEDULER,
        seed: SeedOption = 0,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
        max_nodes: MaxNodesOption = 5,
        quiet: QuietOption = False,
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
    ) -> None:
        _explain(
            target, name, namespace, files, policy, seed, kubernetes_version, feature_gates, output, max_nodes, quiet,
            (kubeconfig, context),
        )


def _ambiguous(matches: list[str], name: str) -> bool:
    bare = name.rsplit("/", 1)[-1]
    return len(matches) > 1 and all(m.split("/", 1)[1] == bare for m in matches)
