"""Huge extended-resource amounts (``nvidia.com/gpu: 1e30``, ``"1e19"``, ``"9223372036854775808"``).

The API server's integer test is Go's ``MilliValue() % 1000 != 0``, which overflows: ``1e30`` passes, and
``100000000000000000000`` does not. What passes is still useless: kube-scheduler reads a container's count with
``AsInt64`` (of the stored, canonical form), and gives the container no device when that fails. ``validate``,
``simulate`` and ``migrate`` refuse such a count, naming the field, in the same words; never a claim of count 0.
(The expectations of Go's arithmetic were read from ``k8s.io/apimachinery`` v0.37.2's ``resource.Quantity``; the
control-plane test holds the API server's side to them.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.cli import main
from kubedra.objects.formats import UNREADABLE_COUNT, device_count, resource_quantity

# value -> the API server rejects it as "must be an integer"
API_SERVER = {
    "1e30": False,
    "1e+30": False,
    "1e19": False,
    "9223372036854775808": False,
    "100000000000000000000": True,   # MilliValue wraps to ...664
    "1000000000000000000": True,     # ...736
    "999999999999999999": True,
    "1E": False,
    "1.0": False,
    "1.5": True,
    "2": False,
}
UNREADABLE = {"1e30", "1e+30", "1e19", "9223372036854775808"}


@pytest.mark.parametrize("value", sorted(API_SERVER))
def test_the_integer_rule_is_gos_overflowing_one(value: str) -> None:
    rejected = any("must be an integer" in m for m in resource_quantity("nvidia.com/gpu", value))
    assert rejected == API_SERVER[value]


@pytest.mark.parametrize("value", sorted(API_SERVER))
def test_counts_kube_scheduler_cannot_read_are_refused(value: str) -> None:
    refused = bool(device_count("nvidia.com/gpu", value))
    assert refused == (value in UNREADABLE)
    assert device_count("cpu", value) == ()  # extended resources only


POD = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: x
    resources:
      limits: {nvidia.com/gpu: VALUE}
"""


@pytest.mark.parametrize("value", ["1e30", '"1e19"', '"9223372036854775808"'])
@pytest.mark.parametrize("command", ["validate", "simulate", "migrate"])
def test_every_command_refuses_the_count_naming_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str, command: str
) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(POD.replace("VALUE", value))
    argv = {"validate": ["validate", "-f", str(path)], "simulate": ["simulate", "-f", str(path)],
            "migrate": ["migrate", str(path)]}[command]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == (1 if command == "validate" else 2)
    text = out + err
    assert "Pod/p: spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value:" in text
    assert UNREADABLE_COUNT in text
    assert "Traceback" not in text and "count: 0" not in text


# (MilliValue, Value) of apimachinery v0.37.2's resource.Quantity for each text (a ten-line Go program's output).
GO_SCALED = {
    "1e30": (0, 0),
    "1e19": (0, 0),
    "9223372036854775808": (0, -9223372036854775808),
    "9223372036854775807": (-1000, 9223372036854775807),
    "100000000000000000000": (200376420520689664, 7766279631452241920),
    "999999999999999999": (3875820019684211736, 999999999999999999),
    "1000000000000000000": (3875820019684212736, 1000000000000000000),
    "9223372036854775k": (-808000, 9223372036854775000),
    "1E": (0, 1000000000000000000),
}


@pytest.mark.parametrize("text", sorted(GO_SCALED))
def test_scaled_values_overflow_as_go_does(text: str) -> None:
    from kubedra.objects.quantity import Quantity
    quantity = Quantity.parse(text)
    assert (quantity.milli_value(), quantity.value()) == GO_SCALED[text]
