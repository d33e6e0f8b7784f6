"""What a GPU node offers besides its GPUs, when a NodePool does not say: a documented default per GPU model.

A NodePool that names no ``spec.allocatable`` would otherwise publish no cpu and no memory, and every pod asking for
them (all real pods do) would pend with "Insufficient cpu". Instead its nodes get the host of a public cloud instance
built around that GPU, per GPU: ``cpu`` and ``memory`` are the reference instance's vCPUs and memory divided by its GPU
count and multiplied by the pool's (``pods`` stays 110, kubelet's default). The figures are the providers' published
instance shapes (capacity, no system reservations); those marked ``estimated`` have no exact instance of that GPU
and borrow the nearest. ``simulate`` says so in a note naming the pool and the shape; a pool with ``allocatable`` of
its own, or without a GPU, is left as written.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HostShape:
    instance: str  # the reference instance, as its provider names it
    gpus: int
    vcpus: int
    memory_gib: int
    estimated: bool = False

    def allocatable(self, gpus: int) -> dict[str, str]:
        """cpu and memory for a node of ``gpus`` such GPUs (at least one GPU's share)."""
        share = max(gpus, 1)
        return {"cpu": str(self.vcpus * share // self.gpus), "memory": f"{self.memory_gib * share // self.gpus}Gi"}


# kubedra's GPU model names (cluster/catalogue.py) -> the cloud instance whose host the default copies.
SHAPES: dict[str, HostShape] = {
    "T4": HostShape("AWS g4dn.metal", 8, 96, 384),
    "A10": HostShape("OCI BM.GPU.A10.4", 4, 128, 1024, estimated=True),
    "L4": HostShape("AWS g6.48xlarge", 8, 192, 768),
    "L40S": HostShape("AWS g6e.48xlarge", 8, 192, 1536),
    "V100-16GB": HostShape("AWS p3.16xlarge", 8, 64, 488),
    "V100-32GB": HostShape("AWS p3dn.24xlarge", 8, 96, 768),
    "A100-40GB": HostShape("AWS p4d.24xlarge", 8, 96, 1152),
    "A100-80GB": HostShape("AWS p4de.24xlarge", 8, 96, 1152),
    "A100-PCIE-40GB": HostShape("Azure Standard_NC96ads_A100_v4", 4, 96, 880, estimated=True),
    "A100-PCIE-80GB": HostShape("Azure Standard_NC96ads_A100_v4", 4, 96, 880),
    "H100-80GB": HostShape("AWS p5.48xlarge", 8, 192, 2048),
    "H100-PCIE": HostShape("Azure Standard_NC96ads_A100_v4", 4, 96, 880, estimated=True),
    "H200-141GB": HostShape("AWS p5e.48xlarge", 8, 192, 2048),
    "B200": HostShape("AWS p6-b200.48xlarge", 8, 192, 2048),
}


def default_shape(model: str) -> HostShape | None:
    return SHAPES.get(model)


def note(pool: str, model: str, gpus: int, shape: HostShape) -> str:
    given = shape.allocatable(gpus)
    near = "the nearest public shape, " if shape.estimated else ""
    return (f"NodePool {pool} names no spec.allocatable: each node offers {given['cpu']} cpu and {given['memory']} "
            f"memory, {near}{shape.instance}'s host ({shape.vcpus} vCPUs, {shape.memory_gib}Gi for {shape.gpus} "
            f"GPUs) scaled to its {gpus} {model} GPUs (docs: NodePool defaults); set spec.allocatable to your "
            "nodes' own")
