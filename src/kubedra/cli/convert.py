"""``kubedra convert``: any supported manifest (v1, betas, the seed's legacy dialect) → resource.k8s.io/v1."""

from __future__ import annotations

import enum
import sys
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import InputFiles, QuietOption, RecursiveOption
from kubedra.cli.output import EXIT_OK, fail, fail_invalid, print_warnings


class TargetVersion(enum.StrEnum):
    v1 = "v1"
    v1beta2 = "v1beta2"
    v1beta1 = "v1beta1"


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
    "--to v1beta2 (Kubernetes 1.33) or --to v1beta1 (1.32) writes the DRA objects in that version instead: v1beta2 "
    "has v1's shape; v1beta1 wraps a device's fields in basic and puts a request's exactly fields on the request; "
    "DeviceTaintRule has no v1beta1 (an error, exit 2).",
    "Output: a YAML multi-document stream (-o yaml, the default) or one v1 List (-o json).",
    examples=[
        "kubedra convert -f src/kubedra/data/seed/01-resourceclass.yaml",
        "kubedra convert -f src/kubedra/data/seed -q -o json > v1.json",
        "cat src/kubedra/data/seed/02-claim-and-pod.yaml | kubedra convert -f -",
        "kubedra convert -f examples/allocate/h100-mig.yaml --to v1beta1 -q",
    ],
    exit_status="0 converted, 2 invalid input (every problem on stderr).",
)


def _clean(document: dict[str, Any]) -> dict[str, Any]:
    """Drop an empty ``status`` (the model keeps one for every claim and pod)."""
    if document.get("status") in ({}, None):
        return {k: v for k, v in document.items() if k != "status"}
    return document


def _documents(paths: list[str], quiet: bool, recursive: bool = False) -> list[tuple[Any, dict[str, Any]]]:
    """(location, document) pairs in input order."""
    from kubedra.allocator import Features
    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_paths
    from kubedra.objects.model import to_dict
    from kubedra.sim.validation import NO_OBJECTS, validate_inputs

    try:
        loaded = load_paths(paths, recursive=recursive)
        # The front door the other commands share: what validate finds, convert refuses (exit 2, nothing written).
        found = [p for p in validate_inputs(loaded, Features.for_release(), paths).findings if p.message != NO_OBJECTS]
        if found:
            raise InvalidInputError(found)
    except InvalidInputError as error:
        fail_invalid(error)
    print_warnings(loaded.warnings, quiet=quiet)
    print_warnings(loaded.notes, quiet=quiet, label="Note")
    entries: list[tuple[tuple[int, int, int], Any, dict[str, Any]]] = []
    files: dict[str, int] = {}
    for seq, obj in enumerate(loaded.objects):
        where = loaded.location_of(obj)
        key = (files.setdefault(where.file, len(files)), where.document or 0, seq)
        entries.append((key, where, _clean(to_dict(obj))))
    for seq, raw in enumerate(loaded.raw, start=len(loaded.objects)):
        if "kind" not in raw.data:  # a fragment (e.g. a container's resources), not an object
            continue
        where = raw.location
        entries.append(((files.setdefault(where.file, len(files)), where.document or 0, seq), where, raw.data))
    return [(where, document) for _, where, document in sorted(entries, key=lambda e: e[0])]


def _to_version(entries: list[tuple[Any, dict[str, Any]]], target: str, quiet: bool) -> list[dict[str, Any]]:
    """The v1 DRA documents as ``resource.k8s.io/<target>``; exit 2 (nothing printed) where a shape has none."""
    from kubedra.migrate.versions import DRA_KINDS, from_v1
    from kubedra.objects.errors import Location

    out: list[dict[str, Any]] = []
    problems: list[str] = []
    notes: list[str] = []
    for where, document in entries:
        kind = document.get("kind")
        if target == "v1" or document.get("apiVersion") != "resource.k8s.io/v1" or kind not in DRA_KINDS:
            out.append(document)
            continue
        result = from_v1(str(kind), document, target)
        for path, message in result.problems:
            problems.append(f"{Location(where.file, where.document, where.object, path)}: {message}")
        notes.extend(f"{where}: resource.k8s.io/v1 {kind} -> resource.k8s.io/{target}: {c}" for c in result.changes)
        out.append(result.document)
    if problems:
        fail("\nerror: ".join(problems))
    print_warnings(notes, quiet=quiet)
    return out


def register(app: typer.Typer) -> None:
    @app.command("convert", help=HELP, no_args_is_help=True)
    def convert(
        files: InputFiles,
        recursive: RecursiveOption = False,
        output: Annotated[
            ConvertFormat,
            typer.Option("-o", "--output", help="yaml: a multi-document stream; json: one v1 List."),
        ] = ConvertFormat.yaml,
        to: Annotated[
            TargetVersion,
            typer.Option("--to", help="resource.k8s.io version to write: v1, or v1beta2/v1beta1 for older clusters."),
        ] = TargetVersion.v1,
        quiet: QuietOption = False,
    ) -> None:
        import json

        import yaml

        documents = _to_version(_documents(files, quiet, recursive), to.value, quiet)
        if output is ConvertFormat.json:
            body = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": documents}
            sys.stdout.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(
                yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True, default_flow_style=False)
            )
        raise typer.Exit(EXIT_OK)
