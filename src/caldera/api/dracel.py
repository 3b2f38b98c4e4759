"""CEL device selectors (cel-python): compiled once per expression, evaluated once per
(expression, device) and cached, so a selector costs one evaluation per device for a whole run.

The variable is `device`: `device.driver`, `device.attributes["<domain>"].<name>` (unqualified
attribute names are in the driver's domain), `device.capacity["<domain>"].<name>` (an integer here:
Kubernetes' quantity library - quantity(), compareTo(), isGreaterThan() - is not available).
Differences from kube: a selector that fails at run time (a missing attribute) does not match the
device instead of failing the pod's scheduling with a CEL runtime error.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import InputError


@lru_cache(maxsize=4096)
def _compile(expr: str) -> Any:
    import celpy
    env = celpy.Environment()
    return env.program(env.compile(expr))


def compile_selector(expr: str, what: str = "selector", obj: str | None = None) -> Any:
    """The compiled program, or an InputError naming the field when it does not compile."""
    try:
        return _compile(expr)
    except Exception as e:   # celpy raises its parse errors (CELParseError, lark errors)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{what}: CEL expression {expr!r} does not compile: {first}", obj=obj) from None


def device_activation(device: Any) -> dict[str, Any]:
    import celpy
    return {"device": celpy.json_to_cel({"driver": device.driver, "attributes": device.attributes,
                                         "capacity": device.capacity, "allowMultipleAllocations": False})}


def matches(expr: str, activation: dict[str, Any]) -> bool:
    try:
        r = _compile(expr).evaluate(activation)
    except Exception:
        return False
    return bool(r) if isinstance(r, bool) or type(r).__name__ == "BoolType" else False
