"""The typed plugin contract (framework/protocols.py) matches what the framework dispatches on
(config.types.POINT_METHODS) and what the in-tree plugins implement.

mypy checks annotated plugins against the Protocols (see the example plugin); the in-tree
plugins' methods are mostly unannotated, so their arity is checked here."""
from __future__ import annotations

import inspect

import pytest

from caldera.config.types import EXTENSION_POINTS, POINT_METHODS, class_implements
from caldera.framework import protocols
from caldera.framework.protocols import POINT_PROTOCOLS, EnqueueExtensions, NormalizeScorePlugin
from caldera.plugins.registry import IN_TREE


def _protocol_methods(proto: type) -> set[str]:
    return {n for n in proto.__dict__ if not n.startswith("_") and callable(proto.__dict__[n])}


def _positional(fn) -> int:
    """Positional parameters after self (a method may add optional ones)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def test_every_extension_point_has_protocols_with_its_methods():
    assert set(POINT_PROTOCOLS) == set(EXTENSION_POINTS)
    for point, methods in POINT_METHODS.items():
        declared = set().union(*(_protocol_methods(p) for p in POINT_PROTOCOLS[point]))
        assert set(methods) <= declared, point


@pytest.mark.parametrize("name", sorted(IN_TREE))
def test_in_tree_plugins_match_the_protocol_arity(name):
    cls = IN_TREE[name]
    checked = 0
    for point in EXTENSION_POINTS:
        if not class_implements(cls, point):
            continue
        for proto in POINT_PROTOCOLS[point]:
            methods = _protocol_methods(proto)
            if not all(getattr(cls, m, None) is not None for m in methods):
                continue        # the other Filter alternative
            for m in methods:
                want = _positional(getattr(proto, m))
                assert _positional(getattr(cls, m)) == want, f"{name}.{m}: expected {want} positional parameters"
                checked += 1
    extra = {"normalize_score": NormalizeScorePlugin, "events_to_register": EnqueueExtensions}
    for m, proto in extra.items():
        if getattr(cls, m, None) is not None:
            assert _positional(getattr(cls, m)) == _positional(getattr(proto, m)), f"{name}.{m}"
    assert checked, f"{name} joins no extension point"


def test_protocols_are_exported_names():
    for n in ("Handle", "FilterPlugin", "ScorePlugin", "NodeRows", "NodeScores", "NodeMask"):
        assert hasattr(protocols, n)
