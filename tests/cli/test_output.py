"""The shared printers: kubectl's table layout, ``-o name``, format checks."""

from __future__ import annotations

import pytest
import typer

from kubedra.cli.output import Column, OutputFormat, Table, require_format, resource_name, tabulate


def test_columns_are_padded_like_kubectls_tabwriter() -> None:
    lines = tabulate([["NAME", "STATUS", "AGE"], ["trainer-0", "Running", "5m"], ["a", "Pending", "10s"]])
    assert lines == [
        "NAME        STATUS    AGE",
        "trainer-0   Running   5m",
        "a           Pending   10s",
    ]


def test_a_narrow_column_is_still_six_wide_and_no_line_ends_in_spaces() -> None:
    lines = tabulate([["A", "B", ""], ["x", "y", ""]])
    assert lines == ["A     B", "x     y"]


def test_cells_are_one_line_and_empty_cells_say_none() -> None:
    table = Table([Column("NAME"), Column("REASON")])
    table.add("web-0", "0/2 nodes are available:\n2 cannot\tallocate")
    table.add("web-1", "")
    assert table.lines() == [
        "NAME    REASON",
        "web-0   0/2 nodes are available: 2 cannot allocate",
        "web-1   <none>",
    ]


def test_wide_columns_and_no_headers() -> None:
    table = Table([Column("NAME"), Column("NODE", wide=True), Column("STATUS")])
    table.add("p", "n1", "Running")
    assert table.lines() == ["NAME   STATUS", "p      Running"]
    assert table.lines(wide=True) == ["NAME   NODE   STATUS", "p      n1     Running"]
    assert table.lines(headers=False) == ["p     Running"]  # widths from the rows alone, as kubectl


def test_a_row_must_fill_every_column() -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        Table([Column("A"), Column("B"), Column("C")]).add("x", "y")


def test_names_are_kubectls_resource_slash_name() -> None:
    assert resource_name("Pod", "ml/trainer-0") == "pod/trainer-0"
    assert resource_name("ResourceClaim", "gpu-claim") == "resourceclaim.resource.k8s.io/gpu-claim"
    assert resource_name("DeviceClass", "gpu.nvidia.com") == "deviceclass.resource.k8s.io/gpu.nvidia.com"


def test_an_unsupported_format_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exit_:
        require_format(OutputFormat.name, (OutputFormat.table, OutputFormat.json), "allocate")
    assert exit_.value.exit_code == 2
    assert "kubedra allocate does not support -o name (use one of: table, json)" in capsys.readouterr().err
