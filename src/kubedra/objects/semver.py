"""Semantic versions as Kubernetes' CEL ``semver`` library and DRA version attributes see them.

Parsing follows ``blang/semver/v4``'s ``Parse`` (which CEL's ``semver()`` and the DRA CEL
environment call), including its error texts. ``normalize=True`` follows ``normalizeAndParse`` of
``k8s.io/apiserver/pkg/cel/library/semverlib.go``. Precedence is semver 2.0.0's: build metadata is
ignored, so two versions that differ only in build metadata are equal, as in ``Version.EQ``.
API validation of a ResourceSlice ``version`` attribute uses a regular expression instead of
blang; ``validate_version_attribute`` mirrors it.
"""

from __future__ import annotations

import re
from typing import Final, final

__all__ = [
    "VERSION_ATTRIBUTE_MAX_LENGTH",
    "Semver",
    "SemverError",
    "is_semver",
    "validate_version_attribute",
    "version_attribute_errors",
]

_UINT64_MAX: Final = 2**64 - 1
_NUMBERS: Final = frozenset("0123456789")
_ALPHANUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")

# resource.DeviceAttributeMaxValueLength and the semverRe of pkg/apis/resource/validation.
VERSION_ATTRIBUTE_MAX_LENGTH: Final = 64
_NUMERIC_ID: Final = r"(0|[1-9][0-9]*)"
_PRERELEASE_ID: Final = r"(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD_ID: Final = r"[0-9a-zA-Z-]+"
_SEMVER_RE: Final = re.compile(
    rf"{_NUMERIC_ID}\.{_NUMERIC_ID}\.{_NUMERIC_ID}"
    rf"(-{_PRERELEASE_ID}(\.{_PRERELEASE_ID})*)?"
    rf"(\+{_BUILD_ID}(\.{_BUILD_ID})*)?"
).fullmatch
_INVALID_VERSION: Final = "must be a string compatible with semver.org spec 2.0.0"


class SemverError(ValueError):
    """A string that the semver parser rejects; the message is blang/semver's."""


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the strings that show up in blang's messages."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _parse_uint(text: str) -> int:
    """``strconv.ParseUint(text, 10, 64)`` for a string of ASCII digits (or an empty one)."""
    if not text:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    value = int(text) if len(text) <= 20 else _UINT64_MAX + 1
    if value > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {_go_quote(text)}: value out of range")
    return value


def _number(text: str, name: str) -> int:
    if not _NUMBERS.issuperset(text):
        raise SemverError(f"Invalid character(s) found in {name} number {_go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{name.capitalize()} number must not contain leading zeroes {_go_quote(text)}")
    return _parse_uint(text)


def _prerelease(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if _NUMBERS.issuperset(text):
        if len(text) > 1 and text[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {_go_quote(text)}")
        return _parse_uint(text)
    if _ALPHANUM.issuperset(text):
        return text
    raise SemverError(f"Invalid character(s) found in prerelease {_go_quote(text)}")


def _normalize(text: str) -> str:
    """``normalizeAndParse``'s rewriting: drop one "v", leading zeros, and fill in minor/patch."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part.encode()) > 1:  # Go counts bytes
            part = part.lstrip("0")  # noqa: PLW2901 - the rewritten part is stored below
            if not part or part[0] not in _NUMBERS:
                part = "0" + part  # noqa: PLW2901
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts.extend("0" * (3 - len(parts)))
    return ".".join(parts)


@final
class Semver:
    """An immutable semantic version, ordered by semver 2.0.0 precedence.

    ``pre`` holds numeric identifiers as ``int`` and the others as ``str``; ``build`` is kept for
    printing but plays no part in equality, hashing or ordering.
    """

    __slots__ = ("_key", "build", "major", "minor", "patch", "pre")

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...]
    build: tuple[str, ...]
    _key: tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]

    def __init__(
        self, major: int, minor: int, patch: int, pre: tuple[int | str, ...] = (), build: tuple[str, ...] = ()
    ) -> None:
        setter = object.__setattr__
        setter(self, "major", major)
        setter(self, "minor", minor)
        setter(self, "patch", patch)
        setter(self, "pre", pre)
        setter(self, "build", build)
        pre_key = tuple((0, p) if isinstance(p, int) else (1, p) for p in pre)
        setter(self, "_key", (major, minor, patch, 0 if pre else 1, pre_key))

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        """blang ``semver.Parse``, or CEL's ``semver(text, true)`` when ``normalize`` is set."""
        if normalize:
            text = _normalize(text)
        if not text:
            raise SemverError("Version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise SemverError("No Major.Minor.Patch elements found")
        major = _number(parts[0], "major")
        minor = _number(parts[1], "minor")
        patch_text, build_text, pre_text = parts[2], None, None
        if "+" in patch_text:
            patch_text, build_text = patch_text.split("+", 1)
        if "-" in patch_text:
            patch_text, pre_text = patch_text.split("-", 1)
        patch = _number(patch_text, "patch")
        pre = () if pre_text is None else tuple(_prerelease(p) for p in pre_text.split("."))
        build: tuple[str, ...] = ()
        if build_text is not None:
            build = tuple(build_text.split("."))
            for item in build:
                if not item:
                    raise SemverError("Build meta data is empty")
                if not _ALPHANUM.issuperset(item):
                    raise SemverError(f"Invalid character(s) found in build meta data {_go_quote(item)}")
        return cls(major, minor, patch, pre, build)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Semver is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Semver is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[type[Semver], tuple[int, int, int, tuple[int | str, ...], tuple[str, ...]]]:
        return (Semver, (self.major, self.minor, self.patch, self.pre, self.build))

    def cmp(self, other: Semver) -> int:
        """``Version.Compare``: -1, 0 or 1."""
        a, b = self._key, other._key
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Semver:
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __lt__(self, other: Semver) -> bool:
        if other.__class__ is not Semver:
            return NotImplemented
        return self._key < other._key

    def __le__(self, other: Semver) -> bool:
        if other.__class__ is not Semver:
            return NotImplemented
        return self._key <= other._key

    def __gt__(self, other: Semver) -> bool:
        if other.__class__ is not Semver:
            return NotImplemented
        return self._key > other._key

    def __ge__(self, other: Semver) -> bool:
        if other.__class__ is not Semver:
            return NotImplemented
        return self._key >= other._key

    def __str__(self) -> str:
        """``Version.String()``."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def is_semver(text: str, normalize: bool = False) -> bool:
    """CEL ``isSemver(text)`` / ``isSemver(text, normalize)``."""
    try:
        Semver.parse(text, normalize)
    except SemverError:
        return False
    return True


def version_attribute_errors(text: str) -> list[str]:
    """Every message API validation gives for a device attribute's ``version`` value, in its order."""
    errors = []
    if not _SEMVER_RE(text):
        errors.append(_INVALID_VERSION)
    if len(text.encode()) > VERSION_ATTRIBUTE_MAX_LENGTH:
        errors.append(f"may not be more than {VERSION_ATTRIBUTE_MAX_LENGTH} bytes")
    return errors


def validate_version_attribute(text: str) -> str | None:
    """The first validation message for a ResourceSlice ``version`` attribute, or ``None`` if valid."""
    errors = version_attribute_errors(text)
    return errors[0] if errors else None
