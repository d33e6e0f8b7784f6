"""deploy/helm/kubedra rendered and linted by the real helm for every documented value combination; every object
passes the strict OpenAPI schemas of the releases its resource.k8s.io version is served in; bad values fail."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from tests.helm.chart import (
    CHART,
    COMBINATIONS,
    RELEASES,
    ROOT,
    api_version_of,
    by_kind,
    helm_run,
    one,
    render,
    set_args,
)

from kubedra.cli.app import build_app
from kubedra.schema import SchemaChecker

IDS = list(COMBINATIONS)
# prometheus-operator kinds are CRDs: no Kubernetes schema has them; they are checked by content below.
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}


@pytest.mark.parametrize("combination", IDS)
def test_lint_passes(helm: Path, combination: str) -> None:
    """Strict: warnings fail too (the betas are linted at the oldest release they are for, so helm's deprecation
    notice for them in 1.36+ stays a fact, not a finding)."""
    settings = COMBINATIONS[combination]
    kube = RELEASES[api_version_of(settings)][0]
    result = helm_run(helm, "lint", "--strict", "--kube-version", f"{kube}.0", str(CHART), *set_args(settings),
                      check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("combination", IDS)
def test_every_rendered_object_passes_the_strict_schemas(helm: Path, combination: str) -> None:
    settings = COMBINATIONS[combination]
    for release in RELEASES[api_version_of(settings)]:
        objects = render(helm, settings, kube_version=release)
        assert objects
        checker = SchemaChecker(release)
        for obj in objects:
            if obj["kind"] in CRD_KINDS:
                continue
            problems = checker.check(obj)
            assert not problems, (release, obj["kind"], obj["metadata"]["name"], problems)


def test_v1_is_checked_against_1_34_to_1_36() -> None:
    assert RELEASES["v1"] == ("1.34", "1.35", "1.36")


def test_defaults_render_what_the_issue_lists(helm: Path) -> None:
    objects = render(helm, [])
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == sorted([
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding",  # driver
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding",  # exporter
        "DaemonSet", "Deployment", "Service", "ConfigMap", "DeviceClass",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    ])
    assert [c["metadata"]["name"] for c in by_kind(objects, "DeviceClass")] == ["gpu.nvidia.com"]
    assert all(o["metadata"].get("namespace") in (None, "kubedra") for o in objects)


@pytest.mark.parametrize("api", ["v1", "v1beta2", "v1beta1"])
def test_device_classes_and_policy_speak_the_chosen_api_version(helm: Path, api: str) -> None:
    settings = [f"resourceApiVersion={api}", "mig.enabled=true"]
    if api != "v1beta1":
        settings.append("sharing.consumableShares=4")
    objects = render(helm, settings)
    classes = by_kind(objects, "DeviceClass")
    assert {c["apiVersion"] for c in classes} == {f"resource.k8s.io/{api}"}
    names = [c["metadata"]["name"] for c in classes]
    assert names == ["gpu.nvidia.com", "mig.nvidia.com"] + (["gpu.shared.nvidia.com"] if api != "v1beta1" else [])
    policy = one(objects, "ValidatingAdmissionPolicy")
    assert policy["spec"]["matchConstraints"]["resourceRules"][0]["apiVersions"] == [api]
    args = one(objects, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--resource-api-version={api}" in args


def test_class_selectors_are_nvidias(helm: Path) -> None:
    objects = render(helm, ["mig.enabled=true", "sharing.consumableShares=4", "sharing.timeSlicing.interval=Long",
                            "deviceClasses.extendedResourceName=nvidia.com/gpu"])
    classes = {c["metadata"]["name"]: c["spec"] for c in by_kind(objects, "DeviceClass")}
    base = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
    assert classes["gpu.nvidia.com"] == {"selectors": [{"cel": {"expression": base + "'gpu'"}}],
                                         "extendedResourceName": "nvidia.com/gpu"}
    assert classes["mig.nvidia.com"] == {"selectors": [{"cel": {"expression": base + "'mig'"}}]}
    shared = classes["gpu.shared.nvidia.com"]
    assert shared["selectors"] == [{"cel": {"expression": base + "'gpu' && device.allowMultipleAllocations"}}]
    assert shared["config"][0]["opaque"]["parameters"]["sharing"] == {
        "strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}


def test_class_selectors_match_kubedra_migrate(helm: Path) -> None:
    """One naming for NVIDIA's classes: the chart's and the ones kubedra migrate writes for the same resources."""
    from kubedra.migrate.workloads import class_for, class_selectors

    objects = render(helm, ["sharing.consumableShares=4"])
    classes = {c["metadata"]["name"]: c["spec"]["selectors"] for c in by_kind(objects, "DeviceClass")}
    for resource in ("nvidia.com/gpu", "nvidia.com/gpu.shared"):
        assert classes[class_for(resource)] == [{"cel": {"expression": e}} for e in class_selectors(resource)]


# ------------------------------------------------------------------------------------------- the pods' commands

def _parse(command_name: str, args: list[str]) -> dict[str, Any]:
    """The container's args through the real click command's parser (no --help), as `kubedra ARGS` would be."""
    root = typer.main.get_command(build_app())
    assert args[0] == command_name, args
    command = root.commands[command_name]  # type: ignore[attr-defined]
    known = {opt for p in command.params for opt in p.opts}
    expanded = [re.sub(r"\$\((\w+)\)", lambda m: f"value-of-{m.group(1).lower()}", a) for a in args[1:]]
    unknown = [a for a in expanded if a.startswith("--") and a.split("=", 1)[0] not in known]
    assert not unknown, f"kubedra {command_name} has no such flags: {unknown}"
    context = command.make_context(command_name, expanded)
    return dict(context.params)


def _first_containers(helm: Path, combination: str, kind: str) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """The rendered objects and, for each workload of ``kind``, its first container."""
    objects = render(helm, COMBINATIONS[combination])
    for workload in by_kind(objects, kind):
        yield objects, workload["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("combination", IDS)
def test_driver_args_parse_with_the_real_cli(helm: Path, combination: str) -> None:
    for _, container in _first_containers(helm, combination, "DaemonSet"):
        params = _parse("driver", container["args"])
        assert params["node"] == "value-of-node_name"
        assert params["health_port"] == container["livenessProbe"]["grpc"]["port"]
        assert str(params["cdi_root"]) == next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "cdi")
        env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container["env"]}
        assert env["NODE_NAME"] == "spec.nodeName"
        assert env["POD_UID"] == "metadata.uid"
        assert params["pod_uid"] == "value-of-pod_uid"
        assert params["resource_api_version"] in ("v1", "v1beta2", "v1beta1")
        assert params["xid_taints"] is ("driver.xidTaints=true" in COMBINATIONS[combination])


def test_driver_args_carry_the_values(helm: Path) -> None:
    args = one(render(helm, ["sharing.consumableShares=memory", "driver.healthPort=6000", "cdiRoot=/etc/cdi"]),
               "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["args"]
    params = _parse("driver", args)
    assert (params["consumable_shares"], params["health_port"], str(params["cdi_root"])) == ("memory", 6000, "/etc/cdi")
    assert params["backend"] == "nvml"
    assert "--pod-uid=$(POD_UID)" in args


@pytest.mark.parametrize("combination", IDS)
def test_exporter_args_parse_with_the_real_cli(helm: Path, combination: str) -> None:
    for objects, container in _first_containers(helm, combination, "Deployment"):
        params = _parse("exporter", container["args"])
        assert params["listen"] == f":{container['ports'][0]['containerPort']}"
        service = one(objects, "Service")
        assert service["spec"]["ports"][0]["targetPort"] == container["ports"][0]["name"]


def test_exporter_follows_the_cluster_release(helm: Path) -> None:
    def version(kube: str, *settings: str) -> list[str]:
        args = one(render(helm, list(settings), kube_version=kube), "Deployment")["spec"]["template"]["spec"][
            "containers"][0]["args"]
        return [a for a in args if a.startswith("--kubernetes-version")]

    assert version("1.35") == ["--kubernetes-version=1.35"]
    assert version("1.33", "resourceApiVersion=v1beta2") == []  # kubedra's gates start at 1.34: its default
    assert version("1.36", "exporter.kubernetesVersion=1.34") == ["--kubernetes-version=1.34"]


# ------------------------------------------------------------------------------------------- security shape

def test_privileged_only_where_needed(helm: Path) -> None:
    objects = render(helm, [])
    driver = one(objects, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    assert driver == {"runAsUser": 0, "privileged": True}
    exporter = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert exporter["securityContext"]["runAsNonRoot"] is True
    assert exporter["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    unprivileged = one(render(helm, ["driver.privileged=false"]), "DaemonSet")
    assert unprivileged["spec"]["template"]["spec"]["containers"][0]["securityContext"] == {
        "runAsUser": 0, "privileged": False, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def test_driver_host_paths_affinity_and_rollout(helm: Path) -> None:
    daemonset = one(render(helm, ["driverRoot=/run/nvidia/driver", "cdiRoot=/etc/cdi"]), "DaemonSet")
    spec = daemonset["spec"]["template"]["spec"]
    paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    assert paths == {"plugins": "/var/lib/kubelet/plugins", "plugins-registry": "/var/lib/kubelet/plugins_registry",
                     "cdi": "/etc/cdi", "driver-root": "/run/nvidia/driver"}
    mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"]}
    assert mounts["driver-root"]["readOnly"] is True
    assert mounts["plugins"]["mountPath"] == "/var/lib/kubelet/plugins"  # the kubelet dials the host path
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0]["key"] for t in terms] == [
        "nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert daemonset["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    assert spec["containers"][0]["livenessProbe"]["grpc"] == {"port": 51516}


def test_rbac_is_deploys_one_source(helm: Path) -> None:
    """The chart's ClusterRoles carry exactly the rules of deploy/driver-rbac.yaml and deploy/rbac.yaml."""
    objects = render(helm, [])
    roles = {r["metadata"]["name"]: r["rules"] for r in by_kind(objects, "ClusterRole")}

    def rules_of(path: Path) -> Any:
        return next(d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "ClusterRole")["rules"]

    assert roles["kubedra-driver"] == rules_of(ROOT / "deploy" / "driver-rbac.yaml")
    assert roles["kubedra-exporter"] == rules_of(ROOT / "deploy" / "rbac.yaml")
    verbs = {v for rule in roles["kubedra-exporter"] for v in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}
    assert all("secrets" not in rule["resources"] for role in roles.values() for rule in role)


# ------------------------------------------------------------------------------------------- one source of truth

LINKED = {
    "files/dra-rules.yaml": ROOT / "deploy" / "prometheus" / "dra-rules.yaml",
    "files/kubedra-dra.json": ROOT / "deploy" / "grafana" / "kubedra-dra.json",
    "files/rbac.yaml": ROOT / "deploy" / "rbac.yaml",
    "files/driver-rbac.yaml": ROOT / "deploy" / "driver-rbac.yaml",
}


@pytest.mark.parametrize("name", list(LINKED))
def test_chart_files_are_links_to_deploy(name: str) -> None:
    path = CHART / name
    assert path.is_symlink(), f"{path} must link to {LINKED[name]}, not copy it"
    assert path.resolve() == LINKED[name].resolve()


def test_packaged_chart_carries_the_linked_files(helm: Path, tmp_path: Path) -> None:
    """helm follows the links when it packages the chart (what a chart repository serves)."""
    import tarfile

    helm_run(helm, "package", str(CHART), "--destination", str(tmp_path))
    (archive,) = tmp_path.glob("kubedra-*.tgz")
    with tarfile.open(archive) as tar:
        for name, source in LINKED.items():
            member = tar.extractfile(f"kubedra/{name}")
            assert member is not None
            assert member.read() == source.read_bytes()


def test_prometheus_rule_and_dashboard_are_deploys(helm: Path) -> None:
    objects = render(helm, ["exporter.prometheusRule.enabled=true", "exporter.serviceMonitor.enabled=true"])
    rule = one(objects, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"] == yaml.safe_load((ROOT / "deploy" / "prometheus" / "dra-rules.yaml").read_text())
    operator = yaml.safe_load((ROOT / "deploy" / "prometheus" / "dra-prometheusrule.yaml").read_text())
    assert rule["spec"] == operator["spec"]
    dashboard = one(objects, "ConfigMap")
    assert json.loads(dashboard["data"]["kubedra-dra.json"]) == json.loads(
        (ROOT / "deploy" / "grafana" / "kubedra-dra.json").read_text())
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    monitor = one(objects, "ServiceMonitor")
    service = one(objects, "Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


# ------------------------------------------------------------------------------------------- refusals

BAD_VALUES = {
    "resourceApiVersion=v2": "at '/resourceApiVersion': value must be one of 'v1', 'v1beta2', 'v1beta1'",
    "sharing.consumableShares=lots": "at '/sharing/consumableShares': 'oneOf' failed, none matched",
    "sharing.consumableShares=0": "at '/sharing/consumableShares': 'oneOf' failed, none matched",
    "sharing.timeSlicing.interval=Forever": "at '/sharing/timeSlicing/interval': value must be one of",
    "driver.enable=true": "at '/driver': additional properties 'enable' not allowed",
    "driver.healthPort=70000": "at '/driver/healthPort': maximum: got 70,000, want 65,535",
    "driver.backend=fake": "at '/driver': additional properties 'backend' not allowed",
    "cdiRoot=var/run/cdi": "at '/cdiRoot': 'var/run/cdi' does not match pattern",
    "image.pullPolicy=Sometimes": "at '/image/pullPolicy': value must be one of",
    "exporter.kubernetesVersion=1.30": "at '/exporter/kubernetesVersion': value must be one of",
    "mig.enabled=yes": "at '/mig/enabled': got string, want boolean",
    "deviceClasses.extendedResourceName=Not A Name": "at '/deviceClasses/extendedResourceName': 'Not A Name' does "
                                                     "not match pattern",
    "shardeing.consumableShares=2": "additional properties 'shardeing' not allowed",
}


@pytest.mark.parametrize("setting", list(BAD_VALUES))
def test_bad_values_are_refused_by_the_schema(helm: Path, setting: str) -> None:
    for command in ("template", "lint"):
        args = [command, *(["kubedra"] if command == "template" else []), str(CHART), "--set", setting]
        result = helm_run(helm, *args, check=False)
        assert result.returncode != 0, (command, setting)
        assert "values don't meet the specifications of the schema" in result.stdout + result.stderr, result.stderr
        assert BAD_VALUES[setting] in result.stdout + result.stderr, result.stdout + result.stderr


GUARDS = {
    ("nvidiaDevicePlugin.enabled=true",): "nvidiaDevicePlugin.enabled is true: the NVIDIA device plugin and kubedra's "
                                          "DRA driver would both offer the same GPUs",
    ("resourceApiVersion=v1beta1", "sharing.consumableShares=2"): "sharing.consumableShares needs consumable "
                                                                  "capacity (Kubernetes 1.34+)",
    ("resourceApiVersion=v1beta2", "deviceClasses.extendedResourceName=nvidia.com/gpu"): "deviceClasses."
        "extendedResourceName exists in resource.k8s.io v1 only",
}


@pytest.mark.parametrize("settings", list(GUARDS), ids=[" ".join(s) for s in GUARDS])
def test_guards_fail_with_a_reason(helm: Path, settings: tuple[str, ...]) -> None:
    result = helm_run(helm, "template", "kubedra", str(CHART), *set_args(list(settings)), check=False)
    assert result.returncode != 0
    assert GUARDS[settings] in result.stderr, result.stderr


def test_the_device_plugin_guard_yields_to_the_override_and_to_driver_off(helm: Path) -> None:
    assert render(helm, ["nvidiaDevicePlugin.enabled=true", "allowBesideDevicePlugin=true"])
    assert not by_kind(render(helm, ["nvidiaDevicePlugin.enabled=true", "driver.enabled=false"]), "DaemonSet")
