"""``kubedra convert``: any supported manifest (v1, betas, the seed's legacy dialect) → resource.k8s.io/v1."""

from __future__ import annotations

import enum
import sys
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import InputFiles, QuietOption
from kubedra.cli.output import EXIT_OK, fail_invalid, print_warnings


class ConvertFormat(enum.StrEnum):
    yaml = "yaml"
    json = "json"


HELP = command_help(
    "Print the objects of FILEs as resource.k8s.io/v1 (and core/v1) manifests.",
    "Reads multi-document YAML or JSON: resource.k8s.io v1, v1beta2, v1beta1 (and v1alpha3 DeviceTaintRule), "
    "core/v1 Node and Pod, List kinds, and the seed article's legacy dialect (ResourceClass, NvidiaGPUConfig, "
    "claims with resourceClassName, pods with source.resourceClaimName). Every conversion is explained by a warning "
    "on stderr (-q drops them): what was written, what it means in v1, what kubedra assumed. Documents of other "
    "kinds (Deployment, NodePool, PrometheusRule, ...) are passed through unchanged.",
    "Output: a YAML multi-document stream (-o yaml, the default) or one v1 List (-o json).",
    examples=[
        "kubedra convert -f src/kubedra/data/seed/01-resourceclass.yaml",
        "kubedra convert -f src/kubedra/data/seed -q -o json > v1.json",
        "cat src/kubedra/data/seed/02-claim-and-pod.yaml | kubedra convert -f -",
    ],
    exit_status="0 converted, 2 invalid input (every problem on stderr).",
)


def _clean(document: dict[str, Any]) -> dict[str, Any]:
    """Drop an empty ``status`` (the model keeps one for every claim and pod)."""
    if document.get("status") in ({}, None):
        return {k: v for k, v in document.items() if k != "status"}
    return document


def _documents(paths: list[str], quiet: bool) -> list[dict[str, Any]]:
    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_paths
    from kubedra.objects.model import to_dict

    try:
        loaded = load_paths(paths)
    except InvalidInputError as error:
        fail_invalid(error)
    print_warnings(loaded.warnings, quiet=quiet)
    entries: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
    files: dict[str, int] = {}
    for seq, obj in enumerate(loaded.objects):
        where = loaded.location_of(obj)
        key = (files.setdefault(where.file, len(files)), where.document or 0, seq)
        entries.append((key, _clean(to_dict(obj))))
    for seq, raw in enumerate(loaded.raw, start=len(loaded.objects)):
        if "kind" not in raw.data:  # a fragment (e.g. a container's resources), not an object
            continue
        where = raw.location
        entries.append(((files.setdefault(where.file, len(files)), where.document or 0, seq), raw.data))
    return [document for _, document in sorted(entries, key=lambda e: e[0])]


def register(app: typer.Typer) -> None:
    @app.command("convert", help=HELP, no_args_is_help=True)
    def convert(
        files: InputFiles,
        output: Annotated[
            ConvertFormat,
            typer.Option("-o", "--output", help="yaml: a multi-document stream; json: one v1 List."),
        ] = ConvertFormat.yaml,
        quiet: QuietOption = False,
    ) -> None:
        import json

        import yaml

        documents = _documents(files, quiet)
        if output is ConvertFormat.json:
            body = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": documents}
            sys.stdout.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(
                yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True, default_flow_style=False)
            )
        raise typer.Exit(EXIT_OK)
