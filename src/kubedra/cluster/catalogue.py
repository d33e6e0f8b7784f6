"""Built-in catalogue of real NVIDIA GPU models, so a NodePool can say ``model: A100-40GB``.

Each entry carries what NVIDIA's DRA driver reads from NVML and publishes (gpu-drivers.md §1.2-1.3):
``productName`` exactly as ``nvmlDeviceGetName`` returns it, ``brand`` and ``architecture`` as go-nvlib
spells them (``Nvidia``, ``Ampere``, ``Ada Lovelace``), the CUDA compute capability, the SM count, the
total memory as ``nvidia-smi --query-gpu=memory.total`` reports it (MiB), and for MIG-capable models
the GPU-instance profiles with their NVML profile IDs (the ``ID`` column of ``nvidia-smi mig -lgip``),
SM/engine counts, memory and placements (``nvidia-smi mig -lgipp``).

Sources: NVIDIA MIG user guide (supported profiles), published ``nvidia-smi`` outputs, go-nvml's mock
GPUs. Facts not confirmed from a real device are named in ``GpuModel.estimated``: H200 and B200 MIG
memory sizes are scaled from H100's, B200 MIG SM counts assume 18 SMs per slice and its decoder/JPEG
counts follow H100's pattern (the guide's B200 table lists 1 of each for every profile), H100 PCIe MIG SM
counts are scaled from H100 SXM's, and V100-32GB total memory varies by driver (32510-32768 MiB).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Placements (start, size) in memory slices, identical on every 7-compute/8-memory-slice GPU
# (A100, H100, H200, B200), from ``nvidia-smi mig -lgipp``.
_ONE_SLICE = tuple((start, 1) for start in range(7))
_ONE_G_TWO_SLICES = ((0, 2), (2, 2), (4, 2), (6, 2))
_TWO_G = ((0, 2), (2, 2), (4, 2))
_THREE_G = ((0, 4), (4, 4))
_FOUR_G = ((0, 4),)
_SEVEN_G = ((0, 8),)


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One GPU-instance profile (with its full compute instance) and where it may be placed."""

    name: str  # "1g.5gb", "1g.5gb+me"
    profile_id: int  # NVML GPU-instance profile ID, e.g. 19 for 1g.5gb
    memory_mib: int
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    placements: tuple[tuple[int, int], ...]  # (start, size) in memory slices


@dataclass(frozen=True, slots=True)
class GpuModel:
    """A GPU model as NVML describes it."""

    name: str  # kubedra's short name, e.g. "A100-40GB"
    product_name: str  # nvmlDeviceGetName, e.g. "NVIDIA A100-SXM4-40GB"
    brand: str  # go-nvlib GetBrandAsString
    architecture: str  # go-nvlib GetArchitectureAsString
    compute_capability: str  # "8.0"
    memory_mib: int  # total memory as nvidia-smi reports it
    multiprocessors: int
    mig_profiles: tuple[MigProfile, ...] = ()
    aliases: tuple[str, ...] = ()
    estimated: tuple[str, ...] = field(default=())

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * 1024 * 1024

    @property
    def mig_toggle_without_reset(self) -> bool:
        """Hopper and newer switch MIG mode without a GPU reset, so NVIDIA's driver also offers the full GPU."""
        return self.architecture in ("Hopper", "Blackwell")

    @property
    def memory_slices(self) -> int:
        """Memory-slice count: the largest placement size, as NVIDIA's driver infers it."""
        return max((size for p in self.mig_profiles for _, size in p.placements), default=0)


def _mig(
    name: str, pid: int, mib: int, units: tuple[int, int, int, int, int], placements: tuple[tuple[int, int], ...]
) -> MigProfile:
    """``units``: (SMs, copy engines, decoders, JPEG engines, OFA engines); no MIG profile has an encoder."""
    sms, ce, dec, jpeg, ofa = units
    return MigProfile(name, pid, mib, sms, ce, dec, 0, jpeg, ofa, placements)


_A100_40GB_MIG = (
    _mig("1g.5gb", 19, 4864, (14, 1, 0, 0, 0), _ONE_SLICE),
    _mig("1g.5gb+me", 20, 4864, (14, 1, 1, 1, 1), _ONE_SLICE),
    _mig("1g.10gb", 15, 9856, (14, 1, 1, 0, 0), _ONE_G_TWO_SLICES),
    _mig("2g.10gb", 14, 9856, (28, 2, 1, 0, 0), _TWO_G),
    _mig("3g.20gb", 9, 19968, (42, 3, 2, 0, 0), _THREE_G),
    _mig("4g.20gb", 5, 19968, (56, 4, 2, 0, 0), _FOUR_G),
    _mig("7g.40gb", 0, 40192, (98, 7, 5, 1, 1), _SEVEN_G),
)
_A100_80GB_MIG = (
    _mig("1g.10gb", 19, 9728, (14, 1, 0, 0, 0), _ONE_SLICE),
    _mig("1g.10gb+me", 20, 9728, (14, 1, 1, 1, 1), _ONE_SLICE),
    _mig("1g.20gb", 15, 19968, (14, 1, 1, 0, 0), _ONE_G_TWO_SLICES),
    _mig("2g.20gb", 14, 19968, (28, 2, 1, 0, 0), _TWO_G),
    _mig("3g.40gb", 9, 40192, (42, 3, 2, 0, 0), _THREE_G),
    _mig("4g.40gb", 5, 40192, (56, 4, 2, 0, 0), _FOUR_G),
    _mig("7g.80gb", 0, 80896, (98, 7, 5, 1, 1), _SEVEN_G),
)
_H100_80GB_MIG = (
    _mig("1g.10gb", 19, 9984, (16, 1, 1, 1, 0), _ONE_SLICE),
    _mig("1g.10gb+me", 20, 9984, (16, 1, 1, 1, 1), _ONE_SLICE),
    _mig("1g.20gb", 15, 20096, (26, 1, 1, 1, 0), _ONE_G_TWO_SLICES),
    _mig("2g.20gb", 14, 20096, (32, 2, 2, 2, 0), _TWO_G),
    _mig("3g.40gb", 9, 40448, (60, 3, 3, 3, 0), _THREE_G),
    _mig("4g.40gb", 5, 40448, (64, 4, 4, 4, 0), _FOUR_G),
    _mig("7g.80gb", 0, 81152, (132, 8, 7, 7, 1), _SEVEN_G),
)
_H100_PCIE_MIG = (
    _mig("1g.10gb", 19, 9984, (14, 1, 1, 1, 0), _ONE_SLICE),
    _mig("1g.10gb+me", 20, 9984, (14, 1, 1, 1, 1), _ONE_SLICE),
    _mig("1g.20gb", 15, 20096, (22, 1, 1, 1, 0), _ONE_G_TWO_SLICES),
    _mig("2g.20gb", 14, 20096, (28, 2, 2, 2, 0), _TWO_G),
    _mig("3g.40gb", 9, 40448, (52, 3, 3, 3, 0), _THREE_G),
    _mig("4g.40gb", 5, 40448, (56, 4, 4, 4, 0), _FOUR_G),
    _mig("7g.80gb", 0, 81152, (114, 8, 7, 7, 1), _SEVEN_G),
)
_H200_MIG = (
    _mig("1g.18gb", 19, 17600, (16, 1, 1, 1, 0), _ONE_SLICE),
    _mig("1g.18gb+me", 20, 17600, (16, 1, 1, 1, 1), _ONE_SLICE),
    _mig("1g.35gb", 15, 35456, (26, 1, 1, 1, 0), _ONE_G_TWO_SLICES),
    _mig("2g.35gb", 14, 35456, (32, 2, 2, 2, 0), _TWO_G),
    _mig("3g.71gb", 9, 71296, (60, 3, 3, 3, 0), _THREE_G),
    _mig("4g.71gb", 5, 71296, (64, 4, 4, 4, 0), _FOUR_G),
    _mig("7g.141gb", 0, 143040, (132, 8, 7, 7, 1), _SEVEN_G),
)
_B200_MIG = (
    _mig("1g.23gb", 19, 22400, (18, 2, 1, 1, 0), _ONE_SLICE),
    _mig("1g.23gb+me", 20, 22400, (18, 2, 1, 1, 1), _ONE_SLICE),
    _mig("1g.45gb", 15, 45184, (18, 2, 1, 1, 0), _ONE_G_TWO_SLICES),
    _mig("2g.45gb", 14, 45184, (36, 3, 2, 2, 0), _TWO_G),
    _mig("3g.90gb", 9, 90880, (54, 6, 3, 3, 0), _THREE_G),
    _mig("4g.90gb", 5, 90880, (72, 8, 4, 4, 0), _FOUR_G),
    _mig("7g.180gb", 0, 182400, (144, 16, 7, 7, 1), _SEVEN_G),
)

MODELS: tuple[GpuModel, ...] = (
    GpuModel("T4", "Tesla T4", "Nvidia", "Turing", "7.5", 15360, 40, aliases=("TESLA-T4",)),
    GpuModel("A10", "NVIDIA A10", "Nvidia", "Ampere", "8.6", 23028, 72),
    GpuModel("L4", "NVIDIA L4", "Nvidia", "Ada Lovelace", "8.9", 23034, 58),
    GpuModel("L40S", "NVIDIA L40S", "Nvidia", "Ada Lovelace", "8.9", 46068, 142),
    GpuModel(
        "V100-16GB", "Tesla V100-SXM2-16GB", "Nvidia", "Volta", "7.0", 16160, 80, aliases=("V100", "V100-SXM2-16GB")
    ),
    GpuModel(
        "V100-32GB",
        "Tesla V100-SXM2-32GB",
        "Nvidia",
        "Volta",
        "7.0",
        32768,
        80,
        aliases=("V100-SXM2-32GB",),
        estimated=("memory",),
    ),
    GpuModel(
        "A100-40GB",
        "NVIDIA A100-SXM4-40GB",
        "Nvidia",
        "Ampere",
        "8.0",
        40960,
        108,
        _A100_40GB_MIG,
        aliases=("A100", "A100-SXM4-40GB"),
    ),
    GpuModel("A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB", "Nvidia", "Ampere", "8.0", 40960, 108, _A100_40GB_MIG),
    GpuModel(
        "A100-80GB",
        "NVIDIA A100-SXM4-80GB",
        "Nvidia",
        "Ampere",
        "8.0",
        81920,
        108,
        _A100_80GB_MIG,
        aliases=("A100-SXM4-80GB",),
    ),
    GpuModel(
        "A100-PCIE-80GB",
        "NVIDIA A100 80GB PCIe",
        "Nvidia",
        "Ampere",
        "8.0",
        81920,
        108,
        _A100_80GB_MIG,
        aliases=("A100-80GB-PCIE",),
    ),
    GpuModel(
        "H100-80GB",
        "NVIDIA H100 80GB HBM3",
        "Nvidia",
        "Hopper",
        "9.0",
        81559,
        132,
        _H100_80GB_MIG,
        aliases=("H100", "H100-SXM", "H100-SXM5-80GB"),
    ),
    GpuModel(
        "H100-PCIE",
        "NVIDIA H100 PCIe",
        "Nvidia",
        "Hopper",
        "9.0",
        81559,
        114,
        _H100_PCIE_MIG,
        aliases=("H100-PCIE-80GB",),
        estimated=("mig multiprocessors",),
    ),
    GpuModel(
        "H200-141GB",
        "NVIDIA H200",
        "Nvidia",
        "Hopper",
        "9.0",
        143771,
        132,
        _H200_MIG,
        aliases=("H200",),
        estimated=("mig memory",),
    ),
    GpuModel(
        "B200",
        "NVIDIA B200",
        "Nvidia",
        "Blackwell",
        "10.0",
        183359,
        148,
        _B200_MIG,
        aliases=("B200-180GB",),
        estimated=("mig memory", "mig multiprocessors", "mig decoders and jpeg engines"),
    ),
)


class UnknownGpuModelError(LookupError):
    """A model name the catalogue does not know; the message lists the known names."""


def _index() -> dict[str, GpuModel]:
    index: dict[str, GpuModel] = {}
    for model in MODELS:
        for key in (model.name, *model.aliases, model.product_name):
            index[key.upper()] = model
    return index


_INDEX = _index()  # built once at import, never mutated


def known_names() -> list[str]:
    """Short names of every catalogued model, in catalogue order."""
    return [m.name for m in MODELS]


def lookup(name: str) -> GpuModel:
    """The model with this short name, alias or NVML product name (case-insensitive)."""
    model = _INDEX.get(name.strip().upper())
    if model is None:
        raise UnknownGpuModelError(f"unknown GPU model {name!r}; known models: {', '.join(known_names())}")
    return model
