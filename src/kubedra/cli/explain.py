"""``kubedra explain pod|claim NAME``: run the scenario as ``kubedra simulate`` does, then say why, node by node."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kubedra.cli.options import (
    GatesOption,
    OutputOption,
    PolicyOption,
    ScenarioFiles,
    SeedOption,
    VersionOption,
)
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    EXIT_OK,
    OutputFormat,
    default_format,
    print_data,
    stderr_console,
    stdout_console,
)
from kubedra.scheduler.scoring import Policy

HELP = " ".join(
    [
        "Explain why a pod is pending — or where it runs, on which devices, and which other nodes could run it —",
        "after simulating the scenario exactly as [bold]kubedra simulate[/bold] does (same inputs; with no -f the",
        "seed scenario on the demo cluster).\n\n",
        "Every node is checked in kube-scheduler's order: the pod's claims, node rules (node name, selector and",
        "affinity, taints, cpu/memory/pods, device-plugin resources), claims already allocated elsewhere, then the",
        "allocator, whose diagnosis names the claim and request that failed and why (the selector and the values it",
        "reads, the claims holding the devices, matchAttribute, counter sets, taints, consumable capacity).",
        "Nodes with the same explanation are grouped.\n\n",
        "-o json prints {pod, phase, node, message, summary, claims, groups: [{check, reason, reasons, count,",
        "nodes}]}; for a claim {claim, state, devices, allocatedOn, reservedFor, message, pods, groups}.\n\n",
        "Exit status: 0 when explained, 2 when the pod or claim does not exist (close names are suggested) or the",
        "input is bad.",
    ]
)

NamespaceOption = Annotated[str | None, typer.Option("-n", "--namespace", help="Namespace (default: any).")]
MaxNodesOption = Annotated[int, typer.Option("--max-nodes", help="Node names shown per group in the table.")]


def _simulate(files: list[str] | None, policy: Policy, seed: int, version: str, gates: str) -> tuple[Any, Any]:
    """The final state and the allocator over it; exits 2 on bad input."""
    from kubedra.cli.simulate import load_scenario
    from kubedra.scheduler.dra import AllocatorBackend
    from kubedra.sim.simulate import Options, prepare

    loaded, scenario, features = load_scenario(files, seed, version, gates)
    if loaded.warnings:
        stderr_console().print(
            f"Note: {len(loaded.warnings)} conversion warning(s); kubedra simulate prints them", highlight=False,
            markup=False,
        )
    simulation = prepare(scenario, Options(policy=policy, seed=seed, features=features))
    result = simulation.run()
    backend = simulation.scheduler.backend
    assert isinstance(backend, AllocatorBackend)
    return result.state, backend.allocator


def _not_found(kind: str, name: str, matches: list[str], ambiguous: bool) -> None:
    console = stderr_console()
    if ambiguous:
        console.print(f"error: {kind} name {name!r} is ambiguous: {', '.join(matches)}; use -n or ns/name",
                      highlight=False, markup=False)
    else:
        hint = f"; did you mean: {', '.join(matches)}?" if matches else ""
        console.print(f"error: {kind} {name!r} not found{hint}", highlight=False, markup=False)
    raise typer.Exit(EXIT_INVALID_INPUT)


def _nodes_text(nodes: list[str], limit: int) -> str:
    shown = ", ".join(nodes[:limit])
    more = len(nodes) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _print_groups(groups: list[dict[str, Any]], limit: int, fits_text: str) -> None:
    console = stdout_console()
    for group in groups:
        count = group["count"]
        head = f"  {count} node{'s' if count != 1 else ''} ({_nodes_text(group['nodes'], limit)}): "
        reason = fits_text if group["check"] == "fits" else group["reason"]
        console.print(head + reason, highlight=False, markup=False)


def _print_pod(data: dict[str, Any], limit: int) -> None:
    console = stdout_console()

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False)

    where = f" on {data['node']}" if data["node"] else ""
    say(f"Pod {data['pod']}: {data['phase']}{where}")
    if data["message"]:
        say(f"  {data['message']}")
    for claim in data["claims"]:
        devices = f": {', '.join(claim['devices'])}" if claim["devices"] else ""
        say(f"  claim {claim['claim']} ({claim['state']}){devices}")
    if data["groups"]:
        say(f"Nodes: {data['summary']}")
        fits = "could run it now" if data["phase"] == "Running" else "fits now"
        _print_groups(data["groups"], limit, fits)


def _explain(
    kind: str,
    name: str,
    namespace: str | None,
    files: list[str] | None,
    policy: Policy,
    seed: int,
    version: str,
    gates: str,
    output: OutputFormat | None,
    max_nodes: int,
) -> None:
    """Run the scenario, find the pod or claim, explain it, print it; exits 0 (or 2 when it does not exist)."""
    from kubedra.scheduler.explain import explain_claim, explain_pod, lookup

    state, allocator = _simulate(files, policy, seed, version, gates)
    objects = state.pods if kind == "pod" else state.claims
    found = lookup(objects, name, namespace)
    if found.key is None:
        _not_found(kind, name, found.matches, ambiguous=_ambiguous(found.matches, name))
    assert found.key is not None
    explain = explain_pod if kind == "pod" else explain_claim
    data = explain(state, allocator, found.key, policy=policy.value).as_dict()
    fmt = output or default_format()
    if fmt is OutputFormat.table:
        (_print_pod if kind == "pod" else _print_claim)(data, max_nodes)
    else:
        print_data(data, fmt)
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    explain_app = typer.Typer(help=HELP, no_args_is_help=True, rich_markup_mode="rich")

    @explain_app.command("pod", help="Why a pod is pending, or where it runs. " + HELP)
    def explain_pod_command(
        name: Annotated[str, typer.Argument(help="Pod name, or namespace/name.")],
        namespace: NamespaceOption = None,
        files: ScenarioFiles = None,
        policy: PolicyOption = Policy.KUBE_SCHEDULER,
        seed: SeedOption = 0,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
        max_nodes: MaxNodesOption = 5,
    ) -> None:
        _explain("pod", name, namespace, files, policy, seed, kubernetes_version, feature_gates, output, max_nodes)

    @explain_app.command("claim", help="Where a claim is allocated, or why not. " + HELP)
    def explain_claim_command(
        name: Annotated[str, typer.Argument(help="ResourceClaim name, or namespace/name.")],
        namespace: NamespaceOption = None,
        files: ScenarioFiles = None,
        policy: PolicyOption = Policy.KUBE_SCHEDULER,
        seed: SeedOption = 0,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
        max_nodes: MaxNodesOption = 5,
    ) -> None:
        _explain("resourceclaim", name, namespace, files, policy, seed, kubernetes_version, feature_gates, output,
                 max_nodes)

    app.add_typer(explain_app, name="explain", help="Why a pod is pending or where it runs; why a claim is not "
                  "allocated. Node by node, grouped.")


def _ambiguous(matches: list[str], name: str) -> bool:
    bare = name.rsplit("/", 1)[-1]
    return len(matches) > 1 and all(m.split("/", 1)[1] == bare for m in matches)


def _print_claim(data: dict[str, Any], limit: int) -> None:
    console = stdout_console()

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False)

    where = f" on {data['allocatedOn']}" if data["allocatedOn"] else ""
    say(f"ResourceClaim {data['claim']}: {data['state']}{where}")
    if data["devices"]:
        say(f"  devices: {', '.join(data['devices'])}")
    if data["reservedFor"]:
        say(f"  reserved for: {', '.join(data['reservedFor'])}")
    say(f"  {data['message']}")
    if data["groups"]:
        say("Nodes:")
        _print_groups(data["groups"], limit, "the claim fits now")
    for pod in data["pods"]:
        say("")
        _print_pod(pod, limit)
