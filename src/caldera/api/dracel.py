"""CEL device selectors as Kubernetes defines them for DRA (k8s.io/dynamic-resource-allocation
cel/compile.go), on cel-python: compiled once per expression, evaluated once per (expression,
device) and cached by the allocator, so a selector costs one evaluation per device for a run.

The variable is `device` with exactly three fields (v1.35, DRAConsumableCapacity off, so
`device.allowMultipleAllocations` does not compile):
- `device.driver`: string;
- `device.attributes["<domain>"].<name>`: int, bool, string, or a semver for version attributes
  (unqualified names are in the driver's domain; a domain the device has no attribute in is an
  empty map, so `"x" in device.attributes["d"]` is false and `.x` a runtime error);
- `device.capacity["<domain>"].<name>`: a Quantity.

Kubernetes' CEL libraries for them (k8s.io/apiserver pkg/cel/library quantity.go, semverlib.go):
`quantity(s)`, `isQuantity(s)`, `q.compareTo(q)`, `q.isGreaterThan(q)`, `q.isLessThan(q)`,
`q.asInteger()`, `q.isInteger()`, `q.asApproximateFloat()`, `q.sign()`, `q.add(q|int)`,
`q.sub(q|int)`, `==` by value; `semver(s[, normalize])`, `isSemver(s[, normalize])`,
`v.compareTo(v)`, `v.isGreaterThan(v)`, `v.isLessThan(v)`, `v.major()`, `.minor()`, `.patch()`.

A selector that fails at run time (a missing attribute, a bad quantity string, an operator with
no overload) raises CelRuntimeError with cel-go's wording for the common cases; the allocator
turns it into kube's "CEL runtime error". cel-python has no type checker: an expression kube
rejects at compile time for its types only (`device.capacity["d"].x > 1`) is refused here at run
time instead.
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache, total_ordering
from typing import Any

from ..errors import InputError
from .quantity import QuantityError, parse_quantity

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
DEVICE_FIELDS = ("driver", "attributes", "capacity")


class CelRuntimeError(Exception):
    """A selector failed while evaluating (kube: the allocation fails with a CEL runtime error)."""


# ---- Quantity ------------------------------------------------------------------------------------
class Quantity:
    """resource.Quantity in CEL: an exact value; == compares values (Quantity.Equal)."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction):
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            raise TypeError("no such overload")
        return self.value == other.value

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


_QUANTITY_FORMAT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def parse_cel_quantity(s: str) -> Quantity:
    """resource.ParseQuantity, with its two errors (ErrFormatWrong, ErrSuffix)."""
    try:
        return Quantity(Fraction(parse_quantity(s)))
    except (QuantityError, ValueError, InputError):
        if re.match(_QUANTITY_FORMAT, s):
            raise CelRuntimeError("unable to parse quantity's suffix") from None
        raise CelRuntimeError(f"quantities must match the regular expression '{_QUANTITY_FORMAT}'") from None


# ---- Semver (github.com/blang/semver/v4) ---------------------------------------------------------
_NUM = r"(0|[1-9][0-9]*)"
_SEMVER = re.compile(rf"^{_NUM}\.{_NUM}\.{_NUM}(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
                     r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")


@total_ordering
class Semver:
    """A semantic version; ordering is semver 2.0.0 precedence (build metadata ignored)."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[str, ...], text: str = ""):
        self.major, self.minor, self.patch, self.pre, self.text = major, minor, patch, pre, text

    def _key(self) -> tuple[Any, ...]:
        # a version without pre-release parts is greater than one with them; numeric identifiers
        # sort below alphanumeric ones and by value
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def compare(self, other: Semver) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            raise TypeError("no such overload")
        return self.compare(other) == 0

    def __lt__(self, other: object) -> bool:
        raise TypeError("no such overload")

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __repr__(self) -> str:
        return f"Semver({self.major}.{self.minor}.{self.patch}{'-' + '.'.join(self.pre) if self.pre else ''})"


def semver_error(s: str) -> str | None:
    """blang/semver Parse's objection to s, or None when s is a valid version."""
    m = _SEMVER.match(s)
    if m is None:
        if len(s.split("+", 1)[0].split("-", 1)[0].split(".")) != 3:
            return "No Major.Minor.Patch elements found"
        return f"invalid semantic version {s!r}"
    for p in (m.group(4) or "").split(".") if m.group(4) else ():
        if p.isdigit() and len(p) > 1 and p[0] == "0":
            return f"Numeric PreRelease version must not contain leading zeroes {p!r}"
    return None


def parse_semver(s: str, normalize: bool = False) -> Semver:
    if normalize:
        s = _normalize(s)
    err = semver_error(s)
    if err is not None:
        raise CelRuntimeError(err)
    m = _SEMVER.match(s)
    assert m is not None
    return Semver(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                  tuple(m.group(4).split(".")) if m.group(4) else (), s)


def _normalize(s: str) -> str:
    """semverlib.go normalizeAndParse: drop a leading v and leading zeros, pad to three parts."""
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not p[0].isdigit():
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise CelRuntimeError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# ---- the function library --------------------------------------------------------------------------
def _int(v: int) -> Any:
    from celpy import celtypes
    return celtypes.IntType(v)


def _bool(v: bool) -> Any:
    from celpy import celtypes
    return celtypes.BoolType(v)


def _str_arg(x: Any) -> str:
    if not isinstance(x, str):
        raise TypeError("no such overload")
    return str(x)


def _quantity(s: Any) -> Quantity:
    return parse_cel_quantity(_str_arg(s))


def _is_quantity(s: Any) -> Any:
    try:
        parse_cel_quantity(_str_arg(s))
    except CelRuntimeError:
        return _bool(False)
    return _bool(True)


def _semver(s: Any, normalize: Any = False) -> Semver:
    return parse_semver(_str_arg(s), bool(normalize))


def _is_semver(s: Any, normalize: Any = False) -> Any:
    try:
        parse_semver(_str_arg(s), bool(normalize))
    except CelRuntimeError:
        return _bool(False)
    return _bool(True)


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise TypeError("no such overload")


def _q(a: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return a


def _v(a: Any) -> Semver:
    if not isinstance(a, Semver):
        raise TypeError("no such overload")
    return a


def _operand(b: Any) -> Fraction:
    if isinstance(b, Quantity):
        return b.value
    if isinstance(b, int) and not isinstance(b, bool):
        return Fraction(int(b))
    raise TypeError("no such overload")


def _as_integer(a: Any) -> Any:
    v = _q(a).value
    if v.denominator != 1 or not INT64_MIN <= v.numerator <= INT64_MAX:
        raise CelRuntimeError("cannot convert value to integer")
    return _int(v.numerator)


def _is_integer(a: Any) -> Any:
    v = _q(a).value
    return _bool(v.denominator == 1 and INT64_MIN <= v.numerator <= INT64_MAX)


def _as_float(a: Any) -> Any:
    from celpy import celtypes
    try:
        return celtypes.DoubleType(float(_q(a).value))
    except OverflowError:
        return celtypes.DoubleType(float("inf") if _q(a).value > 0 else float("-inf"))


def _sign(a: Any) -> Any:
    v = _q(a).value
    return _int((v > 0) - (v < 0))


def _matches(s: Any, pattern: Any) -> Any:
    """string.matches(re): RE2 semantics, a match anywhere in the string (celpy anchors it)."""
    return _bool(re.search(_str_arg(pattern), _str_arg(s)) is not None)


FUNCTIONS: dict[str, Any] = {
    "matches": _matches,
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": lambda a, b: _int(_cmp(a, b)),
    "isGreaterThan": lambda a, b: _bool(_cmp(a, b) == 1),
    "isLessThan": lambda a, b: _bool(_cmp(a, b) == -1),
    "asInteger": _as_integer,
    "isInteger": _is_integer,
    "asApproximateFloat": _as_float,
    "sign": _sign,
    "add": lambda a, b: Quantity(_q(a).value + _operand(b)),
    "sub": lambda a, b: Quantity(_q(a).value - _operand(b)),
    "major": lambda a: _int(_v(a).major),
    "minor": lambda a: _int(_v(a).minor),
    "patch": lambda a: _int(_v(a).patch),
}


# ---- compiling -------------------------------------------------------------------------------------
def _device_fields(tree: Any) -> list[str]:
    """The fields the expression selects on the `device` variable (device.<field>)."""
    import lark
    out = []
    for t in tree.iter_subtrees():
        if t.data != "member_dot" or len(t.children) != 2:
            continue
        inner, name = t.children
        if isinstance(inner, lark.Tree) and inner.data == "member" and len(inner.children) == 1:
            prim = inner.children[0]
            if isinstance(prim, lark.Tree) and prim.data == "primary" and len(prim.children) == 1:
                ident = prim.children[0]
                if isinstance(ident, lark.Tree) and ident.data == "ident" and \
                        str(ident.children[0]) == "device":
                    out.append(str(name))
    return out


_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})


def _undeclared(tree: Any) -> str | None:
    """The first function or method the expression calls that this environment does not have
    (kube: a compile error `undeclared reference to '<name>'`)."""
    from celpy.evaluation import base_functions
    known = _MACROS | set(FUNCTIONS) | set(base_functions)
    for t in tree.iter_subtrees_topdown():
        if t.data == "ident_arg" and t.children:
            name = str(t.children[0])
        elif t.data == "member_dot_arg" and len(t.children) > 1:
            name = str(t.children[1])
        else:
            continue
        if name not in known:
            return name
    return None


@lru_cache(maxsize=4096)
def _compile(expr: str) -> Any:
    import celpy
    env = celpy.Environment()
    ast = env.compile(expr)
    for f in _device_fields(ast):
        if f not in DEVICE_FIELDS:
            raise ValueError(f"undefined field '{f}'")
    name = _undeclared(ast)
    if name is not None:
        raise ValueError(f"undeclared reference to '{name}' (caldera's CEL has the standard functions and "
                         "Kubernetes' quantity and semver libraries)")
    return env.program(ast, functions=FUNCTIONS)


def compile_selector(expr: str, what: str = "selector", obj: str | None = None) -> Any:
    """The compiled program, or an InputError naming the field when it does not compile."""
    try:
        return _compile(expr)
    except Exception as e:   # celpy raises its parse errors (CELParseError, lark errors)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{what}: CEL expression {expr!r} does not compile: {first}", obj=obj) from None


class _DomainMap(dict):  # type: ignore[type-arg]
    """device.attributes / device.capacity: a missing domain is an empty map (compile.go's
    newStringInterfaceMapWithDefault)."""

    def __missing__(self, key: Any) -> Any:
        from celpy import celtypes
        return celtypes.MapType({})


def device_activation(device: Any) -> dict[str, Any]:
    from celpy import celtypes

    def value(v: Any) -> Any:
        if isinstance(v, bool):
            return celtypes.BoolType(v)
        if isinstance(v, int):
            return celtypes.IntType(v)
        if isinstance(v, Semver):
            return v
        return celtypes.StringType(v)

    attrs = _DomainMap({celtypes.StringType(d): celtypes.MapType(
        {celtypes.StringType(k): value(v) for k, v in m.items()}) for d, m in device.attributes.items()})
    caps = _DomainMap({celtypes.StringType(d): celtypes.MapType(
        {celtypes.StringType(k): Quantity(Fraction(v)) for k, v in m.items()}) for d, m in device.capacity.items()})
    dev = celtypes.MapType({celtypes.StringType("driver"): celtypes.StringType(device.driver),
                            celtypes.StringType("attributes"): attrs,
                            celtypes.StringType("capacity"): caps})
    return {"device": dev}


_NO_KEY = re.compile(r"no such member in mapping: '(.*)'")


def _message(e: Exception) -> str:
    """cel-go's wording for celpy's common evaluation errors."""
    if isinstance(e.__cause__, CelRuntimeError):
        return str(e.__cause__)
    args = getattr(e, "args", ())
    msg = str(args[0]) if args else str(e)
    m = _NO_KEY.search(msg)
    if m:
        return f"no such key: {m.group(1)}"
    if msg == "no such key" and isinstance(e.__cause__, KeyError) and e.__cause__.args:
        return f"no such key: {e.__cause__.args[0]}"
    if "no matching overload" in msg or "no such overload" in msg or "return error" in msg:
        return "no such overload"
    if "divide by zero" in msg:
        return "division by zero"
    return msg


def evaluate(expr: str, activation: dict[str, Any]) -> bool:
    """The selector's value for one device; CelRuntimeError when it fails or is not a bool."""
    from celpy import celtypes
    try:
        r = _compile(expr).evaluate(activation)
    except CelRuntimeError:
        raise
    except Exception as e:
        raise CelRuntimeError(_message(e)) from None
    if not isinstance(r, celtypes.BoolType):
        raise CelRuntimeError(f"CEL result of type {type(r).__name__} could not be converted to bool")
    return bool(r)


def matches(expr: str, activation: dict[str, Any]) -> bool:
    """evaluate(), with a runtime error taken as no match."""
    try:
        return evaluate(expr, activation)
    except CelRuntimeError:
        return False
