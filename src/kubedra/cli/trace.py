"""``kubedra trace``: a real cluster trace written as kubedra inputs (NodePools, claim templates, pods)."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.output import EXIT_OK, fail, fail_invalid
from kubedra.traces import openb


class TraceFormat(enum.StrEnum):
    openb = "openb"


class Replay(enum.StrEnum):
    artifact = "artifact"
    trace = "trace"


class TraceOutput(enum.StrEnum):
    yaml = "yaml"
    json = "json"


HELP = command_help(
    "Write a real GPU cluster trace as manifests kubedra simulate reads: NodePools, ResourceClaimTemplates, Pods.",
    "openb: the Alibaba GPU cluster trace cluster-trace-gpu-v2023 (DIR holds openb_node_list_gpu_node.csv and "
    "openb_pod_list_<workload>.csv). Nodes of one shape become one NodePool whose GPUs are shared with 1000 "
    "consumable shares each (one share = the trace's milli-GPU); models the catalogue lacks (G1-G3, P100) are "
    "declared in the pool. Whole GPUs are 'exactly' requests of count num_gpu and 1000 shares each, gpu_milli below "
    "1000 a request of that many shares on one GPU, gpu_spec a CEL selector on productName, cpu and memory the "
    "pod's requests.",
    "--replay artifact (the default) is the FGD artifact's experiment: tasks shuffled with --seed, topped up with "
    "random draws until the GPU requests would pass --tune x the cluster's GPU capacity, arriving one second apart "
    "and never leaving. --replay trace keeps the trace's times: arrival at creation_time, running until "
    "deletion_time.",
    examples=[
        "kubedra trace openb examples/traces/openb > openb.yaml   # then: kubedra simulate -f openb.yaml",
        "kubedra trace openb examples/traces/openb --seed 43 --arrived 1.0",
        "kubedra trace openb examples/traces/openb --replay trace -o json",
        "kubedra trace openb examples/traces/openb --mig A100-40GB   # shares as MIG profiles",
    ],
    exit_status="0 written, 2 a missing file or a bad cell (file, row and column named; nothing written).",
)


def register(app: typer.Typer) -> None:
    @app.command("trace", help=HELP, no_args_is_help=True)
    def trace_command(
        kind: Annotated[TraceFormat, typer.Argument(help="The trace's format.")],
        directory: Annotated[Path, typer.Argument(metavar="DIR", help="Where the trace's CSV files are.")],
        workload: Annotated[
            str, typer.Option("--workload", help=f"Which pod list: {', '.join(openb.WORKLOADS)} (or another "
                              "openb_pod_list_<name>.csv in DIR).")
        ] = "default",
        replay: Annotated[Replay, typer.Option("--replay", help="artifact: the FGD artifact's replay; trace: the "
                                               "trace's own times.")] = Replay.artifact,
        seed: Annotated[int, typer.Option("--seed", help="The artifact's shuffle seed (it runs 42-51).")] = (
            openb.ARTIFACT_SEED),
        tune: Annotated[float, typer.Option("--tune", min=0.0, help="Arrived GPU requests as a multiple of the "
                                            "cluster's GPU capacity (artifact replay).")] = openb.ARTIFACT_TUNE,
        arrived: Annotated[float | None, typer.Option("--arrived", min=0.0, help="Artifact replay: stop once the "
                                                      "arrived GPU requests reach this multiple of the cluster's GPU "
                                                      "capacity (1.0: where the paper reads its table).")] = None,
        mig: Annotated[str | None, typer.Option("--mig", metavar="MODEL", help="Map GPU requests to MIG profiles "
                                                "of this MIG-capable model (e.g. A100-40GB) instead of shares: "
                                                "every GPU becomes one with MIG enabled, a share the smallest "
                                                "profile with at least that share of the compute slices, whole "
                                                "GPUs the full-GPU profile, gpu_spec a node affinity on "
                                                "kubedra.io/trace-model.")] = None,
        pool_per_node: Annotated[bool, typer.Option("--pool-per-node", help="One NodePool per trace node, named "
                                                    "after its sn, so nodes sort by name as the trace's do (the "
                                                    "order the FGD artifact's scheduler breaks ties in).")] = False,
        output: Annotated[TraceOutput, typer.Option("-o", "--output", help="yaml: a multi-document stream; json: "
                                                    "one v1 List.")] = TraceOutput.yaml,
    ) -> None:
        import json

        import yaml

        from kubedra.objects.errors import InvalidInputError

        assert kind is TraceFormat.openb  # the one format so far; the argument keeps room for others
        texts: list[str] = []
        for name in (openb.NODE_FILE, openb.pod_file(workload)):
            path = directory / name
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                fail(f"{path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}")
        try:
            nodes = openb.read_nodes(texts[0], str(directory / openb.NODE_FILE))
            tasks = openb.read_tasks(texts[1], str(directory / openb.pod_file(workload)))
        except InvalidInputError as exc:
            fail_invalid(exc)
        if mig is not None:
            try:
                openb.mig_model(mig)
            except ValueError as exc:
                fail(f"--mig: {exc}")
        documents = openb.documents(nodes, tasks, replay=replay.value, seed=seed, tune=tune, arrived=arrived,
                                    mig=mig, pool_per_node=pool_per_node)
        if output is TraceOutput.json:
            body = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": documents}
            sys.stdout.write(json.dumps(body, indent=2) + "\n")
        else:
            sys.stdout.write(yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False))
        raise typer.Exit(EXIT_OK)
