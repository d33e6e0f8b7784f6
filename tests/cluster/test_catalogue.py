"""The GPU catalogue: facts for real models, MIG layouts that fit their GPU, lookups and their errors."""

from __future__ import annotations

import pytest

from kubedra.cluster import catalogue
from kubedra.cluster.catalogue import UnknownGpuModelError, lookup


def test_required_models_are_catalogued() -> None:
    for name in (
        "T4",
        "A10",
        "L4",
        "L40S",
        "V100-16GB",
        "V100-32GB",
        "A100-40GB",
        "A100-PCIE-40GB",
        "A100-80GB",
        "H100-80GB",
        "H100-PCIE",
        "H200-141GB",
        "B200",
    ):
        assert lookup(name).name == name


@pytest.mark.parametrize(
    ("name", "product", "arch", "cc", "mib", "sms"),
    [
        ("T4", "Tesla T4", "Turing", "7.5", 15360, 40),
        ("V100-16GB", "Tesla V100-SXM2-16GB", "Volta", "7.0", 16160, 80),
        ("A10", "NVIDIA A10", "Ampere", "8.6", 23028, 72),
        ("L4", "NVIDIA L4", "Ada Lovelace", "8.9", 23034, 58),
        ("L40S", "NVIDIA L40S", "Ada Lovelace", "8.9", 46068, 142),
        ("A100-40GB", "NVIDIA A100-SXM4-40GB", "Ampere", "8.0", 40960, 108),
        ("A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB", "Ampere", "8.0", 40960, 108),
        ("A100-80GB", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0", 81920, 108),
        ("H100-80GB", "NVIDIA H100 80GB HBM3", "Hopper", "9.0", 81559, 132),
        ("H100-PCIE", "NVIDIA H100 PCIe", "Hopper", "9.0", 81559, 114),
        ("H200-141GB", "NVIDIA H200", "Hopper", "9.0", 143771, 132),
        ("B200", "NVIDIA B200", "Blackwell", "10.0", 183359, 148),
    ],
)
def test_model_facts(name: str, product: str, arch: str, cc: str, mib: int, sms: int) -> None:
    model = lookup(name)
    assert (model.product_name, model.architecture, model.compute_capability) == (product, arch, cc)
    assert (model.memory_mib, model.multiprocessors, model.brand) == (mib, sms, "Nvidia")
    assert model.memory_bytes == mib * 1024 * 1024


def test_a100_40gb_mig_profiles_match_the_mig_user_guide() -> None:
    profiles = {p.name: p for p in lookup("A100-40GB").mig_profiles}
    assert list(profiles) == ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    expected = {  # name: (profile ID, MiB, SMs, copy engines, decoders, instances)
        "1g.5gb": (19, 4864, 14, 1, 0, 7),
        "1g.5gb+me": (20, 4864, 14, 1, 1, 7),
        "1g.10gb": (15, 9856, 14, 1, 1, 4),
        "2g.10gb": (14, 9856, 28, 2, 1, 3),
        "3g.20gb": (9, 19968, 42, 3, 2, 2),
        "4g.20gb": (5, 19968, 56, 4, 2, 1),
        "7g.40gb": (0, 40192, 98, 7, 5, 1),
    }
    for name, (pid, mib, sms, ce, dec, count) in expected.items():
        p = profiles[name]
        assert (p.profile_id, p.memory_mib, p.multiprocessors, p.copy_engines, p.decoders, len(p.placements)) == (
            pid,
            mib,
            sms,
            ce,
            dec,
            count,
        )
    assert profiles["3g.20gb"].placements == ((0, 4), (4, 4))
    assert profiles["7g.40gb"].placements == ((0, 8),)
    assert profiles["1g.5gb+me"].ofa_engines == 1


def test_h100_mig_profiles() -> None:
    profiles = {p.name: p for p in lookup("H100").mig_profiles}
    assert profiles["1g.10gb"].multiprocessors == 16
    assert profiles["1g.20gb"].multiprocessors == 26
    assert profiles["3g.40gb"].multiprocessors == 60
    assert profiles["7g.80gb"].multiprocessors == 132
    assert profiles["7g.80gb"].copy_engines == 8


def test_non_mig_models_have_no_profiles() -> None:
    for name in ("T4", "A10", "L4", "L40S", "V100-16GB", "V100-32GB"):
        assert not lookup(name).mig_capable
        assert lookup(name).memory_slices == 0


@pytest.mark.parametrize("model", [m for m in catalogue.MODELS if m.mig_capable], ids=lambda m: m.name)
def test_mig_layouts_fit_their_gpu(model: catalogue.GpuModel) -> None:
    assert model.memory_slices == 8
    ids = [p.profile_id for p in model.mig_profiles]
    assert len(ids) == len(set(ids))
    for p in model.mig_profiles:
        assert p.memory_mib <= model.memory_mib
        assert p.multiprocessors <= model.multiprocessors
        compute_slices = int(p.name.split("g.")[0])
        assert p.name.endswith(("gb", "gb+me"))
        assert 1 <= compute_slices <= 7
        for start, size in p.placements:
            assert start >= 0
            assert start + size <= model.memory_slices
        starts = [s for s, _ in p.placements]
        assert starts == sorted(set(starts))
    # the biggest profile takes the whole GPU
    assert max(p.memory_mib for p in model.mig_profiles) == next(
        p.memory_mib for p in model.mig_profiles if p.profile_id == 0
    )


def test_mig_toggle_without_reset_is_hopper_and_newer() -> None:
    assert not lookup("A100-40GB").mig_toggle_without_reset
    assert lookup("H100-80GB").mig_toggle_without_reset
    assert lookup("B200").mig_toggle_without_reset


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("a100", "A100-40GB"),
        ("h100", "H100-80GB"),
        (" h100-sxm ", "H100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("tesla t4", "T4"),
        ("V100", "V100-16GB"),
        ("h200", "H200-141GB"),
    ],
)
def test_lookup_is_case_insensitive_with_aliases(alias: str, name: str) -> None:
    assert lookup(alias).name == name


def test_unknown_model_lists_known_names() -> None:
    with pytest.raises(UnknownGpuModelError) as err:
        lookup("A200")
    message = str(err.value)
    assert message.startswith("unknown GPU model 'A200'; known models: T4, A10, L4, L40S")
    for name in catalogue.known_names():
        assert name in message


def test_estimates_are_named() -> None:
    assert "mig memory" in lookup("H200").estimated
    assert lookup("A100-40GB").estimated == ()
