"""``kubedra driver``: the node driver (a DRA kubelet plugin), in the foreground until SIGTERM."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.output import EXIT_INVALID_INPUT, EXIT_OK, stderr_console

HELP = command_help(
    "Run the node driver: a DRA kubelet plugin that publishes this node's GPUs and prepares their claims.",
    "Publishes the node's GPUs as ResourceSlices exactly as NVIDIA's driver names them (driver gpu.nvidia.com, pool "
    "= node name, devices gpu-<minor>, attributes productName, architecture, cudaComputeCapability, driverVersion, "
    "uuid, resource.kubernetes.io/pciBusID ..., capacity memory; MIG profiles as counter sets), registers with the "
    "kubelet on <registry dir>/<driver>-reg.sock, and serves DRAPlugin v1 and v1beta1 and DRAResourceHealth on "
    "<plugin dir>/dra.sock. Prepare writes one CDI spec per claim to the CDI root; a checkpoint in the plugin dir "
    "makes restarts safe.",
    "A checkpoint it cannot trust (corrupt, truncated, of another version, or of another boot while the node shows "
    "it was not rebooted), or a missing one while a CDI spec of this boot or a MIG device of the driver exists, "
    "stops the driver (exit 2) before it touches anything: without it the driver would destroy the MIG devices and "
    "CDI specs of running pods. The message names the file and the evidence. Either restart with "
    "--recover-checkpoint, which adopts every claim whose CDI spec is in the CDI root (with the MIG devices NVML "
    "shows for it), destroys and deletes nothing, and keeps an untrusted file as checkpoint.json.<why>-<time>; or, "
    "once no pod on the node uses a claim of the driver (kubectl drain), remove the file with the driver's CDI specs "
    "and MIG devices. Runbook: docs/migrating-from-device-plugin.md.",
    "Backends: nvml (the node's NVIDIA driver through nvidia-ml-py; fails clearly when libnvidia-ml is missing) or "
    "fake (--inventory FILE: driverVersion, cudaDriverVersion and gpus with minor, uuid, productName, brand, "
    "architecture, cudaComputeCapability, memory, pciBusID and optional migProfiles). With fake, nvidia-smi "
    "commands (GpuConfig TimeSlicing) and the MPS control daemon's (GpuConfig MPS: nvidia-cuda-mps-control -d per "
    "claim, pipe and log directories under <plugin dir>/mps/<claim UID>) are recorded, not run, and MIG devices "
    "(created at prepare from the published placements) are kept in <plugin dir>/fake-mig.json.",
    "Without --kubeconfig: the in-cluster service account (a DaemonSet; RBAC in deploy/driver-rbac.yaml). Runs in "
    "the foreground, logs to stderr, and removes its sockets on SIGTERM. To try it on a workstation: kubedra driver "
    "--node NODE --backend fake --inventory FILE --plugin-dir DIR --registry-dir DIR --cdi-root DIR --kubeconfig "
    "FILE, against a cluster that has a Node named NODE.",
    examples=["kubedra driver --node gpu-node-1 --backend fake  # exit 2: --backend fake needs --inventory FILE"],
    exit_status="0 after SIGTERM or SIGINT, 2 when it cannot start (bad flags, inventory or kubeconfig; no NVML; a "
    "checkpoint it cannot trust). An unreachable API server is retried with backoff, not fatal.",
)


def register(app: typer.Typer) -> None:
    @app.command("driver", help=HELP)
    def driver_command(
        node: Annotated[str, typer.Option("--node", help="This node's name (the pool name).")],
        backend: Annotated[str, typer.Option("--backend", help="Where the GPUs come from: nvml or fake.")] = "nvml",
        inventory: Annotated[
            Path | None, typer.Option("--inventory", help="The fake backend's YAML inventory.")
        ] = None,
        driver_name: Annotated[str, typer.Option("--driver-name", help="The DRA driver name.")] = "gpu.nvidia.com",
        plugin_dir: Annotated[
            Path | None,
            typer.Option(
                "--plugin-dir", help="Holds dra.sock and checkpoint.json (default: /var/lib/kubelet/plugins/DRIVER)."
            ),
        ] = None,
        registry_dir: Annotated[
            Path, typer.Option("--registry-dir", help="The kubelet's plugin registration directory.")
        ] = Path("/var/lib/kubelet/plugins_registry"),
        cdi_root: Annotated[Path, typer.Option("--cdi-root", help="Where CDI specs are written.")] = Path(
            "/var/run/cdi"
        ),
        kubeconfig: Annotated[
            str | None, typer.Option("--kubeconfig", help="Kubeconfig file (default: in-cluster config).")
        ] = None,
        consumable_shares: Annotated[
            str | None,
            typer.Option("--consumable-shares", help="N (a shares capacity of N per GPU) or memory (NVIDIA's flag)."),
        ] = None,
        health_port: Annotated[
            int | None, typer.Option("--health-port", help="TCP port of the gRPC health service (liveness probe).")
        ] = None,
        resource_api_version: Annotated[
            str,
            typer.Option(
                "--resource-api-version",
                help="resource.k8s.io version ResourceSlices are written and claims read in: v1 (Kubernetes "
                "1.34+), v1beta2 (1.33) or v1beta1 (1.32).",
            ),
        ] = "v1",
        xid_taints: Annotated[
            bool,
            typer.Option(
                "--xid-taints",
                help="Also taint a device in its ResourceSlice on an XID (gpu.nvidia.com/xid=<xid>: NoSchedule, or "
                "None for the XIDs NVIDIA ignores: 13, 31, 43, 45, 68, 109). Critical XIDs always make the device "
                "Unhealthy in the kubelet's health stream.",
            ),
        ] = False,
        pod_uid: Annotated[
            str | None,
            typer.Option(
                "--pod-uid",
                help="This driver pod's metadata.uid (downward API): per-pod socket names <driver>-<uid>-reg.sock "
                "and dra-<uid>.sock, so an old and a new driver pod overlap during a rolling update (kubelet 1.33+).",
            ),
        ] = None,
        recover_checkpoint: Annotated[
            bool,
            typer.Option(
                "--recover-checkpoint",
                help="Start from a checkpoint that cannot be trusted by adopting what the node proves is in use: "
                "every claim with a CDI spec in the CDI root, its MIG devices found in NVML. Nothing is destroyed "
                "or deleted; the old file is kept beside the new one. Without it such a checkpoint stops the driver.",
            ),
        ] = False,
    ) -> None:
        from kubedra.driver.plugin import DriverOptions, run
        from kubedra.objects.errors import KubedraError

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        options = DriverOptions(
            node=node,
            backend=backend,
            inventory=inventory,
            driver_name=driver_name,
            plugin_dir=plugin_dir,
            registry_dir=registry_dir,
            cdi_root=cdi_root,
            kubeconfig=kubeconfig,
            consumable_shares=consumable_shares,
            health_port=health_port,
            pod_uid=pod_uid,
            xid_taints=xid_taints,
            resource_api_version=resource_api_version,
            recover_checkpoint=recover_checkpoint,
        )
        try:
            raise typer.Exit(run(options) or EXIT_OK)
        except KubedraError as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT) from exc
        except OSError as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise typer.Exit(EXIT_INVALID_INPUT) from exc
