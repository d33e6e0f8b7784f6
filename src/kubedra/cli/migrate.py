"""``kubedra migrate``: workloads and device-plugin configs from NVIDIA's device plugin to DRA."""

from __future__ import annotations

import enum
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from kubedra.cli.helptext import command_help
from kubedra.cli.options import MaxFileSizeOption, QuietOption, parse_limits
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    EXIT_OK,
    Column,
    Table,
    fail,
    fail_invalid,
    print_warnings,
    stderr_console,
)
from kubedra.migrate.dradriver import VALUES_FILE
from kubedra.migrate.model import Migration, Mode

HELP = command_help(
    "Rewrite workloads that ask for nvidia.com/gpu (and MIG profiles) the device-plugin way for DRA.",
    "Reads Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs and Lists (files, directories "
    "with their subdirectories, or - for stdin), read and checked as kubedra validate checks them: whatever it "
    "finds is refused with simulate's message (exit 2, nothing written). --mode claims (the default): one "
    "ResourceClaimTemplate per workload and container (count = the number asked for, none for a count of 0; class "
    "gpu.nvidia.com, or mig.nvidia.com with a selector on the profile), spec.resourceClaims and resources.claims "
    "added, the extended resource removed; --min-memory, --model, "
    "--min-compute-capability and --same-pcie-root add what the device plugin could not express. --mode "
    "extended-resource: pod specs stay as they are and a DeviceClass with extendedResourceName (KEP-5004) is "
    "added, so the scheduler serves nvidia.com/gpu through DRA on nodes without the device plugin (node pool by "
    "node pool).",
    "The device plugin's config (version: v1, sharing.timeSlicing or mps, bare or in its ConfigMap with one key "
    "per node label nvidia.com/device-plugin.config) becomes DeviceClasses with NVIDIA's GpuConfig and values for "
    "the DRA driver's chart (consumableShares: N); every behaviour that changes is listed as a decision. Beta and "
    "legacy DRA objects are converted as kubedra convert does; other documents pass through with their comments.",
    "A GPU Operator ClusterPolicy (nvidia.com/v1) among the inputs is read (devicePlugin.config, mps, enabled; "
    "mig.strategy; migManager.config; cdi; dcgmExporter; hostPaths; draDriver) and its DRA side written: "
    "--dra-install helm (the default) adds values for the standalone DRA driver chart, --dra-install gpucluster a "
    "GPUCluster (nvidia.com/v1alpha1, for a new cluster: NVIDIA supports no in-place move); its ConfigMap's keys "
    "become DeviceClasses as above, and every setting with no DRA twin is a decision.",
    "Output: the migrated manifests on stdout, -o yaml (the default: multi-document YAML, comments kept), -o json "
    "(a v1 List, as kubectl get -o json prints several objects) or -o name (kind/name per object); --output-dir "
    "DIR: one YAML file per input instead, plus driver-values.yaml (each node pool's sharing settings) and, from a "
    "ClusterPolicy, nvidia-dra-driver-gpu-values.yaml (helm -f for NVIDIA's chart). The report on stderr: one "
    "summary line and the "
    "decisions (-q drops them); --report: the full table of changes, decisions and steps; --report-format json: "
    "the same as JSON on stderr. Migrating migrated output changes nothing.",
    examples=[
        "kubedra migrate -f examples/migrate/training-job.yaml",
        "kubedra migrate plan examples/migrate/rollout  # the rollout, node by node: kubedra migrate plan -h",
        "kubedra migrate -f examples/migrate --min-memory 40Gi --model 'A100*' --same-pcie-root --report",
        "kubedra migrate -f examples/migrate/inference-deployment.yaml --mode extended-resource",
        "kubedra migrate -f examples/migrate/device-plugin/time-slicing-config-fine.yaml --report-format json",
        "kubedra migrate -f examples/migrate/training-job.yaml -o name -q",
        "kubedra migrate examples/migrate/gpu-operator --dra-install gpucluster --report",
        "cat examples/migrate/mig-statefulset.yaml | kubedra migrate -f -",
        "kubedra migrate examples/migrate/nightly-cronjob.yaml --mode extended-resource --min-memory 40Gi  # exit 2: "
        "conflict",
    ],
    exit_status="0 migrated, 2 invalid input or conflicting options (every problem on stderr; nothing written).",
)


RELEASE = "1.37"  # the release whose API rules the input must meet (validate's default)


class ReportFormat(enum.StrEnum):
    table = "table"
    json = "json"


class DraInstall(enum.StrEnum):
    helm = "helm"
    gpucluster = "gpucluster"


class ManifestFormat(enum.StrEnum):
    """What ``-o`` prints of the migrated objects: the same choices as ``kubectl get`` has for objects."""

    yaml = "yaml"
    json = "json"
    name = "name"


def read_sources(paths: list[str], *, limits: Any = None) -> tuple[list[Any], list[Any]]:
    """The inputs as sources, read through the front door ``validate`` and ``simulate`` use: files, a directory's
    *.yaml|*.yml|*.json (sorted) and its subdirectories' (a migration takes a whole tree), - for stdin; loaded and
    validated as ``kubedra validate`` does, so whatever it finds (or cannot read) is refused here with exit 2, the
    same message and nothing written: migrate never rewrites what the API server would reject. Returns the sources
    and the loader's notes on identical copies of an object (kept, as ``kubectl apply`` accepts them)."""
    from kubedra.allocator import Features
    from kubedra.cli.validate import _merge, schema_findings
    from kubedra.migrate import Source
    from kubedra.migrate.deviceplugin import is_plugin_config
    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_inputs, read_inputs
    from kubedra.sim.validation import NO_OBJECTS, validate_inputs

    inputs = read_inputs(paths, limits=limits, recursive=True)
    sources = [Source(read.name, read.text) for read in inputs.texts]
    try:
        # Device-plugin configs are no Kubernetes objects: migrate reads them itself.
        loaded = load_inputs(inputs, limits=limits, passthrough=is_plugin_config)
    except InvalidInputError as error:
        fail_invalid(error)
    result = validate_inputs(loaded, Features.for_release(RELEASE), paths)
    # An input with no objects (only device-plugin configs, or nothing) is no refusal: there is nothing to reject.
    findings = [p for p in result.findings if p.message != NO_OBJECTS]
    findings = _merge(schema_findings(sources, RELEASE), findings)
    if findings:
        fail_invalid(InvalidInputError(findings))
    return sources, [*(w for w in loaded.warnings if w.code == "duplicate-identical"), *loaded.notes]


def report_data(result: Migration) -> dict[str, Any]:
    def where(location: Any) -> dict[str, Any]:
        return {"file": location.file, "document": location.document, "object": location.object,
                "field": location.field}

    return {
        "changes": [{**where(c.location), "action": c.action, "detail": c.detail} for c in result.changes],
        "decisions": [{**where(d.location), "message": d.message} for d in result.decisions],
        "steps": result.steps,
        "driverValues": result.driver_values,
        "draDriverValues": result.dra_values,
    }


def _print_report(result: Migration, full: bool, fmt: ReportFormat) -> None:
    console = stderr_console()
    if fmt is ReportFormat.json:
        import json

        sys.stderr.write(json.dumps(report_data(result), indent=2, ensure_ascii=False) + "\n")
        return
    if full:
        table = Table([Column("file"), Column("object"), Column("action"), Column("change")])
        for c in result.changes:
            file = c.location.file if c.location.document is None else f"{c.location.file}[{c.location.document}]"
            table.add(file, c.location.object, c.action, c.detail)
        for line in table.lines():
            console.print(line, highlight=False, markup=False)
    for d in result.decisions:
        console.print(f"Decide: {d.location}: {d.message}" if str(d.location) else f"Decide: {d.message}",
                      highlight=False, markup=False)
    if full:
        import yaml

        for values in result.driver_values:
            console.print("DRA driver values (" + values["config"] + "):", highlight=False, markup=False)
            body = {k: v for k, v in values.items() if k != "config"}
            console.print(yaml.safe_dump(body, sort_keys=False).rstrip(), highlight=False, markup=False)
        if result.dra_values is not None:
            console.print(f"NVIDIA DRA driver chart values ({VALUES_FILE}):", highlight=False, markup=False)
            console.print(yaml.safe_dump(result.dra_values, sort_keys=False).rstrip(), highlight=False, markup=False)
        console.print("Steps:", highlight=False, markup=False)
        for i, step in enumerate(result.steps, start=1):
            console.print(f"  {i}. {step}", highlight=False, markup=False)
    else:
        count = sum(1 for c in result.changes if c.action != "unchanged")
        console.print(f"{count} change(s), {len(result.decisions)} decision(s); --report for the steps",
                      highlight=False, markup=False)


def _write_dir(directory: str, result: Migration) -> None:
    """One file per input (and the chart values): all written, each whole, or none (exit 2 naming the path)."""
    from pathlib import Path

    from kubedra.cli.files import write_all
    from kubedra.migrate import dump

    names: dict[str, int] = {}
    planned: list[tuple[str, str]] = []
    for output in result.files:
        base = "stdin.yaml" if output.source == "<stdin>" else os.path.basename(output.source)
        stem, ext = os.path.splitext(base)
        ext = ".yaml" if ext.lower() == ".json" else ext
        seen = names.get(stem + ext, 0)
        names[stem + ext] = seen + 1
        planned.append((f"{stem}{f'-{seen}' if seen else ''}{ext}", dump(output.documents)))
    if result.driver_values:
        import yaml

        planned.append(("driver-values.yaml", yaml.safe_dump_all(result.driver_values, sort_keys=False)))
    if result.dra_values is not None:
        import yaml

        planned.append((VALUES_FILE, yaml.safe_dump(result.dra_values, sort_keys=False)))
    try:
        write_all(Path(directory), planned)
    except OSError as exc:
        fail(str(exc))


class _WithPlan(TyperCommand):
    """``kubedra migrate plan ...`` is the rollout planner (:mod:`kubedra.cli.migrate_plan`), ``kubedra migrate
    FILES`` the manifest migration: a first argument ``plan`` hands the rest to the planner (``./plan`` is a file)."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        if args and args[0] == "plan":
            from kubedra.cli.helptext import name_placeholders
            from kubedra.cli.migrate_plan import plan_app

            group = typer.main.get_command(plan_app())
            command = group.commands["plan"]  # type: ignore[attr-defined]
            name_placeholders(command)  # as main() does for the others: -f FILE, not a Python type
            return command.make_context(f"{info_name} plan", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


def register(app: typer.Typer) -> None:
    @app.command("migrate", help=HELP, no_args_is_help=True, cls=_WithPlan)
    def migrate_command(
        paths: Annotated[list[str] | None, typer.Argument(help="Files, directories or - (as -f).",
                                                          show_default=False)] = None,
        files: Annotated[list[str] | None, typer.Option(
            "-f", "--filename", help="File, directory (*.yaml, *.yml, *.json) or - for stdin; repeatable.")] = None,
        mode: Annotated[Mode, typer.Option("--mode", help="claims: rewrite pods to ResourceClaimTemplates; "
                                           "extended-resource: keep pods, add DeviceClasses.")] = Mode.claims,
        min_memory: Annotated[str | None, typer.Option("--min-memory", help="At least this much GPU memory, "
                                                       "e.g. 40Gi.")] = None,
        model: Annotated[str | None, typer.Option("--model", help="productName glob, e.g. 'A100*' "
                                                  "(NVIDIA's prefix optional).")] = None,
        min_compute_capability: Annotated[str | None, typer.Option("--min-compute-capability",
                                                                   help="At least this CUDA compute capability, "
                                                                   "e.g. 8.0.")] = None,
        same_pcie_root: Annotated[bool, typer.Option("--same-pcie-root", help="All of a container's GPUs under one "
                                                     "PCIe root (matchAttribute).")] = False,
        gpu_memory: Annotated[str | None, typer.Option("--gpu-memory", help="Memory of one GPU, for MPS's pinned "
                                                       "memory limit (memory / replicas).")] = None,
        dra_install: Annotated[DraInstall, typer.Option(
            "--dra-install", help="A ClusterPolicy's DRA side: helm (values for the standalone DRA driver chart, "
            "NVIDIA's fully supported install) or gpucluster (a GPUCluster, GPU Operator v26.7.0+, greenfield only)."
        )] = DraInstall.helm,
        output_dir: Annotated[str | None, typer.Option("--output-dir", help="Write one file per input here "
                                                       "instead of stdout.")] = None,
        report: Annotated[bool, typer.Option("--report", help="The full report on stderr: changes per object, "
                                             "decisions, driver values, steps.")] = False,
        output: Annotated[ManifestFormat, typer.Option(
            "-o", "--output", help="The migrated objects on stdout: yaml (comments kept), json (a v1 List) or name.",
        )] = ManifestFormat.yaml,
        report_format: Annotated[ReportFormat, typer.Option(
            "--report-format", help="The report on stderr: table or json (json implies --report).")]
        = ReportFormat.table,
        quiet: QuietOption = False,
        max_file_size: MaxFileSizeOption = "8Mi",
    ) -> None:
        from kubedra.migrate import MigrationError, Options, migrate

        inputs = [*(paths or []), *(files or [])]
        if not inputs:
            fail("no input: give FILES, a directory or - (or -f)")
        options = Options(mode, min_memory, model, min_compute_capability, same_pcie_root, gpu_memory,
                          dra_install.value)
        sources, copies = read_sources(inputs, limits=parse_limits(max_file_size))
        print_warnings(copies, quiet=quiet)
        try:
            result = migrate(sources, options)
        except MigrationError as error:
            console = stderr_console()
            for problem in error.problems:
                console.print(f"error: {problem}", highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT) from error
        if output_dir is not None:
            _write_dir(output_dir, result)
        else:
            _print_manifests(result, output)
        if not quiet or report or report_format is ReportFormat.json:
            _print_report(result, report or report_format is ReportFormat.json, report_format)
        raise typer.Exit(EXIT_OK)


def _print_manifests(result: Migration, fmt: ManifestFormat) -> None:
    """The migrated objects on stdout in the ``-o`` format."""
    from kubedra.migrate import dump
    from kubedra.migrate.documents import plain

    if fmt is ManifestFormat.yaml:
        sys.stdout.write("---\n".join(dump(f.documents) for f in result.files if f.documents))
        return
    objects: list[Any] = []
    for document in (plain(d) for f in result.files for d in f.documents):
        # A List in the input contributes its items: the output is one List, as kubectl prints several objects.
        is_list = isinstance(document, dict) and str(document.get("kind", "")).endswith("List")
        items = document.get("items") if is_list else None
        objects.extend(items if isinstance(items, list) else [document])
    if fmt is ManifestFormat.name:
        for obj in objects:
            kind = str(obj.get("kind", "")).lower() if isinstance(obj, dict) else ""
            group = str(obj.get("apiVersion", "")).rpartition("/")[0] if isinstance(obj, dict) else ""
            metadata = obj.get("metadata") if isinstance(obj, dict) else None
            name = metadata.get("name", "") if isinstance(metadata, dict) else ""
            sys.stdout.write(f"{kind}{'.' + group if group else ''}/{name}\n")
        return
    import json

    # ASCII escapes: JSON all the same, and a YAML reader (migrate itself) takes it back whatever the text holds.
    sys.stdout.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects, "metadata": {}},
                                indent=4) + "\n")

