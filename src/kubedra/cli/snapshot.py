"""``kubedra snapshot``: a live cluster's DRA-relevant state as plain manifests that ``kubedra simulate -f`` reads."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.live import read_live
from kubedra.cli.options import ContextOption, KubeconfigOption
from kubedra.cli.output import EXIT_INVALID_INPUT, EXIT_OK, stderr_console

HELP = command_help(
    "Write a live cluster's DRA-relevant state as plain manifests that kubedra simulate -f reads.",
    "Nodes, DeviceClasses, ResourceSlices, DeviceTaintRules, ResourceClaimTemplates, ResourceClaims (with their "
    "allocations and reservedFor), Pods (with their nodes and phases) and Services (their selectors: the "
    "spreading of Deployments' pods reads them). Nothing is written to the cluster, and Secrets are never read.",
    "Server bookkeeping (managedFields, resourceVersion, node images) is left out; status is kept, and "
    "resource.k8s.io betas of older clusters are written as v1. [bold]kubedra simulate -f DIR[/bold] starts from "
    "exactly this state: bound pods stay on their nodes and allocated claims stay allocated.",
    "Without --output-dir: one multi-document YAML stream on stdout. With it: one file per kind (10-nodes.yaml ... "
    "80-services.yaml), all written, each whole, or none.",
    "Without --kubeconfig, as kubectl: every file of $KUBECONFIG merged, else ~/.kube/config, else the in-cluster "
    "service account.",
    examples=[
        "kubedra snapshot > cluster.yaml",
        "kubedra snapshot --kubeconfig ~/.kube/config --output-dir snapshot/",
    ],
    exit_status="0 written, 2 when the cluster cannot be read or the directory cannot be written.",
)


def _yaml(documents: list[dict[str, Any]]) -> str:
    import yaml

    text: str = yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return text


def register(app: typer.Typer) -> None:
    @app.command("snapshot", help=HELP)
    def snapshot_command(
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
        output_dir: Annotated[
            Path | None, typer.Option("--output-dir", help="Write one YAML file per kind here instead of stdout.")
        ] = None,
    ) -> None:
        from kubedra.kube.kinds import DOCUMENT_KINDS
        from kubedra.kube.read import manifest

        documents = read_live(kubeconfig, context)
        if output_dir is None:
            sys.stdout.write(_yaml([manifest(d) for d in documents.documents()]))
            raise typer.Exit(EXIT_OK)
        files = [
            (f"{10 * (i + 1)}-{kind.plural}.yaml", [manifest(d) for d in documents.by_kind.get(kind.kind, [])])
            for i, kind in enumerate(DOCUMENT_KINDS)
        ]
        from kubedra.cli.files import write_all

        try:
            write_all(output_dir, [(name, _yaml(docs)) for name, docs in files])
        except OSError as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT) from exc
        count = sum(len(d) for _, d in files)
        stderr_console().print(f"{count} objects written to {output_dir}", highlight=False, markup=False)
        raise typer.Exit(EXIT_OK)
