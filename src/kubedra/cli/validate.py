"""``kubedra validate``: everything in the inputs the API server would reject, or ``kubedra simulate`` could not use."""

from __future__ import annotations

from typing import Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import GatesOption, InputFiles, OutputOption, QuietOption, VersionOption
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    EXIT_OK,
    EXIT_UNSCHEDULABLE,
    OutputFormat,
    default_format,
    print_data,
    print_warnings,
    stderr_console,
    stdout_console,
)

EXIT_FINDINGS = EXIT_UNSCHEDULABLE

HELP = command_help(
    "Check FILEs as the API server would before accepting them, and as kubedra simulate would before running them.",
    "Every finding is reported, one per line, naming the file, the document index, Kind/name and the field path, in "
    "the API server's wording (e.g. \"spec.devices: Too many: 129: must have at most 128 items\"): resource.k8s.io/v1 "
    "and core/v1 validation rules and limits; every CEL selector (DeviceClasses, claims, claim templates, "
    "DeviceTaintRules) compiled as the API server compiles it - it must return bool and stay within the cost limit; "
    "NodePools (counts, known GPU models, MIG, sharing) and node names; workloads (replicas, counts, selectors, "
    "restart policies, kubedra.io/ timing annotations) and their pod templates (a container's resources.claims[].name "
    "must name an entry of spec.resourceClaims). An input with no objects is a finding too.",
    "Beta and legacy documents are converted first; their conversion warnings go to stderr (-q drops them). "
    "-o json prints {findings: [{file, document, object, field, message}], checked, unchecked}.",
    examples=[
        "kubedra validate -f examples/allocate/h100-mig.yaml",
        "kubedra validate -f src/kubedra/data/seed -f src/kubedra/data/demo -q",
        "cat examples/allocate/l4-shares.yaml | kubedra validate -f - -o json",
    ],
    exit_status="0 valid, 1 findings, 2 unreadable input (a file that cannot be read, YAML or JSON that does not "
    "parse).",
)


def _finding(problem: Any) -> dict[str, Any]:
    where = problem.location
    return {"file": where.file, "document": where.document, "object": where.object, "field": where.field,
            "message": problem.message}


def _report(problems: list[Any], checked: int | None, unchecked: list[str], fmt: OutputFormat) -> None:
    """The findings and a summary; ``checked`` None: documents did not decode, so the rest was not checked."""
    if fmt is not OutputFormat.table:
        print_data({"findings": [_finding(p) for p in problems], "checked": checked, "unchecked": unchecked}, fmt)
        return
    console = stdout_console()
    for problem in problems:
        console.print(str(problem), highlight=False, markup=False)
    count = len(problems)
    findings = f"{count} finding{'s' if count != 1 else ''}"
    if checked is None:
        console.print(f"{findings}: these documents do not decode, so nothing else was checked yet",
                      highlight=False, markup=False)
        return
    text = f"{checked} object{'s' if checked != 1 else ''} checked: " + (findings if count else "valid")
    if unchecked:
        text += f" ({len(unchecked)} other document{'s' if len(unchecked) != 1 else ''} passed through unchecked)"
    console.print(text, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    @app.command("validate", help=HELP, no_args_is_help=True)
    def validate(
        files: InputFiles,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
        quiet: QuietOption = False,
    ) -> None:
        from kubedra.allocator import FeatureGateError, Features, parse_gates
        from kubedra.objects.errors import InvalidInputError
        from kubedra.objects.load import load_paths
        from kubedra.sim.validation import validate_inputs

        try:
            features = Features.for_release(kubernetes_version).with_gates(parse_gates(feature_gates))
        except FeatureGateError as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT) from exc
        fmt = output or default_format()
        try:
            # Shapes only here (unknown fields, wrong types): the API's rules come next, with everything else.
            loaded = load_paths(files, api_validation=False)
        except InvalidInputError as error:
            if any(p.unreadable for p in error.problems):
                console = stderr_console()
                for problem in error.problems:
                    console.print(f"error: {problem}", highlight=False, markup=False)
                raise typer.Exit(EXIT_INVALID_INPUT) from error
            _report(error.problems, None, [], fmt)
            raise typer.Exit(EXIT_FINDINGS) from error
        print_warnings(loaded.warnings, quiet=quiet)
        result = validate_inputs(loaded, features, files)
        _report(result.findings, result.checked, [str(r.location) for r in result.unchecked], fmt)
        raise typer.Exit(EXIT_FINDINGS if result.findings else EXIT_OK)
