"""``simulate`` (and ``explain``) refuse a DeviceClass or claim whose CEL selector the API server would not compile:
exit 2, naming the file, the object and the field, as ``validate`` reports it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.cli import main

BAD = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: bad.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == '}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: r
      exactly:
        deviceClassName: gpu.nvidia.com
        selectors: [{cel: {expression: 'device.driver + 1 == 2'}}]
"""


@pytest.mark.parametrize("argv", [["simulate"], ["explain", "claim/c"]])
def test_selectors_that_do_not_compile_are_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    assert main([*argv, "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {path}[0]: DeviceClass/bad.example.com: spec.selectors[0].cel.expression: Invalid value:" in err
    assert (f"error: {path}[1]: ResourceClaim/c: spec.devices.requests[0].exactly.selectors[0].cel.expression: "
            "Invalid value:") in err
