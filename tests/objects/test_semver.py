"""Semver parsing, precedence and DRA version-attribute validation."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubedra.objects.semver import (
    Semver,
    SemverError,
    is_semver,
    validate_version_attribute,
    version_attribute_errors,
)

# semver.org, section 11: each version has lower precedence than the next.
PRECEDENCE = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "2.0.0",
    "2.1.0",
    "2.1.1",
    "10.0.0",
]


def test_semver_org_precedence() -> None:
    versions = [Semver.parse(v) for v in PRECEDENCE]
    for i, lower in enumerate(versions):
        for j, upper in enumerate(versions):
            expect = (i > j) - (i < j)
            assert lower.cmp(upper) == expect, (lower, upper)
            assert (lower < upper) is (expect < 0)
            assert (lower <= upper) is (expect <= 0)
            assert (lower > upper) is (expect > 0)
            assert (lower >= upper) is (expect >= 0)
            assert (lower == upper) is (expect == 0)
    shuffled = versions[1::2] + versions[0::2]
    assert sorted(shuffled) == versions


def test_build_metadata_has_no_precedence() -> None:
    a, b = Semver.parse("1.0.0+build.1"), Semver.parse("1.0.0+build.2")
    assert a == b
    assert a.cmp(b) == 0
    assert hash(a) == hash(b)
    assert str(a) == "1.0.0+build.1"
    assert Semver.parse("1.0.0-rc.1+x") < Semver.parse("1.0.0+y")


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("1.2.3", (1, 2, 3, (), ())),
        ("0.0.0", (0, 0, 0, (), ())),
        ("1.2.3-beta.1+build.1", (1, 2, 3, ("beta", 1), ("build", "1"))),
        ("1.0.0-0A.is.legal", (1, 0, 0, ("0A", "is", "legal"), ())),
        ("1.0.0-x-y-z.--", (1, 0, 0, ("x-y-z", "--"), ())),
        ("1.0.0+0.build.1-rc.10000aaa-kk-0.1", (1, 0, 0, (), ("0", "build", "1-rc", "10000aaa-kk-0", "1"))),
        ("1.0.0-alpha+001", (1, 0, 0, ("alpha",), ("001",))),
        ("1.2.3----RC-SNAPSHOT.12.9.1--.12+788", (1, 2, 3, ("---RC-SNAPSHOT", 12, 9, "1--", 12), ("788",))),
        ("18446744073709551615.0.0", (2**64 - 1, 0, 0, (), ())),
        ("550.54.15", (550, 54, 15, (), ())),
    ],
)
def test_parse_fields_and_string(text: str, fields: tuple[object, ...]) -> None:
    v = Semver.parse(text)
    assert (v.major, v.minor, v.patch, v.pre, v.build) == fields
    assert str(v) == text
    assert repr(v) == f"Semver({text!r})"
    assert is_semver(text)
    assert validate_version_attribute(text) is None


# blang/semver's messages.
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Version string empty"),
        ("1", "No Major.Minor.Patch elements found"),
        ("1.1", "No Major.Minor.Patch elements found"),
        ("v1.0", "No Major.Minor.Patch elements found"),
        ("v1.0.0", 'Invalid character(s) found in major number "v1"'),
        (" 1.0.0", 'Invalid character(s) found in major number " 1"'),
        ("1. 0.0", 'Invalid character(s) found in minor number " 0"'),
        ("1.0.0 ", 'Invalid character(s) found in patch number "0 "'),
        ("01.1.1", 'Major number must not contain leading zeroes "01"'),
        ("1.01.1", 'Minor number must not contain leading zeroes "01"'),
        ("1.1.01", 'Patch number must not contain leading zeroes "01"'),
        ("..1", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
        ("1.0.0-", "Prerelease is empty"),
        ("1.0.0-a..b", "Prerelease is empty"),
        ("1.0.0-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.0.0-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.0.0+", "Build meta data is empty"),
        ("1.0.0+a..b", "Build meta data is empty"),
        ("1.0.0+a_b", 'Invalid character(s) found in build meta data "a_b"'),
        ("1.0.0+a+b", 'Invalid character(s) found in build meta data "a+b"'),
        ('1.0.0-"\n', 'Invalid character(s) found in prerelease "\\"\\n"'),
        ("1.2.3.4", 'Invalid character(s) found in patch number "3.4"'),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SemverError) as info:
        Semver.parse(text)
    assert str(info.value) == message
    assert not is_semver(text)
    if "out of range" not in message:  # API validation's regular expression has no uint64 limit
        assert validate_version_attribute(text) == "must be a string compatible with semver.org spec 2.0.0"


# CEL's semver(text, true) and isSemver(text, true), from the library's tests and normalizeAndParse.
@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("v1.0.0", "1.0.0"),
        ("01.01.01", "1.1.1"),
        ("1", "1.0.0"),
        ("1.1", "1.1.0"),
        ("v01.01", "1.1.0"),
        ("v1.2.3-rc.1+b", "1.2.3-rc.1+b"),
        ("00.000.0000", "0.0.0"),
        ("1.2.003-alpha", "1.2.3-alpha"),
        ("1.2.000-rc", "1.2.0-rc"),
        ("v0", "0.0.0"),
    ],
)
def test_normalize(text: str, normalized: str) -> None:
    assert str(Semver.parse(text, normalize=True)) == normalized
    assert is_semver(text, normalize=True)
    assert Semver.parse(text, normalize=True) == Semver.parse(normalized)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'strconv.ParseUint: parsing "": invalid syntax'),
        (" 1.0.0", 'Invalid character(s) found in major number "0 1"'),
        ("1. 0.0", 'Invalid character(s) found in minor number "0 0"'),
        ("1.0.0 ", 'Invalid character(s) found in patch number "0 "'),
        ("1-rc", "short version cannot contain PreRelease/Build meta data"),
        ("1.2+b", "short version cannot contain PreRelease/Build meta data"),
        ("vv1", 'Invalid character(s) found in major number "0v1"'),
        ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ],
)
def test_normalize_errors(text: str, message: str) -> None:
    with pytest.raises(SemverError) as info:
        Semver.parse(text, normalize=True)
    assert str(info.value) == message
    assert not is_semver(text, normalize=True)


def test_major_minor_patch_and_cel_examples() -> None:
    v = Semver.parse("1.2.3")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)
    assert Semver.parse("1.0.0").cmp(Semver.parse("1.2.3")) == -1
    assert Semver.parse("1.2.3").cmp(Semver.parse("1.0.0")) == 1
    assert Semver.parse("1.2.3") != Semver.parse("1.0.0")
    assert Semver.parse("550.54.15") > Semver.parse("0.0.1")
    assert Semver(1, 2, 3) == v


def test_immutable_and_picklable() -> None:
    v = Semver.parse("1.2.3-rc.1+b.2")
    with pytest.raises(AttributeError):
        v.major = 2
    back = pickle.loads(pickle.dumps(v))
    assert back == v
    assert str(back) == str(v)
    assert v != "1.2.3-rc.1+b.2"


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        ("1.0.0", []),
        ("1.0.0+build.1", []),
        ("1.0.0-beta.1+build.1", []),
        ("1.0", ["must be a string compatible with semver.org spec 2.0.0"]),
        ("01.0.0", ["must be a string compatible with semver.org spec 2.0.0"]),
        ("1.0.0\n", ["must be a string compatible with semver.org spec 2.0.0"]),
        ("1.0.0-\u0661", ["must be a string compatible with semver.org spec 2.0.0"]),  # Arabic-Indic one
        ("x" * 65, ["must be a string compatible with semver.org spec 2.0.0", "may not be more than 64 bytes"]),
        ("1.0.0-" + "a" * 59, ["may not be more than 64 bytes"]),
        ("1.0.0-" + "a" * 58, []),
        ("99999999999999999999.0.0", []),  # the API accepts it, although CEL's semver() cannot parse it
    ],
)
def test_version_attribute_validation(text: str, errors: list[str]) -> None:
    assert version_attribute_errors(text) == errors
    assert validate_version_attribute(text) == (errors[0] if errors else None)


IDENT = r"(0|[1-9][0-9]{0,5}|[0-9]{0,3}[a-zA-Z-][0-9a-zA-Z-]{0,4})"
NUMBER = r"(0|[1-9][0-9]{0,4})"
BUILD = r"[0-9a-zA-Z-]{1,5}"
SEMVER = rf"{NUMBER}\.{NUMBER}\.{NUMBER}(-{IDENT}(\.{IDENT}){{0,3}})?(\+{BUILD}(\.{BUILD}){{0,2}})?"


def reference_key(text: str) -> tuple[object, ...]:
    core, _, _build = text.partition("+")
    numbers, dash, pre = core.partition("-")
    major, minor, patch = (int(x) for x in numbers.split("."))
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")) if dash else ()
    return (major, minor, patch, not dash, ids)


@given(st.from_regex(SEMVER, fullmatch=True), st.from_regex(SEMVER, fullmatch=True))
def test_valid_strings_round_trip_and_order_like_the_reference(x: str, y: str) -> None:
    a, b = Semver.parse(x), Semver.parse(y)
    assert str(a) == x
    assert is_semver(x)
    assert validate_version_attribute(x) is (None if len(x) <= 64 else "may not be more than 64 bytes")
    ka, kb = reference_key(x), reference_key(y)
    assert a.cmp(b) == (ka > kb) - (ka < kb)
    assert (a == b) is (ka == kb)


@given(st.text(alphabet="0123456789.-+abv_ ", max_size=16))
def test_parser_agrees_with_api_validation(text: str) -> None:
    api_ok = version_attribute_errors(text) == []
    assert is_semver(text) is api_ok
    if is_semver(text):
        assert str(Semver.parse(text)) == text
