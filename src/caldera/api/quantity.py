"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource semantics).

Grammar (as apimachinery's ParseQuantity scans it):

    quantity ::= [+-] digits [ "." digits ] suffix        (every part may be empty, "" is not)
    suffix   ::= "" | n u m k M G T P E                    (decimal SI)
               | Ki Mi Gi Ti Pi Ei                         (binary SI)
               | (e|E) [+-] digits                          (decimal exponent)

Parsing is exact: a value is kept as an integer number of nano-units, rounded away from zero to
the nearest 1n as apimachinery does, and binary-SI values are capped at 2^63-1. The scheduler
reads quantities as int64: CPU as MilliValue (millicores), everything else as Value; both round
up (away from zero) like Quantity.ScaledValue. Conversions saturate at the int64 range instead of
wrapping. Sums of quantities (a pod's containers) must be taken in nano-units and converted once
(`nano_to_units`), which is what kube does when it adds Quantities before calling MilliValue.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

NANO = 10**9
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
MAX_BINARY_NANO = INT64_MAX * NANO          # apimachinery's maxAllowed cap for BinarySI values

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[+-]?[0-9]+")
_SATURATE_POW10 = 40                        # beyond 10^40 nano the value only ever saturates


class QuantityError(ValueError):
    pass


@lru_cache(maxsize=16384)
def _parse_nano(s: str) -> int:
    """ParseQuantity(s) as an exact integer number of nano-units."""
    if not s:
        raise QuantityError("invalid quantity '': a quantity cannot be empty")
    m = _SCAN.fullmatch(s)
    if m is None:
        raise QuantityError(f"invalid quantity {s!r}: quantities must match "
                            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', e.g. '500m', '1.5Gi', '1e3'")
    sign, num, denom, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    pow2 = 0
    binary = False
    if suffix in _DECIMAL:
        pow10 = _DECIMAL[suffix]
    elif suffix in _BINARY:
        pow2, binary = _BINARY[suffix], True
        pow10 = 0
    elif len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix[1:]):
        pow10 = int(suffix[1:])
        if not INT64_MIN <= pow10 <= INT64_MAX:
            raise QuantityError(f"invalid quantity {s!r}: exponent out of range")
    else:
        raise QuantityError(f"invalid quantity {s!r}: unknown suffix {suffix!r}; use one of "
                            "n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3")
    mantissa = int(num + denom) if (num or denom) else 0
    if mantissa == 0:
        return 0
    mantissa <<= pow2
    p = pow10 - len(denom) + 9              # value in nano-units = mantissa * 10^p
    nano: int                               # (int ** int is typed Any: a negative power is a float)
    if p >= 0:
        nano = mantissa * 10 ** min(p, _SATURATE_POW10)
    elif -p > len(str(mantissa)) + 1:
        nano = 1                            # below 1n: rounded up to the smallest unit
    else:
        d = 10 ** (-p)
        nano = -(-mantissa // d)            # round up (magnitude) to whole nano-units
    if binary and nano > MAX_BINARY_NANO:
        nano = MAX_BINARY_NANO
    return -nano if sign == "-" else nano


def parse_nano(value: object) -> int:
    """A quantity as it appears in a manifest (string, YAML int/float or null) -> nano-units.

    Strings are trimmed as Quantity.UnmarshalJSON does; null is the zero quantity."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}: expected a string such as '500m' or '1Gi'")
    if isinstance(value, int):
        return value * NANO
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}")
        return _parse_nano(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {value!r}: expected a string such as '500m' or '1Gi'")
    return _parse_nano(value.strip())


def parse_quantity_strict(s: str) -> int:
    """apimachinery's ParseQuantity exactly (no trimming), in nano-units."""
    if not isinstance(s, str):
        raise QuantityError(f"invalid quantity {s!r}")
    return _parse_nano(s)


def _scaled(nano: int, unit: int) -> int:
    """ceil(|nano| / unit) with the sign of nano (Quantity.ScaledValue), saturated to int64."""
    q = -(-abs(nano) // unit)
    v = -q if nano < 0 else q
    return INT64_MAX if v > INT64_MAX else INT64_MIN if v < INT64_MIN else v


def nano_to_milli(nano: int) -> int:
    """Quantity.MilliValue()."""
    return _scaled(nano, 10**6)


def nano_to_value(nano: int) -> int:
    """Quantity.Value()."""
    return _scaled(nano, NANO)


def nano_to_units(name: str, nano: int) -> int:
    """The integer the scheduler uses for resource `name`: MilliValue for cpu, else Value."""
    return nano_to_milli(nano) if name == "cpu" else nano_to_value(nano)


def resource_value(name: str, value: object) -> int:
    """Parse one manifest quantity straight to scheduler units (cpu: millicores, else Value)."""
    return nano_to_units(name, parse_nano(value))


# ---- Fraction API (exact values) ---------------------------------------------------------------
def parse_quantity(value: object) -> Fraction:
    """A manifest quantity as an exact Fraction of base units (after apimachinery's 1n rounding)."""
    return Fraction(parse_nano(value), NANO)


