"""Go duration syntax, parsed exactly as time.ParseDuration, with Go's error texts and hints."""

from __future__ import annotations

import pytest

from kubedra.sim.durations import DurationError, parse_duration, parse_duration_ns


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("+0", 0),
        ("-0", 0),
        ("5s", 5_000_000_000),
        ("90s", 90_000_000_000),
        ("250ms", 250_000_000),
        ("10m", 600_000_000_000),
        ("1h30m", 5_400_000_000_000),
        ("1.5h", 5_400_000_000_000),
        ("2h45m30.5s", 9_930_500_000_000),
        (".5s", 500_000_000),
        ("1.s", 1_000_000_000),
        ("-1m", -60_000_000_000),
        ("+5s", 5_000_000_000),
        ("1ns", 1),
        ("3us", 3_000),
        ("3\u00b5s", 3_000),
        ("3\u03bcs", 3_000),
        ("1h1m1s1ms1us1ns", 3_661_001_001_001),
        ("0.3333333333333333333h", 1_200_000_000_000),
        ("1.0000000001s", 1_000_000_000),  # Go truncates the float product
        ("9223372036854775807ns", 9_223_372_036_854_775_807),
        ("2562047h47m16.854775807s", 9_223_372_036_854_775_807),
        ("-9223372036854775808ns", -9_223_372_036_854_775_808),
    ],
)
def test_parses_like_go(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


def test_seconds() -> None:
    assert parse_duration("1h30m") == 5400.0
    assert parse_duration("250ms") == 0.25


ISO = "; ISO 8601 durations are not accepted, write Go durations such as 10m, 1h30m or 90s"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("1", 'time: missing unit in duration "1"'),
        ("1.5", 'time: missing unit in duration "1.5"'),
        ("s", 'time: invalid duration "s"'),
        (".s", 'time: invalid duration ".s"'),
        ("-", 'time: invalid duration "-"'),
        ("1x", 'time: unknown unit "x" in duration "1x"'),
        ("1H", 'time: unknown unit "H" in duration "1H"'),
        ("3000000h", 'time: invalid duration "3000000h"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("92233720368547758070ns", 'time: invalid duration "92233720368547758070ns"'),
        ("1d", 'time: unknown unit "d" in duration "1d"; days are not a Go duration unit, write hours, e.g. 24h'),
        (
            "PT10M",
            'time: invalid duration "PT10M"' + ISO,
        ),
        (
            "P1D",
            'time: invalid duration "P1D"' + ISO,
        ),
        ("10 m", 'time: unknown unit " m" in duration "10 m"; write the duration without spaces, e.g. 1h30m'),
        (" 5s", 'time: invalid duration " 5s"; write the duration without spaces, e.g. 1h30m'),
        ('1"s', 'time: unknown unit "\\"s" in duration "1\\"s"'),
    ],
)
def test_errors_are_gos(text: str, message: str) -> None:
    with pytest.raises(DurationError) as err:
        parse_duration(text)
    assert str(err.value) == message


def test_duration_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="missing unit"):
        parse_duration("10")
