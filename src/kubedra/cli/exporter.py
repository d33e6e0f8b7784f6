"""``kubedra exporter``: /metrics of a live cluster's DRA state (list+watch through the kube/ adapter)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import ContextOption, KubeconfigOption, VersionOption
from kubedra.cli.output import EXIT_INVALID_INPUT, EXIT_OK, EXIT_UNSCHEDULABLE, stderr_console

EXIT_FINDINGS = EXIT_UNSCHEDULABLE  # --once left objects out (the convention of validate's findings)

HELP = command_help(
    "Serve Prometheus metrics of a live cluster's DRA state: claims pending and allocated, free devices per node.",
    "Lists and watches Nodes, DeviceClasses, ResourceSlices, DeviceTaintRules, ResourceClaims, "
    "ResourceClaimTemplates and Pods (read only; deploy/rbac.yaml is the ClusterRole it needs), lists a kind "
    "again after any failed watch (410 Gone included), with backoff. Free devices are what the structured "
    "allocator could still allocate (CEL "
    "selectors, taints, counter sets, consumable capacity). No DRA number is served before every kind was listed; "
    "kubedra_exporter_synced, kubedra_exporter_watch_up{kind} (0 from a failed watch until the kind is listed again), "
    "kubedra_exporter_watch_last_sync_timestamp_seconds{kind} and kubedra_exporter_last_sync_timestamp_seconds say "
    "how current the numbers are (kubedra_exporter_served_state_age_seconds: how old the served state is). Fields "
    "a newer API server adds are ignored; an object that still cannot be decoded is left out of the numbers, "
    "named in a warning and counted in kubedra_exporter_decode_errors_total{kind} and "
    "kubedra_exporter_undecodable_objects{kind}, and the rest stays current. Watch events update only what they "
    "touch. deploy/prometheus/dra-rules.yaml has the alerts, deploy/grafana the dashboard.",
    "Without --kubeconfig, as kubectl: every file of $KUBECONFIG merged, else ~/.kube/config, else the in-cluster "
    "service account. --once prints one "
    "exposition once synced and exits (for a look, or a cron job); objects it had to leave out are named on stderr "
    "and make the exit status 1.",
    examples=[
        "kubedra exporter --kubeconfig ~/.kube/config --once",
        "kubedra exporter --kubeconfig ~/.kube/config --once --sync-timeout 30",
    ],
    exit_status="0 (serving until interrupted, or --once printed), 1 when --once printed the metrics but left out "
    "objects it could not decode (each named on stderr), 2 when the cluster cannot be read or synced, or --listen "
    "cannot be bound.",
)


def register(app: typer.Typer) -> None:
    @app.command("exporter", help=HELP)
    def exporter_command(
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
        listen: Annotated[
            str, typer.Option("--listen", metavar="HOST:PORT", help="Where /metrics is served (:9400 = every "
                              "interface).")
        ] = ":9400",
        kubernetes_version: VersionOption = "1.37",
        once: Annotated[bool, typer.Option("--once", help="Print the metrics once synced, then exit.")] = False,
        sync_timeout: Annotated[
            float, typer.Option("--sync-timeout", min=0.1, help="With --once: seconds to wait for the first sync.")
        ] = 60.0,
    ) -> None:
        from kubedra.allocator import FeatureGateError, Features
        from kubedra.kube.api import KubeError, connect
        from kubedra.kube.mirror import Mirror
        from kubedra.kube.read import slim
        from kubedra.metrics.live import LiveSource

        def warn(message: str) -> None:
            stderr_console().print(f"warning: {message}", highlight=False, markup=False)

        try:
            features = Features.for_release(kubernetes_version)
            connect(kubeconfig, context).close()  # a bad kubeconfig is reported now, not by every watch thread
            mirror = Mirror(lambda: connect(kubeconfig, context), trim=slim)
            mirror.start()
        except (KubeError, FeatureGateError) as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT) from exc
        import gc

        # The cluster's objects live as long as the process: kept out of the collector's full passes.
        source = LiveSource(mirror, features, on_error=warn, on_first_sync=gc.freeze)
        try:
            if once:
                try:
                    mirror.wait(timeout=sync_timeout)
                except TimeoutError as exc:
                    stats = "; ".join(f"{k}: {s.last_error}" for k, s in mirror.stats().items() if s.last_error)
                    stderr_console().print(f"error: not synced after {sync_timeout:g}s{': ' + stats if stats else ''}",
                                           highlight=False, markup=False)
                    raise typer.Exit(EXIT_INVALID_INPUT) from exc
                if not source.refresh():
                    stderr_console().print("error: the cluster's state could not be applied (see the warning above)",
                                           highlight=False, markup=False)
                    raise typer.Exit(EXIT_INVALID_INPUT)
                sys.stdout.write(source.text())
                left_out = source.undecodable
                if left_out:
                    stderr_console().print(
                        f"error: {len(left_out)} object(s) could not be decoded and are left out of the metrics",
                        highlight=False, markup=False)
                raise typer.Exit(EXIT_FINDINGS if left_out else EXIT_OK)
            from kubedra.cli.serve import start_server, wait_forever

            source.start()
            try:
                start_server(source, listen)
                wait_forever()
            finally:
                source.stop()
        finally:
            mirror.stop()
