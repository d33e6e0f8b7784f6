"""``kubedra validate``: everything in the inputs the API server would reject, or ``kubedra simulate`` could not use."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import (
    ContextOption,
    GatesOption,
    InputFiles,
    MaxFileSizeOption,
    OutputOption,
    QuietOption,
    RecursiveOption,
    VersionOption,
    parse_limits,
)
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    EXIT_OK,
    EXIT_UNSCHEDULABLE,
    OutputFormat,
    default_format,
    fail_invalid,
    print_data,
    print_warnings,
    stderr_console,
    stdout_console,
)

EXIT_FINDINGS = EXIT_UNSCHEDULABLE

HELP = command_help(
    "Check FILEs as the API server would before accepting them, and as kubedra simulate would before running them.",
    "Every finding is reported, one per line, naming the file, the document index, Kind/name, the field path and its "
    "line, in "
    "the API server's wording (e.g. \"spec.devices: Too many: 129: must have at most 128 items\"): resource.k8s.io/v1 "
    "and core/v1 validation rules and limits; every CEL selector (DeviceClasses, claims, claim templates, "
    "DeviceTaintRules) compiled as the API server compiles it - it must return bool and stay within the cost limit; "
    "NodePools (counts, known GPU models, MIG, sharing) and node names; workloads (replicas, counts, selectors, "
    "restart policies, kubedra.io/ timing annotations) and their pod templates (a container's resources.claims[].name "
    "must name an entry of spec.resourceClaims). Every document is also checked as written against the chosen "
    "release's OpenAPI schemas, strictly: an unknown kind or field is a finding, with its line (kubedra's NodePool is "
    "known; the seed's legacy dialect is checked as converted); a v1 List (kubectl get -o yaml) item by item; a "
    "custom resource against its CustomResourceDefinition when that is among the inputs, else passed through with a "
    "note. References across the inputs (a request's device class, in the inputs or installed by NVIDIA's chart or "
    "kubedra's; a pod's claim or claim template, in the pod's namespace) that do not resolve are warnings: the API "
    "server accepts them and they may exist in the cluster (--strict-references makes them findings; --kubeconfig or "
    "--context resolves them against that live cluster, read only). Fields whose "
    "feature gate is off in the release are findings (the API server drops them). Opaque parameters for NVIDIA's "
    "drivers (gpu.nvidia.com, compute-domain.nvidia.com) are decoded strictly and checked as NVIDIA's driver checks "
    "them at NodePrepareResources; what only its deployment decides (its TimeSlicingSettings and MPSSupport feature "
    "gates) is a note (-q drops these notes). An input with no objects is a finding too.",
    "Beta and legacy documents are converted first; their conversion warnings go to stderr (-q drops them). "
    "-o json prints {findings: [{file, document, object, field, line, message}], warnings: [...], notes, checked, "
    "unchecked}.",
    examples=[
        "kubedra validate -f examples/allocate/h100-mig.yaml",
        "kubedra validate -f src/kubedra/data/seed -f src/kubedra/data/demo -q",
        "cat examples/allocate/l4-shares.yaml | kubedra validate -f - -o json",
        "kubedra validate -f examples/allocate/h100-mig.yaml --kubeconfig ~/.kube/config --strict-references",
    ],
    exit_status="0 valid, 1 findings, 2 unreadable input (a file that cannot be read, YAML or JSON that does not "
    "parse).",
)


def _finding(problem: Any, line: int | None) -> dict[str, Any]:
    where = problem.location
    return {"file": where.file, "document": where.document, "object": where.object, "field": where.field,
            "line": line, "message": problem.message}


def finding_lines(problems: list[Any], sources: list[Any]) -> list[int | None]:
    """The 1-based line of each finding's field (or of its nearest parent present in the file), None when the file
    or document is not one of ``sources``; only files with findings are parsed again."""
    from kubedra.migrate.documents import field_parts, line_of, parse

    by_name: dict[str, Any] = {}
    for s in sources:
        by_name.setdefault(s.name, s)  # stdin given twice is read once: the second - reads nothing
    positions: dict[str, dict[int, Any]] = {}
    lines: list[int | None] = []
    for problem in problems:
        where = problem.location
        source = by_name.get(where.file)
        if source is None or where.document is None:
            lines.append(None)
            continue
        if where.file not in positions:
            positions[where.file] = {d.index: d.positions for d in parse(source)[0]}
        document = positions[where.file].get(where.document)
        path = f"{where.within}.{where.field}" if where.within and where.field else where.within or where.field
        lines.append(line_of(document, field_parts(path)) if document is not None else None)
    return lines


def _report(
    problems: list[Any], checked: int | None, unchecked: list[str], fmt: OutputFormat,
    sources: list[Any] | None = None, warnings: list[Any] | None = None, notes: list[str] | None = None,
) -> None:
    """The findings, the warnings (references the inputs do not resolve), notes and a summary; ``checked`` None:
    documents did not decode, so the rest was not checked."""
    warned = warnings or []
    lines = finding_lines([*problems, *warned], sources or [])
    if fmt is not OutputFormat.table:
        data = [_finding(p, line) for p, line in zip(problems, lines, strict=False)]
        warning_data = [_finding(p, line) for p, line in zip(warned, lines[len(problems):], strict=True)]
        print_data({"findings": data, "warnings": warning_data, "notes": notes or [], "checked": checked,
                    "unchecked": unchecked}, fmt)
        return
    console = stdout_console()
    for index, problem in enumerate([*problems, *warned]):
        line = lines[index]
        at = f" (line {line})" if line is not None and "(line " not in problem.message else ""
        prefix = "warning: " if index >= len(problems) else ""
        console.print(f"{prefix}{problem}{at}", highlight=False, markup=False)
    for note in notes or []:
        console.print(f"note: {note}", highlight=False, markup=False)
    count = len(problems)
    findings = f"{count} finding{'s' if count != 1 else ''}"
    if checked is None:
        console.print(f"{findings}: these documents do not decode, so nothing else was checked yet",
                      highlight=False, markup=False)
        return
    text = f"{checked} object{'s' if checked != 1 else ''} checked: " + (findings if count else "valid")
    if warned:
        text += (f", {len(warned)} warning{'s' if len(warned) != 1 else ''} (what the API server accepts but the "
                 "scheduler cannot use as given: references not among the inputs, resources no node publishes, fields "
                 "kubedra does not model yet; "
                 "--strict-references makes them findings)")
    if unchecked:
        text += f" ({len(unchecked)} other document{'s' if len(unchecked) != 1 else ''} passed through unchecked)"
    console.print(text, highlight=False, markup=False)


def schema_findings(sources: list[Any], release: str, notes: list[tuple[Any, str]] | None = None) -> list[Any]:
    """Every document as written (its own apiVersion) against ``release``'s OpenAPI schemas, strictly, with the line
    of each field; a ``v1 List``'s items one by one. The seed's legacy dialect is skipped (it has no schema; its v1
    conversion is checked instead). A custom resource is checked against its CRD when the CRD is among the inputs,
    else against the published CRD kubedra vendors for a kind it reads (with a line in ``notes`` saying which), else
    passed through with a line in ``notes``. Documents are read with the loader's fast parser; only a file with
    findings is parsed again for the lines."""
    import yaml

    from kubedra.migrate.documents import field_parts, line_of, parse
    from kubedra.objects import legacy
    from kubedra.objects.errors import Location, Problem
    from kubedra.schema import SchemaChecker

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    checker = SchemaChecker(release)
    parsed: list[tuple[Any, list[Any]]] = []
    for source in sources:
        try:
            bodies = list(yaml.load_all(source.text, Loader=loader))
        except yaml.YAMLError:
            continue  # what does not parse is the loader's finding (it names the line); nothing for the schemas
        parsed.append((source, bodies))
        for body in bodies:
            for _, item in _items(body):
                if isinstance(item, dict) and item.get("kind") == "CustomResourceDefinition" and str(
                        item.get("apiVersion", "")).startswith("apiextensions.k8s.io/"):
                    checker.add_crd(item)
    findings: list[Problem] = []
    for source, bodies in parsed:
        found: list[tuple[int, str, str, Any]] = []
        for index, body in enumerate(bodies):
            for within, item in _items(body):
                if not isinstance(item, dict) or "kind" not in item or legacy.classify(item) is not None:
                    continue
                metadata = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
                obj = f"{item.get('kind')}/{metadata.get('name') or metadata.get('generateName') or ''}"
                unchecked = len(checker.custom_unchecked)
                found.extend((index, obj, within, problem) for problem in checker.check(item))
                published = checker.published(item)
                if notes is not None and (published is not None or len(checker.custom_unchecked) > unchecked):
                    notes.append((Location(source.name, index, obj, within=within), _custom_note(item, published)))
        if not found:
            continue
        positions = {d.index: d.positions for d in parse(source)[0]}
        for index, obj, within, problem in found:
            line = line_of(positions.get(index), [*(field_parts(within) if within else []), *problem.parts])
            message = f"{problem.message} (line {line})" if line is not None else problem.message
            findings.append(Problem(Location(source.name, index, obj, problem.path, within=within), message))
    return findings


def _custom_note(item: dict[str, Any], published: Any = None) -> str:
    """What validate did with a custom resource without its CustomResourceDefinition among the inputs: a kind kubedra
    reads is checked against the published CRD kubedra vendors (``published``), the workload kinds kubedra simulates
    also as their webhooks check them; any other passes through unchecked."""
    from kubedra.sim.jobsets import API_VERSION as JOBSET
    from kubedra.sim.leaderworkersets import API_VERSION as LWS
    from kubedra.sim.trainjobs import API_VERSION as TRAINER

    known = {(JOBSET, "JobSet"): "a JobSet", (LWS, "LeaderWorkerSet"): "a LeaderWorkerSet",
             (TRAINER, "TrainJob"): "a TrainJob"}
    kind = known.get((str(item.get("apiVersion")), str(item.get("kind"))))
    if published is not None:
        also = " and field by field as kubedra reads it and as its webhook validates it" if kind else ""
        cel = ", its CEL rules (x-kubernetes-validations) evaluated as on create" if published.celRules else ""
        return (f"{kind or 'a ' + str(item.get('kind'))}: checked against its published CustomResourceDefinition "
                f"({published}){also}{cel}")
    if kind is not None:
        return (f"{kind}: checked field by field as kubedra reads it and as its webhook validates it; its "
                "CustomResourceDefinition's schema is not among the inputs")
    return (f"a custom resource ({item.get('apiVersion')}): passed through unchecked, its CustomResourceDefinition "
            "is not among the inputs")


def _items(body: Any, within: str = "") -> list[tuple[str, Any]]:
    """A document, or each item of a ``v1 List`` (``kubectl get -o yaml``), nested Lists too, with its path."""
    if isinstance(body, dict) and str(body.get("kind", "")).endswith("List") and isinstance(body.get("items"), list):
        found: list[tuple[str, Any]] = []
        for i, item in enumerate(body["items"]):
            found.extend(_items(item, f"{within}items[{i}]."))
        return found
    return [(within.rstrip("."), body)]


def _merge(schema: list[Any], others: list[Any]) -> list[Any]:
    """Both lists in input order (file, document); a schema finding on a field kubedra's own checks also name is
    dropped (theirs use the API server's wording)."""
    named = {(p.location.file, p.location.document, p.location.within, p.location.field) for p in others}
    kept = [p for p in schema
            if (p.location.file, p.location.document, p.location.within, p.location.field) not in named]
    files: dict[str, int] = {}
    for p in [*others, *kept]:
        files.setdefault(p.location.file, len(files))
    return sorted([*others, *kept], key=lambda p: (files[p.location.file], p.location.document or 0))


def _server_findings(sources: list[Any], kubeconfig: str | None, context: str | None,
                     notes: list[tuple[Any, str]]) -> list[Any]:
    """What the live API server refuses of each document, sent as written with dryRun=All; documents it cannot be
    sent go to ``notes``."""
    from kubedra.cli.live import request_timeout
    from kubedra.kube.api import KubeError, connect
    from kubedra.kube.dryrun import dry_run
    from kubedra.migrate.documents import parse
    from kubedra.objects.errors import Location, Problem

    documents: list[tuple[Location, dict[str, Any]]] = []
    for source in sources:
        for document in parse(source)[0]:
            data = document.data
            if not isinstance(data, dict):
                continue
            plain: dict[str, Any] = json.loads(json.dumps(data, default=str))  # ruamel's maps as plain JSON
            metadata = plain.get("metadata") if isinstance(plain.get("metadata"), dict) else {}
            name = metadata.get("name") if isinstance(metadata, dict) else None
            documents.append((Location(source.name, document.index, f"{plain.get('kind')}/{name}"), plain))
    try:
        with connect(kubeconfig, context, timeout=request_timeout(os.environ)) as client:
            verdicts = dry_run(client, [d for _, d in documents])
    except KubeError as exc:
        stderr_console().print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT) from exc
    found = []
    for (where, _), verdict in zip(documents, verdicts, strict=True):
        if verdict.skipped:
            notes.append((where, f"not sent to the server: {verdict.skipped}"))
        found += [Problem(replace(where, field=r.field), f"the API server refuses it (dry run): {r.message}")
                  for r in verdict.refusals]
    return found


def register(app: typer.Typer) -> None:
    @app.command("validate", help=HELP, no_args_is_help=True)
    def validate(
        files: InputFiles,
        recursive: RecursiveOption = False,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
        quiet: QuietOption = False,
        strict_references: Annotated[bool, typer.Option(
            "--strict-references",
            help="A DeviceClass, claim or claim template that is not among the inputs (nor installed by NVIDIA's "
                 "chart or kubedra's) is a finding (exit 1), not a warning.",
        )] = False,
        max_file_size: MaxFileSizeOption = "8Mi",
        kubeconfig: Annotated[str | None, typer.Option(
            "--kubeconfig", help="Also resolve references against this live cluster (read only): its DeviceClasses, "
                                 "claims and claim templates, and its nodes for what pods can use.")] = None,
        context: ContextOption = None,
        dry_run: Annotated[str, typer.Option(
            "--dry-run", metavar="none|client|server",
            help="server: also send each document to the live cluster with dryRun=All (as kubectl apply "
                 "--dry-run=server: the server's validation and admission, nothing stored) and report what it "
                 "refuses; needs create permission. client or none: only kubedra's own checks.")] = "none",
    ) -> None:
        from kubedra.allocator import FeatureGateError, Features, parse_gates
        from kubedra.migrate import Source
        from kubedra.objects.errors import InvalidInputError
        from kubedra.objects.load import load_inputs, read_inputs
        from kubedra.sim.validation import validate_inputs

        try:
            features = Features.for_release(kubernetes_version).with_gates(parse_gates(feature_gates))
        except FeatureGateError as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT) from exc
        fmt = output or default_format()
        limits = parse_limits(max_file_size)
        # Each input read once (stdin too): the loader, the schemas and the lines share it.
        inputs = read_inputs(files, limits=limits, recursive=recursive)
        sources = [Source(read.name, read.text) for read in inputs.texts]
        try:
            # Shapes only here (unknown fields, wrong types): the API's rules come next, with everything else.
            loaded = load_inputs(inputs, api_validation=False, limits=limits)
        except InvalidInputError as error:
            if any(p.unreadable for p in error.problems):
                fail_invalid(error)
            _report(_merge(schema_findings(sources, kubernetes_version), error.problems), None, [], fmt, sources)
            raise typer.Exit(EXIT_FINDINGS) from error
        print_warnings(loaded.warnings, quiet=quiet)
        print_warnings(loaded.notes, quiet=quiet, label="Note")
        if dry_run not in ("none", "client", "server"):
            stderr_console().print(f'error: --dry-run {dry_run!r}: must be "none", "client" or "server"',
                                   highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT)
        cluster = None
        if kubeconfig is not None or context is not None or dry_run == "server":
            from kubedra.cli.live import read_live
            from kubedra.kube.read import to_loaded

            cluster = to_loaded(read_live(kubeconfig, context), [])
        result = validate_inputs(loaded, features, files, cluster=cluster)
        if strict_references:
            result.findings, result.warnings = [*result.findings, *result.warnings], []
        # what NVIDIA's driver accepts only if its deployment allows it (feature gates); -q drops these notes
        notes: list[tuple[Any, str]] = [] if quiet else [(p.location, p.message) for p in result.notes]
        result.findings = _merge(schema_findings(sources, kubernetes_version, notes), result.findings)
        if dry_run == "server":
            result.findings = [*result.findings, *_server_findings(sources, kubeconfig, context, notes)]
        custom = {str(where) for where, _ in notes}  # noted: not "unchecked" a second time
        unchecked = [str(r.location) for r in result.unchecked if str(r.location) not in custom]
        _report(result.findings, result.checked, unchecked, fmt, sources if result.findings or result.warnings else [],
                result.warnings, [f"{where}: {text}" for where, text in notes])
        raise typer.Exit(EXIT_FINDINGS if result.findings else EXIT_OK)
