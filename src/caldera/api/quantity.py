"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource semantics).

A quantity is `<sign><digits>[.<digits>]<suffix>` where suffix is a binary SI suffix
(Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI suffix (n, u, m, "", k, M, G, T, P, E) or a decimal
exponent (e3, E-2). Values are kept exactly as Fractions; the scheduler uses integers:
CPU in millicores (MilliValue) and everything else in base units (Value), both rounded up
as apimachinery does.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_RE = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$")


class QuantityError(ValueError):
    pass


def parse_quantity(value) -> Fraction:
    """Parse a quantity (string, int or float as YAML may give it) into an exact Fraction."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {value!r}: expected a string such as '500m' or '1Gi'")
    s = value.strip()
    m = _RE.match(s)
    if not m:
        raise QuantityError(f"invalid quantity {value!r}: expected e.g. '500m', '1.5Gi', '1e3', '2k'")
    sign, num, suffix, exp = m.groups()
    q = Fraction(num)
    if suffix is not None:
        q *= _BINARY.get(suffix) or _DECIMAL[suffix]
    elif exp is not None:
        e = int(exp)
        if abs(e) > 30:
            raise QuantityError(f"invalid quantity {value!r}: exponent out of range")
        q *= Fraction(10) ** e
    return -q if sign == "-" else q


def milli_value(q: Fraction) -> int:
    """MilliValue(): value * 1000 rounded up (as apimachinery's ScaledValue does)."""
    return math.ceil(q * 1000)


def int_value(q: Fraction) -> int:
    """Value(): the value rounded up to an integer."""
    return math.ceil(q)


def resource_value(name: str, value) -> int:
    """The integer the scheduler uses for resource `name`: millicores for cpu, else Value()."""
    q = parse_quantity(value)
    return milli_value(q) if name == "cpu" else int_value(q)


def format_value(name: str, v: int) -> str:
    """A short human form of an integer resource value (for tables and messages)."""
    if name == "cpu":
        return f"{v // 1000}" if v % 1000 == 0 else f"{v}m"
    if name in ("memory", "ephemeral-storage") and v >= 2**20:
        for suf, f in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if v >= f and v % (f // 1024) == 0:
                x = v / f
                return f"{x:g}{suf}"
    return str(v)
