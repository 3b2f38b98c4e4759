"""Node selectors evaluated as boolean masks over all nodes of the table.

Per label key the table caches an inverted index (value -> node rows) and parsed integers (for
Gt/Lt), so a requirement costs a few numpy operations whatever the node count. The masks returned
may be cached by the table: never mutate them.
"""
from __future__ import annotations

import numpy as np

from ...api.selectors import NodeSelector, NodeSelectorTerm, Requirement, go_int
from ...state.nodetable import LABELS


def _inverted(table, key: str) -> dict:
    """Value of label `key` -> node rows having it. A node whose labels change moves its row
    between two entries (the dict is private to this module and updated in place; the row
    arrays are replaced, never mutated)."""
    def build():
        vals = table.label_values(key).tolist()
        inv: dict[str, list[int]] = {}
        for i, v in enumerate(vals):
            if v is not None:
                inv.setdefault(v, []).append(i)
        return {v: np.array(ix, dtype=np.intp) for v, ix in inv.items()}, vals

    def update(val, rows):
        inv, vals = val
        for i in rows:
            old, new = vals[i], table.nodes[i].labels.get(key)
            if old == new:
                continue
            vals[i] = new
            if old is not None:
                ix = inv[old]
                ix = ix[ix != i]
                if ix.size:
                    inv[old] = ix
                else:
                    del inv[old]
            if new is not None:
                ix = inv.get(new)
                inv[new] = np.array([i], dtype=np.intp) if ix is None else np.sort(np.append(ix, i))
        return val
    return table.cached(("nodeaffinity.inv", key), build, on=LABELS, update=update)[0]


def _ints(table, key: str):
    def parse(v):
        return go_int(v) if v is not None else None

    def build():
        vals = table.label_values(key).tolist()
        ok = np.zeros(len(vals), dtype=bool)
        out = np.zeros(len(vals), dtype=np.int64)
        for i, v in enumerate(vals):
            x = parse(v)
            if x is not None:
                ok[i], out[i] = True, x
        return ok, out

    def update(val, rows):
        ok, out = val[0].copy(), val[1].copy()
        for i in rows:
            x = parse(table.nodes[i].labels.get(key))
            ok[i], out[i] = (True, x) if x is not None else (False, 0)
        return ok, out
    return table.cached(("nodeaffinity.int", key), build, on=LABELS, update=update)


def requirement_mask(table, r: Requirement) -> np.ndarray:
    """Nodes whose labels satisfy a (parsable) label requirement. Never mutate the result."""
    op = r.op
    if op in ("In", "NotIn"):
        inv = _inverted(table, r.key)
        m = np.zeros(len(table), dtype=bool)
        for v in r.values:
            ix = inv.get(v)
            if ix is not None:
                m[ix] = True
        return m if op == "In" else ~m
    if op == "Exists":
        return table.has_label(r.key)
    if op == "DoesNotExist":
        return ~table.has_label(r.key)
    ok, ints = _ints(table, r.key)
    rv = go_int(r.values[0])
    return ok & (ints > rv) if op == "Gt" else ok & (ints < rv)


def _field_mask(table, r: Requirement) -> np.ndarray:
    i = table.index.get(r.values[0])
    m = np.zeros(len(table), dtype=bool)
    if i is not None:
        m[i] = True
    return m if r.op == "In" else ~m


def term_mask(table, term: NodeSelectorTerm, parses: bool = True) -> np.ndarray:
    """Nodes matching one node selector term; an empty or unparsable term matches none."""
    if not parses:
        return np.zeros(len(table), dtype=bool)
    m: np.ndarray | None = None
    for r in term.expressions:
        x = requirement_mask(table, r)
        m = x if m is None else m & x
    for r in term.fields:
        x = _field_mask(table, r)
        m = x if m is None else m & x
    if m is None:               # an empty term
        return np.zeros(len(table), dtype=bool)
    return m


def selector_mask(table, sel: NodeSelector, parses=None) -> np.ndarray:
    """Terms ORed; no terms matches no node."""
    acc = np.zeros(len(table), dtype=bool)
    for k, t in enumerate(sel.terms):
        acc |= term_mask(table, t, True if parses is None else parses[k])
    return acc


def labels_mask(table, labels: dict) -> np.ndarray:
    """spec.nodeSelector: every pair present with an equal value."""
    m = np.ones(len(table), dtype=bool)
    for k, v in labels.items():
        m &= requirement_mask(table, Requirement(k, "In", (v,)))
    return m
