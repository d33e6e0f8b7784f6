"""The DeviceClasses NVIDIA's DRA driver chart installs (``deployments/helm/.../templates/deviceclass-*.yaml``).

Rendered for ``resource.k8s.io/v1``, where the GPU class also carries ``extendedResourceName:
nvidia.com/gpu`` (KEP-5004), so a pod asking ``nvidia.com/gpu: 1`` is served by DRA on nodes without a
device plugin. The compute-domain classes are left out: kubedra simulates no ComputeDomains.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubedra.objects.model import CELDeviceSelector, DeviceClass, DeviceClassSpec, DeviceSelector, ObjectMeta

GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
VFIO_CLASS = "vfio.gpu.nvidia.com"
GPU_EXTENDED_RESOURCE = "nvidia.com/gpu"


def _selector(device_type: str) -> list[DeviceSelector]:
    expression = f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{device_type}'"
    return [DeviceSelector(cel=CELDeviceSelector(expression=expression))]


def default_device_classes() -> list[DeviceClass]:
    """Fresh copies of the chart's classes, in the order the chart's templates sort (gpu, mig, vfio)."""
    return [
        DeviceClass(
            metadata=ObjectMeta(name=GPU_CLASS),
            spec=DeviceClassSpec(selectors=_selector("gpu"), extended_resource_name=GPU_EXTENDED_RESOURCE),
        ),
        DeviceClass(metadata=ObjectMeta(name=MIG_CLASS), spec=DeviceClassSpec(selectors=_selector("mig"))),
        DeviceClass(metadata=ObjectMeta(name=VFIO_CLASS), spec=DeviceClassSpec(selectors=_selector("vfio"))),
    ]


# Classes a cluster has without them being among the inputs: what NVIDIA's DRA driver chart installs (its
# templates/deviceclass-*.yaml: gpu, mig and vfio with resources.gpus.enabled, the compute-domain ones with
# resources.computeDomains.enabled; imex.nvidia.com in the chart from September 2024 to February 2025, before the
# compute-domain classes replaced it) and kubedra's own chart (deploy/helm/kubedra/templates/deviceclasses.yaml).
INSTALLED_CLASSES: dict[str, str] = {
    GPU_CLASS: "NVIDIA's chart",
    MIG_CLASS: "NVIDIA's chart",
    VFIO_CLASS: "NVIDIA's chart",
    "compute-domain-daemon.nvidia.com": "NVIDIA's chart (compute domains)",
    "compute-domain-default-channel.nvidia.com": "NVIDIA's chart (compute domains)",
    "imex.nvidia.com": "NVIDIA's chart before v25.3 (IMEX channels)",
    "gpu.shared.nvidia.com": "kubedra's chart",
}


def merge_device_classes(defaults: Iterable[DeviceClass], user: Iterable[DeviceClass]) -> list[DeviceClass]:
    """Defaults first, each replaced by a user class of the same name; then the user's other classes in their order.

    A user class replaces a default whole (as ``kubectl apply`` of a full object would), so a user class that
    omits ``extendedResourceName`` switches DRA-served ``nvidia.com/gpu`` off, exactly as on a cluster.
    """
    user_by_name: dict[str, DeviceClass] = {}
    for cls in user:
        user_by_name[cls.metadata.name] = cls  # a later document wins, as a later apply would
    merged = [user_by_name.pop(cls.metadata.name, cls) for cls in defaults]
    merged.extend(user_by_name.values())
    return merged
