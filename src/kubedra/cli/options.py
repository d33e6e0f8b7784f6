"""Options several subcommands share, declared once so they read and behave the same everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kubedra.cli.output import OutputFormat
from kubedra.scheduler.scoring import Policy

if TYPE_CHECKING:
    from kubedra.allocator import Features
    from kubedra.objects.parse import ParseLimits

InputFiles = Annotated[
    list[str],
    typer.Option("-f", "--filename", help="File, directory (*.yaml, *.yml, *.json) or - for stdin; repeatable."),
]
ScenarioFiles = Annotated[
    list[str] | None,
    typer.Option("-f", "--filename", help="Manifest file or directory; repeatable (default: the built-in demo)."),
]
RecursiveOption = Annotated[
    bool, typer.Option("-R", "--recursive", help="Read directories given with -f and their subdirectories, as "
                       "kubectl's -R does (without it a subdirectory is skipped, with a note).")
]
PolicyOption = Annotated[
    Policy,
    typer.Option(
        "--policy",
        metavar="POLICY",
        help="How to choose among feasible nodes: kube-scheduler (its default profile's scores and tie-breaking), "
        "least-allocated, most-allocated (ties drawn with --seed), first-fit, or the FGD paper's fgd "
        "(fragmentation gradient descent), best-fit and random (docs/planning.md).",
    ),
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed for names and tie-breaking; same seed, same run.")]
VersionOption = Annotated[
    str, typer.Option("--kubernetes-version", help="Release whose feature-gate defaults apply: 1.34|1.35|1.36|1.37.")
]
GatesOption = Annotated[
    str, typer.Option("--feature-gates", help="Gate=bool,... overrides, e.g. DRAConsumableCapacity=false.")
]
OutputOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "-o",
        "--output",
        help="table (the default, piped or not), wide (more columns), name (kind/name per row), json or yaml.",
    ),
]
NoHeadersOption = Annotated[
    bool, typer.Option("--no-headers", help="Table output without the header row (as kubectl's --no-headers).")
]
QuietOption = Annotated[bool, typer.Option("-q", "--quiet", help="Do not print conversion warnings and notes.")]
KubeconfigOption = Annotated[
    str | None,
    typer.Option("--kubeconfig", help="Read the live cluster of this kubeconfig (read-only; nothing is written)."),
]
ContextOption = Annotated[str | None, typer.Option("--context", help="kubeconfig context (default: current).")]
MaxFileSizeOption = Annotated[
    str,
    typer.Option(
        "--max-file-size",
        metavar="SIZE",
        help="The largest input (each file, or stdin) read, as a quantity: 8Mi by default, a safety limit against "
        "runaway input; a snapshot of ~1,400 nodes is larger (e.g. --max-file-size 64Mi).",
    ),
]


def parse_limits(max_file_size: str) -> ParseLimits:
    """``--max-file-size`` as the loader's ParseLimits; exit 2 naming the flag when it is no positive size."""
    from kubedra.cli.output import EXIT_INVALID_INPUT, stderr_console
    from kubedra.objects.limits import MaxReadableFileBytes
    from kubedra.objects.parse import ParseLimits
    from kubedra.objects.quantity import Quantity, QuantityError

    try:
        size = Quantity.parse(max_file_size).value()
    except (QuantityError, ValueError, ArithmeticError):
        size = 0
    if not 0 < size <= MaxReadableFileBytes:
        stderr_console().print(f'error: --max-file-size: Invalid value: "{max_file_size}": must be a size from 1 to '
                               f"{MaxReadableFileBytes} bytes, such as 64Mi", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT)
    return ParseLimits(max_bytes=size)


def parse_features(version: str, gates: str) -> Features:
    """``--kubernetes-version`` and ``--feature-gates`` as the Features a simulation runs with; exit 2 on a bad
    release or gate (``simulate``, ``explain``, ``allocate`` and ``plan`` read them the same way)."""
    from kubedra.allocator import FeatureGateError, Features, parse_gates
    from kubedra.cli.output import EXIT_INVALID_INPUT, stderr_console

    try:
        return Features.for_release(version).with_gates(parse_gates(gates))
    except FeatureGateError as exc:
        stderr_console().print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT) from exc
