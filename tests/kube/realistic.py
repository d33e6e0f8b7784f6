"""Nodes and Pods shaped as a production API server returns them, with what the kubelet, the controllers and the
scheduler write (no kubelet runs in the test control plane, so its objects are much smaller than real ones):
managedFields of every writer, a GPU node's labels from GPU feature discovery, its images, conditions and node info;
a pod's projected service-account volume, env, probes, container statuses and conditions. Sizes (JSON): a node
about 14 kB, a pod about 7 kB, in the range GPU nodes and inference pods of real clusters weigh (nodes with more
images weigh more). Plus
the DRA objects around them (a slice of 8 GPUs per node, a class, one allocated claim per pod), so an exporter can
run over them."""

from __future__ import annotations

import hashlib
from typing import Any

DRIVER = "gpu.nvidia.com"
TIME = "2026-11-30T08:15:42Z"


def _sha(i: int, salt: str) -> str:
    return hashlib.sha256(f"{salt}/{i}".encode()).hexdigest()


def _fields(keys: list[str]) -> dict[str, Any]:
    """A fieldsV1 tree naming ``keys`` (dotted paths), as server-side apply records them."""
    tree: dict[str, Any] = {}
    for key in keys:
        node = tree
        for part in key.split("."):
            node = node.setdefault(f"f:{part}", {})
        node["."] = {}
    return tree


def node(i: int) -> dict[str, Any]:
    name = f"gpu-node-{i:05d}"
    labels = {
        "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": "p5.48xlarge", "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": f"us-east-1{'abc'[i % 3]}", "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559",
        "nvidia.com/gpu.count": "8", "nvidia.com/gpu.family": "hopper", "nvidia.com/cuda.driver.major": "570",
        "nvidia.com/cuda.driver.minor": "124", "nvidia.com/cuda.runtime.major": "12", "nvidia.com/mig.capable": "true",
        "feature.node.kubernetes.io/pci-10de.present": "true", "feature.node.kubernetes.io/kernel-version.full":
        "6.8.0-1021-aws", "eks.amazonaws.com/nodegroup": "gpu-h100", "karpenter.sh/capacity-type": "on-demand",
    }
    images = [{"names": [f"registry.example/team-{j % 7}/image-{j}@sha256:{_sha(j, 'img')}",
                         f"registry.example/team-{j % 7}/image-{j}:v1.{j}.{i % 5}"],
               "sizeBytes": 100_000_000 + j * 7_654_321} for j in range(45)]
    conditions = [{"type": kind, "status": "False", "lastHeartbeatTime": TIME, "lastTransitionTime": TIME,
                   "reason": f"Kubelet{reason}", "message": f"kubelet has {message}"}
                  for kind, reason, message in (("MemoryPressure", "HasSufficientMemory", "sufficient memory available"),
                                                ("DiskPressure", "HasNoDiskPressure", "no disk pressure"),
                                                ("PIDPressure", "HasSufficientPID", "sufficient PID available"))]
    conditions.append({"type": "Ready", "status": "True", "lastHeartbeatTime": TIME, "lastTransitionTime": TIME,
                       "reason": "KubeletReady", "message": "kubelet is posting ready status"})
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name, "uid": f"{_sha(i, 'node')[:8]}-0000-4000-8000-{_sha(i, 'n')[:12]}",
            "resourceVersion": str(1_000_000 + i), "creationTimestamp": TIME, "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                            "csi.volume.kubernetes.io/nodeid": f'{{"ebs.csi.aws.com":"i-{_sha(i, "id")[:17]}"}}',
                            "nfd.node.kubernetes.io/feature-labels": ",".join(f"cpu-cpuid.AVX{k}" for k in range(30))},
            "managedFields": [
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": TIME,
                 "fieldsType": "FieldsV1", "fieldsV1": _fields([f"metadata.labels.{k}" for k in list(labels)[:6]])},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": TIME,
                 "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": _fields(["status.allocatable", "status.capacity", "status.conditions", "status.images",
                                      "status.nodeInfo", "status.daemonEndpoints", "status.addresses",
                                      "status.runtimeHandlers", "status.features"])},
                {"manager": "nfd-worker", "operation": "Update", "apiVersion": "v1", "time": TIME,
                 "fieldsType": "FieldsV1", "fieldsV1": _fields([f"metadata.labels.{k}" for k in list(labels)[6:]])},
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": TIME,
                 "fieldsType": "FieldsV1", "fieldsV1": _fields(["spec.podCIDR", "spec.podCIDRs",
                                                                "metadata.annotations.node.alpha.kubernetes.io/ttl"])},
            ],
        },
        "spec": {"podCIDR": f"10.{i // 256}.{i % 256}.0/24", "podCIDRs": [f"10.{i // 256}.{i % 256}.0/24"],
                 "providerID": f"aws:///us-east-1a/i-{_sha(i, 'id')[:17]}",
                 "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "192", "memory": "2097152Mi", "pods": "110", "ephemeral-storage": "3750Gi",
                         "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
            "allocatable": {"cpu": "191450m", "memory": "2080000Mi", "pods": "110", "ephemeral-storage": "3450Gi",
                            "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": f"10.200.{i // 256}.{i % 256}"},
                          {"type": "Hostname", "address": name}, {"type": "InternalDNS", "address": f"{name}.ec2"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": _sha(i, "m")[:32], "systemUUID": _sha(i, "u")[:36], "bootID": _sha(i, "b")[:36],
                         "kernelVersion": "6.8.0-1021-aws", "osImage": "Ubuntu 22.04.5 LTS",
                         "containerRuntimeVersion": "containerd://2.0.5", "kubeletVersion": "v1.37.2",
                         "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
            "images": images,
            "runtimeHandlers": [{"name": h, "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}}
                                for h in ("nvidia", "runc", "")],
            "features": {"supplementalGroupsPolicy": True},
        },
    }


def gpu_slice(i: int) -> dict[str, Any]:
    name = f"gpu-node-{i:05d}"
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{DRIVER}", "resourceVersion": str(2_000_000 + i)},
        "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": f"gpu-{g}", "attributes": {"type": {"string": "gpu"}, "index": {"int": g},
                                                                 "productName": {"string": "NVIDIA H100 80GB HBM3"}},
                              "capacity": {"memory": {"value": "80Gi"}}} for g in range(8)]},
    }


def device_class() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}


def pod(i: int, nodes: int) -> dict[str, Any]:
    """Pod ``i`` of a Deployment, bound to node ``i % nodes``, holding claim ``i`` (allocated: see :func:`claim`)."""
    name, namespace = f"infer-7d9f8b6c5d-{i:06d}", f"team-{i % 13}"
    node_name = f"gpu-node-{i % nodes:05d}"
    env = [{"name": f"SETTING_{k}", "value": f"value-{k}-{i}"} for k in range(10)]
    env.append({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}})
    probe = {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 10,
             "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    mounts = [{"name": "model-cache", "mountPath": "/models"}, {"name": "config", "mountPath": "/etc/app"},
              {"name": "kube-api-access-x7k2p", "readOnly": True,
               "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    main = {"name": "server", "image": "registry.example/ml/infer:2.4.1", "command": ["/bin/server"],
            "args": ["--port=8080", "--model=/models/llama", "--max-batch=32"],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}], "env": env,
            "resources": {"limits": {"memory": "64Gi"}, "requests": {"cpu": "8", "memory": "64Gi"},
                          "claims": [{"name": "gpu"}]},
            "volumeMounts": mounts, "livenessProbe": probe, "readinessProbe": probe,
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent", "securityContext": {"allowPrivilegeEscalation": False,
                                                                   "capabilities": {"drop": ["ALL"]}}}
    sidecar = {"name": "metrics", "image": "registry.example/ops/metrics-agent:0.9.3",
               "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
               "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}, "volumeMounts": mounts[2:],
               "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
               "imagePullPolicy": "IfNotPresent"}
    statuses = [{"name": c["name"], "state": {"running": {"startedAt": TIME}}, "lastState": {}, "ready": True,
                 "restartCount": 0, "image": c["image"], "imageID": f"{c['image'].split(':')[0]}@sha256:{_sha(i, c['name'])}",
                 "containerID": f"containerd://{_sha(i, 'c' + c['name'])}", "started": True,
                 "volumeMounts": [{"name": m["name"], "mountPath": m["mountPath"]} for m in c["volumeMounts"]]}
                for c in (main, sidecar)]
    conditions = [{"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": TIME}
                  for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "generateName": "infer-7d9f8b6c5d-", "namespace": namespace,
            "uid": f"{_sha(i, 'pod')[:8]}-0000-4000-8000-{_sha(i, 'p')[:12]}", "resourceVersion": str(3_000_000 + i),
            "creationTimestamp": TIME, "labels": {"app.kubernetes.io/name": "infer", "pod-template-hash": "7d9f8b6c5d",
                                                  "team": namespace},
            "annotations": {"kubectl.kubernetes.io/restartedAt": TIME, "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "infer-7d9f8b6c5d",
                                 "uid": _sha(0, "rs")[:36], "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": TIME,
                 "fieldsType": "FieldsV1", "fieldsV1": _fields(["metadata.generateName", "metadata.labels",
                                                                "metadata.ownerReferences", "spec.containers",
                                                                "spec.volumes", "spec.resourceClaims"])},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": TIME,
                 "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": _fields(["status.conditions", "status.containerStatuses", "status.hostIP",
                                      "status.hostIPs", "status.phase", "status.podIP", "status.podIPs",
                                      "status.startTime"])},
                {"manager": "kube-scheduler", "operation": "Update", "apiVersion": "v1", "time": TIME,
                 "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": _fields(["status.conditions", "status.resourceClaimStatuses"])},
            ],
        },
        "spec": {
            "volumes": [{"name": "model-cache", "emptyDir": {"sizeLimit": "100Gi"}},
                        {"name": "config", "configMap": {"name": "infer-config", "defaultMode": 420}},
                        {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "containers": [main, sidecar],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "infer", "serviceAccount": "infer", "nodeName": node_name,
            "securityContext": {"runAsNonRoot": True, "fsGroup": 1000}, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running", "conditions": conditions, "hostIP": f"10.200.0.{i % 250}",
            "hostIPs": [{"ip": f"10.200.0.{i % 250}"}], "podIP": f"10.1.{i // 250 % 250}.{i % 250}",
            "podIPs": [{"ip": f"10.1.{i // 250 % 250}.{i % 250}"}], "startTime": TIME,
            "containerStatuses": statuses, "qosClass": "Burstable",
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"{name}-gpu-abcde"}],
        },
    }


def claim(i: int, nodes: int) -> dict[str, Any]:
    """Pod ``i``'s claim, allocated a GPU of its node (GPU ``i // nodes % 8``)."""
    pod_name, namespace = f"infer-7d9f8b6c5d-{i:06d}", f"team-{i % 13}"
    pod_document = pod(i, nodes)
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"{pod_name}-gpu-abcde", "namespace": namespace, "uid": _sha(i, "claim")[:36],
                     "resourceVersion": str(4_000_000 + i),
                     "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name,
                                          "uid": pod_document["metadata"]["uid"], "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
        "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER,
                                                           "pool": f"gpu-node-{i % nodes:05d}",
                                                           "device": f"gpu-{i // nodes % 8}"}]},
                                  "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                      {"key": "metadata.name", "operator": "In",
                                       "values": [f"gpu-node-{i % nodes:05d}"]}]}]}},
                   "reservedFor": [{"resource": "pods", "name": pod_name, "uid": pod_document["metadata"]["uid"]}]},
    }


def template() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "team-0"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}}


def documents(kind: str, nodes: int, pods: int) -> list[dict[str, Any]]:
    """The documents of one kind of the cluster :func:`cluster` describes."""
    assert pods <= 8 * nodes
    build = {
        "Node": lambda: [node(i) for i in range(nodes)],
        "DeviceClass": lambda: [device_class()],
        "ResourceSlice": lambda: [gpu_slice(i) for i in range(nodes)],
        "DeviceTaintRule": list,
        "ResourceClaimTemplate": lambda: [template()],
        "ResourceClaim": lambda: [claim(i, nodes) for i in range(pods)],
        "Pod": lambda: [pod(i, nodes) for i in range(pods)],
    }[kind]
    return build()


def cluster(nodes: int, pods: int) -> dict[str, list[dict[str, Any]]]:
    """Documents by kind: ``nodes`` GPU nodes with their slices, ``pods`` pods (at most 8 per node) with claims."""
    kinds = ("Node", "DeviceClass", "ResourceSlice", "DeviceTaintRule", "ResourceClaimTemplate", "ResourceClaim", "Pod")
    return {kind: documents(kind, nodes, pods) for kind in kinds}
