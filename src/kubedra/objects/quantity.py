"""Kubernetes ``resource.Quantity`` in pure Python: exact, immutable and fast to compare.

The value is kept as an integer count of nano-units, which every parsed Kubernetes quantity is a
whole multiple of (finer input is rounded away from zero to 1n). Ordering and equality compare that
integer. Beside the value, a quantity remembers what Kubernetes would remember: its ``Format``, the
input string that ``ParseQuantity`` reuses as ``String()`` when it thinks the input is canonical,
and whether Go holds it as an ``int64Amount`` (value, scale) or as an ``inf.Dec``, because CEL's
``isInteger``/``asInteger``/``asApproximateFloat`` depend on that representation.

Deliberate divergences, all outside sane inputs: magnitudes of 1e4000 and more (or inputs with more
than 4000 digits) are rejected instead of being held exactly; a BinarySI value of 2^70 or more,
which Go prints without its suffix, prints as a DecimalSI number; ``Cmp`` never converts its
receiver to ``inf.Dec`` as Go does.
"""

from __future__ import annotations

import enum
import functools
import math
import re
from collections.abc import Callable
from typing import Any, Final, final

__all__ = ["Format", "Quantity", "QuantityError", "parse_quantity"]

_NANO: Final = 10**9
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_MAX_DIGITS: Final = 4000  # kubedra's limit on digits and decimal magnitude, see the module docstring

ERR_FORMAT_WRONG: Final = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A string that ``resource.ParseQuantity`` rejects, or a value a conversion cannot return.

    ``str(error)`` is the Kubernetes message; ``text`` is the offending input, when there is one.
    """

    def __init__(self, message: str, text: str | None = None) -> None:
        super().__init__(message)
        self.text = text


class Format(enum.Enum):
    """How a quantity prints (``resource.Format``)."""

    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BIN: Final = Format.BINARY_SI
_DEC: Final = Format.DECIMAL_SI
_EXP: Final = Format.DECIMAL_EXPONENT

# suffix -> (base, exponent, format), as quantitySuffixer.interpret reads it
_SUFFIXES: Final[dict[str, tuple[int, int, Format]]] = {
    "": (10, 0, _DEC), "n": (10, -9, _DEC), "u": (10, -6, _DEC), "m": (10, -3, _DEC),
    "k": (10, 3, _DEC), "M": (10, 6, _DEC), "G": (10, 9, _DEC), "T": (10, 12, _DEC),
    "P": (10, 15, _DEC), "E": (10, 18, _DEC),
    "Ki": (2, 10, _BIN), "Mi": (2, 20, _BIN), "Gi": (2, 30, _BIN),
    "Ti": (2, 40, _BIN), "Pi": (2, 50, _BIN), "Ei": (2, 60, _BIN),
}  # fmt: skip
_DECIMAL_SUFFIX: Final = {e: s for s, (b, e, _f) in _SUFFIXES.items() if b == 10}
_BINARY_SUFFIX: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_SCAN: Final = re.compile(r"([+-]?)(0*)([0-9]*)(\.[0-9]*)?([eEinumkKMGTP]*[+-]?[0-9]*)").fullmatch
_EXPONENT: Final = re.compile(r"[eE][+-]?[0-9]+").fullmatch

# Go's math.Pow10 tables: asApproximateFloat must round exactly as Go does.
_POW10: Final = tuple(float(f"1e{i}") for i in range(32))
_POW10_POS32: Final = tuple(float(f"1e{32 * i}") for i in range(10))
_POW10_NEG32: Final = tuple(float(f"1e-{32 * i}") for i in range(11))
# For sums: the nano counts whose int64Amount value at scale i-9 fits int64 are those in [-limit, limit).
_INT64_LIMIT_NANOS: Final = tuple(2**63 * 10**i for i in range(64))


def _go_pow10(n: int) -> float:
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return math.inf if n > 0 else 0.0


def _make(nanos: int, fmt: Format, exp: int, dec: bool, text: str | None) -> Quantity:
    """Build a quantity; ``exp``/``dec`` describe Go's representation (see the class docstring)."""
    q = object.__new__(Quantity)
    _set_n(q, nanos)
    _set_format(q, fmt)
    _set_exp(q, exp)
    _set_dec(q, dec)
    _set_s(q, text)
    return q


@final
class Quantity:
    """An exact, immutable ``resource.Quantity``.

    ``Quantity("1Gi")`` and ``Quantity.parse("1Gi")`` parse; ``str(q)`` is Kubernetes' ``String()``.
    Equality, hashing and ordering use the value only, so ``Quantity("1Gi") == Quantity("1073741824")``.
    Internally ``_exp`` is the int64Amount scale (or ``-scale`` of the ``inf.Dec``) and ``_dec`` says
    which of the two Go would hold; ``_s`` is the string Go reuses, when there is one.
    """

    __slots__ = ("_dec", "_exp", "_n", "_s", "format")

    _n: int
    format: Format
    _exp: int
    _dec: bool
    _s: str | None

    def __new__(cls, text: str) -> Quantity:
        return _parse_cached(text)

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse like ``resource.ParseQuantity``; results are cached, so parsing again is cheap."""
        return _parse_cached(text)

    @classmethod
    def from_int(cls, value: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewQuantity(value, fmt)``."""
        return _make(value * _NANO, fmt, 0, not _INT64_MIN <= value <= _INT64_MAX, None)

    @classmethod
    def from_scaled(cls, value: int, scale: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``value * 10**scale`` like ``NewScaledQuantity``/``NewMilliQuantity`` (scale -3), in ``fmt``.

        Raises ``QuantityError`` for a value finer than 1n, which kubedra cannot hold.
        """
        shift = scale + 9
        if shift >= 0:
            nanos = value * 10**shift
        else:
            nanos, rest = divmod(value, 10**-shift)
            if rest:
                raise QuantityError(f"{value}e{scale} is finer than 1n")
        return _make(nanos, fmt, scale, not _INT64_MIN <= value <= _INT64_MAX, None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Quantity is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Quantity is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make, (self._n, self.format, self._exp, self._dec, self._s))

    def representation(self) -> str:
        """Go's representation as text (value, format, scale, int64Amount or inf.Dec, reused string): two
        spellings of one value (``"1"``, ``"1000m"``) differ here; :meth:`from_representation` reads it back."""
        return f"{self._n}|{self.format.value}|{self._exp}|{int(self._dec)}|{'' if self._s is None else self._s}"

    @classmethod
    def from_representation(cls, text: str) -> Quantity:
        """The quantity :meth:`representation` wrote, representation and all."""
        n, fmt, exp, dec, s = text.split("|", 4)
        return _make(int(n), Format(fmt), int(exp), dec == "1", s if s else None)

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: object) -> Quantity:
        return self

    # ----- value and ordering -----

    @property
    def nanos(self) -> int:
        """The exact value in units of 1e-9."""
        return self._n

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Quantity:
            return NotImplemented
        return self._n == other._n

    def __hash__(self) -> int:
        return hash(self._n)

    def __lt__(self, other: Quantity) -> bool:
        if other.__class__ is not Quantity:
            return NotImplemented
        return self._n < other._n

    def __le__(self, other: Quantity) -> bool:
        if other.__class__ is not Quantity:
            return NotImplemented
        return self._n <= other._n

    def __gt__(self, other: Quantity) -> bool:
        if other.__class__ is not Quantity:
            return NotImplemented
        return self._n > other._n

    def __ge__(self, other: Quantity) -> bool:
        if other.__class__ is not Quantity:
            return NotImplemented
        return self._n >= other._n

    def cmp(self, other: Quantity) -> int:
        """``Quantity.Cmp``: -1, 0 or 1."""
        a, b = self._n, other._n
        return (a > b) - (a < b)

    def sign(self) -> int:
        """``Quantity.Sign``: -1, 0 or 1."""
        return (self._n > 0) - (self._n < 0)

    def is_zero(self) -> bool:
        return self._n == 0

    def is_integer(self) -> bool:
        """Whether the value is a whole number (by value; see ``cel_is_integer`` for CEL's rule)."""
        return self._n % _NANO == 0

    def as_int64(self) -> int:
        """The value as an int64; raises ``QuantityError`` if it is fractional or out of range."""
        whole, frac = divmod(self._n, _NANO)
        if frac or not _INT64_MIN <= whole <= _INT64_MAX:
            raise QuantityError("cannot convert value to integer")
        return whole

    def scaled_value(self, scale: int) -> int:
        """Go's ``ScaledValue``: ``ceil(q / 10^scale)`` rounded away from zero, as an int64.

        This is how kube-scheduler reads node allocatable and pod requests (``Value()`` for pods, memory and
        extended resources, ``MilliValue()`` for cpu), so ``pods: 1.5`` allows 2 pods. Past int64 Go overflows:
        an ``inf.Dec`` gives its low 64 bits; an ``int64Amount`` scaled by 10, 100, 1000, 10^6 or 10^9 its wrapped
        product (``positiveScaleInt64``'s one-multiplication cases), by any other power 0.
        """
        shift = scale + 9
        factor: int = 10 ** abs(shift)
        if shift >= 0:
            whole, rest = divmod(abs(self._n), factor)
            magnitude = whole + (1 if rest else 0)
        else:
            magnitude = abs(self._n) * factor
        value = -magnitude if self._n < 0 else magnitude
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
        if not self._dec:
            return self._int64_amount_overflow(scale)
        low = magnitude & (2**64 - 1)
        wrapped = low - 2**64 if low > _INT64_MAX else low
        return -wrapped if self._n < 0 else wrapped

    def _int64_amount_overflow(self, scale: int) -> int:
        """``positiveScaleInt64(value, a.scale - scale)`` where the result does not fit an int64."""
        base, steps = _value_at(self._n, self._exp), self._exp - scale
        if steps not in (1, 2, 3, 6, 9) or base == _INT64_MIN:
            return 0  # the loop of multiplications by 10 gives up with 0
        factor: int = 10**steps
        low = (base * factor) & (2**64 - 1)
        return low - 2**64 if low > _INT64_MAX else low

    def value(self) -> int:
        """Go's ``Value()``: ``ScaledValue(0)``."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Go's ``MilliValue()``: ``ScaledValue(-3)``."""
        return self.scaled_value(-3)

    # ----- CEL's representation-dependent accessors -----

    def _mantissa(self) -> int:
        return _value_at(self._n, self._exp) if self._n else 0

    def k8s_as_int64(self) -> int | None:
        """Go's ``Quantity.AsInt64``: ``None`` for an ``inf.Dec``, a negative scale or an overflow."""
        if self._dec or self._exp < 0:
            return None
        value = self._mantissa()
        if value and self._exp:
            value *= 10**self._exp
        return value if _INT64_MIN <= value <= _INT64_MAX else None

    def cel_is_integer(self) -> bool:
        """CEL ``isInteger()``: true when ``AsInt64`` succeeds (so ``"1.0"`` and ``"1000m"`` are not)."""
        return self.k8s_as_int64() is not None

    def cel_as_integer(self) -> int:
        """CEL ``asInteger()``: ``AsInt64`` or the error ``cannot convert value to integer``."""
        value = self.k8s_as_int64()
        if value is None:
            raise QuantityError("cannot convert value to integer")
        return value

    def as_approximate_float(self) -> float:
        """Go's ``AsApproximateFloat64`` (and CEL ``asApproximateFloat()``), rounding as Go does."""
        mantissa = self._mantissa()
        try:
            base = float(mantissa)
        except OverflowError:
            base = math.inf if mantissa > 0 else -math.inf
        if self._exp == 0:
            return base
        return base * _go_pow10(self._exp)

    # ----- arithmetic (Quantity.Add / Sub / Neg on a copy) -----

    def __add__(self, other: Quantity) -> Quantity:
        if other.__class__ is not Quantity:
            return NotImplemented
        return _combine(self, other, other._n)

    def __sub__(self, other: Quantity) -> Quantity:
        if other.__class__ is not Quantity:
            return NotImplemented
        return _combine(self, other, -other._n)

    def __neg__(self) -> Quantity:
        return _make(-self._n, self.format, self._exp, self._dec, None)

    def __pos__(self) -> Quantity:
        return self

    # ----- strings -----

    def __str__(self) -> str:
        """``Quantity.String()``: the reused input string if Go kept one, else the canonical form."""
        s = self._s
        if s is None:
            s = _canonical(self._n, self.format)
            _set_s(self, s)
        return s

    def canonical(self) -> str:
        """The canonical form (``CanonicalizeBytes``), even where ``String()`` reuses the input."""
        return _canonical(self._n, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


# The slots' own setters: _make runs on every parse and every sum, and __setattr__ refuses writes.
_set_n: Final[Callable[[Quantity, int], None]] = vars(Quantity)["_n"].__set__
_set_format: Final[Callable[[Quantity, Format], None]] = vars(Quantity)["format"].__set__
_set_exp: Final[Callable[[Quantity, int], None]] = vars(Quantity)["_exp"].__set__
_set_dec: Final[Callable[[Quantity, bool], None]] = vars(Quantity)["_dec"].__set__
_set_s: Final[Callable[[Quantity, str | None], None]] = vars(Quantity)["_s"].__set__


def _combine(a: Quantity, b: Quantity, b_nanos: int) -> Quantity:
    """``a.Add(b)`` (``b_nanos`` negated for Sub), keeping Go's choice of format and representation."""
    a_nanos = a._n
    fmt = b.format if a_nanos == 0 else a.format
    nanos = a_nanos + b_nanos
    if a._dec or b._dec:
        return _make(nanos, fmt, min(a._exp, b._exp), True, None)
    # int64Amount.Add: a zero side keeps the other's scale; otherwise both move to the finer scale,
    # and any int64 overflow on the way sends Go to inf.Dec.
    if b_nanos == 0:
        return _make(nanos, fmt, a._exp, False, None)
    if a_nanos == 0:
        return _make(nanos, fmt, b._exp, False, None)
    scale = min(a._exp, b._exp)
    index = scale + 9
    if 0 <= index < len(_INT64_LIMIT_NANOS):
        limit = _INT64_LIMIT_NANOS[index]
        fits = -limit <= a_nanos < limit and -limit <= b_nanos < limit and -limit <= nanos < limit
    else:
        fits = all(_INT64_MIN <= _value_at(x, scale) <= _INT64_MAX for x in (a_nanos, b_nanos, nanos))
    return _make(nanos, fmt, scale, not fits, None)


def _value_at(nanos: int, scale: int) -> int:
    """The int64Amount value that holds ``nanos`` at ``scale``."""
    shift = scale + 9
    factor: int = 10 ** abs(shift)
    return nanos // factor if shift >= 0 else nanos * factor


def _canonical(nanos: int, fmt: Format) -> str:
    """``CanonicalizeBytes``: no fraction, the largest suffix, the format's suffix family."""
    if nanos == 0:
        return "0"
    if fmt is _BIN:
        if -1024 * _NANO < nanos < 1024 * _NANO or nanos % _NANO:
            fmt = _DEC
        else:
            mantissa, power = nanos // _NANO, 0
            while mantissa % 1024 == 0:
                mantissa //= 1024
                power += 1
            if power < len(_BINARY_SUFFIX):
                return f"{mantissa}{_BINARY_SUFFIX[power]}"
            fmt = _DEC  # Go drops the suffix here; printing the plain number keeps the value
    mantissa, exponent = nanos, -9
    while mantissa % _NANO == 0:
        mantissa //= _NANO
        exponent += 9
    while mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    if fmt is _DEC:
        suffix = _DECIMAL_SUFFIX.get(exponent)
        if suffix is not None:
            return f"{mantissa}{suffix}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def _interpret(suffix: str, text: str) -> tuple[int, int, Format]:
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    if _EXPONENT(suffix):
        exponent = int(suffix[1:])
        if _INT64_MIN <= exponent <= _INT64_MAX:
            return 10, (exponent + 2**31) % 2**32 - 2**31, _EXP  # Go keeps int32(exponent)
    raise QuantityError(ERR_SUFFIX, text)


def _too_large(text: str) -> QuantityError:
    return QuantityError(f"quantity {text!r} is too large: kubedra supports magnitudes below 1e{_MAX_DIGITS}", text)


def _parse(text: str) -> Quantity:  # noqa: C901, PLR0912, PLR0915 - one pass mirroring ParseQuantity's branches
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG, text)
    if text == "0":
        return _make(0, _DEC, 0, False, "0")
    match = _SCAN(text)
    if match is None:
        raise QuantityError(ERR_FORMAT_WRONG, text)
    sign, zeros, num, dot, suffix = match.groups()
    denom = dot[1:] if dot else ""
    has_digits = bool(zeros or num or denom)
    num = num or "0"
    base, exponent, fmt = _interpret(suffix, text)
    if len(num) + len(denom) > _MAX_DIGITS:
        raise _too_large(text)
    digits = num + denom
    value = int(digits)
    if value and base == 10 and len(num) + exponent > _MAX_DIGITS:
        raise _too_large(text)

    # The fast path of ParseQuantity: an int64Amount, exact, maybe reusing the input as String().
    if fmt is _BIN:
        scale = 0
        precision = 15 - len(num) - exponent * 3 // 10 - 1 if not denom else -1
    else:
        scale = exponent
        precision = 18 - len(num) - len(denom)
    if precision >= 0 and scale - len(denom) >= -9:
        scale -= len(denom)
        result = value << exponent if fmt is _BIN else value
        if result <= _INT64_MAX:
            if fmt is _BIN:
                reuse = exponent % 10 == 0 and value & 7 != 0
            else:
                reuse = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
            if sign == "-":
                result = -result
            nanos = result * 10 ** (scale + 9) if result else 0
            return _make(nanos, fmt, scale, False, text if reuse else None)

    # The inf.Dec path: round away from zero to 1n, cap BinarySI at 2^63-1.
    if not has_digits:
        raise QuantityError(ERR_NUMERIC, text)
    if value == 0:
        exp = exponent - len(denom) if base == 10 else -len(denom)
        return _make(0, fmt, exp, True, None)
    if base == 10:
        shift = exponent - len(denom) + 9
        scaled = value
    else:
        shift = 9 - len(denom)
        scaled = value << exponent
    if shift >= 0:
        nanos = scaled * 10**shift
    elif -shift > len(str(scaled)):
        nanos = 1
    else:
        nanos = -(-scaled // 10**-shift)
    exp = -9
    if fmt is _BIN:
        if nanos > _INT64_MAX * _NANO:
            nanos, exp = _INT64_MAX * _NANO, 0
        elif nanos < _NANO:
            fmt = _DEC
    return _make(-nanos if sign == "-" else nanos, fmt, exp, True, None)


_parse_cached = functools.lru_cache(maxsize=1 << 16)(_parse)


def parse_quantity(text: str) -> Quantity:
    """Alias of ``Quantity.parse``."""
    return _parse_cached(text)
