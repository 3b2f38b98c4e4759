"""Incremental indexes over the table's pods, so a cycle touches only pods that matter.

- Label groups: pods with the same (namespace, labels) share a group; an inverted index
  (label key / key=value -> groups) yields the candidate groups of a label selector, so finding
  the pods that match the incoming pod's terms costs O(matching groups), not O(all pods).
- Term groups: pods with (anti-)affinity terms, grouped by their (interned) PodTerms, so the
  terms of existing pods are evaluated once per distinct term set.

Both follow the table through its pod journal (`pod_log`); falling behind the journal's bound,
or a new table, rebuilds them from the table. Node rows are resolved through `table.pod_node`
when asked, so node removal (which renumbers rows) needs no bookkeeping here.
"""
from __future__ import annotations

import numpy as np

from ...state.nodetable import LABELS
from .terms import NO_TERMS, AffinityTerm, PodTerms, pod_terms


class Group:
    """A set of pods (by key) with their node rows in a numpy array kept up to date in O(1)."""

    __slots__ = ("arr", "keys", "labels", "ns", "pos", "size")

    def __init__(self, ns, labels):
        self.ns = ns
        self.labels = labels
        self.pos: dict[str, int] = {}
        self.keys: list[str] = []
        self.arr = np.empty(4, dtype=np.intp)
        self.size = 0

    def add(self, key: str, row: int) -> None:
        if key in self.pos:
            self.arr[self.pos[key]] = row
            return
        if self.size == self.arr.size:
            self.arr = np.concatenate([self.arr, np.empty(self.arr.size, dtype=np.intp)])
        self.arr[self.size] = row
        self.pos[key] = self.size
        self.keys.append(key)
        self.size += 1

    def remove(self, key: str) -> bool:
        j = self.pos.pop(key, None)
        if j is None:
            return False
        last = self.size - 1
        if j != last:
            k2 = self.keys[last]
            self.keys[j] = k2
            self.arr[j] = self.arr[last]
            self.pos[k2] = j
        self.keys.pop()
        self.size = last
        return True

    def reindex(self, pod_node) -> None:
        for j, k in enumerate(self.keys):
            self.arr[j] = pod_node[k]

    def rows(self) -> np.ndarray:
        """Node rows of the members (one entry per pod)."""
        return self.arr[:self.size]


class PodIndex:
    def __init__(self, table):
        self.table = table
        self.pos = -1
        self.node_gen = -1
        self.groups: dict[tuple, Group] = {}
        self.by_kv: dict[tuple[str, str], set[tuple]] = {}
        self.by_key: dict[str, set[tuple]] = {}
        self.term_groups: dict[int, tuple[PodTerms, Group]] = {}   # id(PodTerms) -> (terms, members)
        self.anti_groups: dict[int, tuple[PodTerms, Group]] = {}   # subset with required anti-affinity

    # ---- maintenance -------------------------------------------------------------
    def sync(self) -> PodIndex:
        t = self.table
        changes, end = t.journal_since(self.pos)
        if self.pos == end and self.node_gen == t.layout_generation:
            return self
        if changes is None:
            self._rebuild()
        else:
            for pod, i, delta in changes:
                if delta > 0:
                    self._add(pod, i)
                else:
                    self._remove(pod)
            if self.node_gen != t.layout_generation:   # node rows may have been renumbered
                pn = t.pod_node
                for g in self.groups.values():
                    g.reindex(pn)
                for store in (self.term_groups, self.anti_groups):
                    for _, g in store.values():
                        g.reindex(pn)
        self.pos = end
        self.node_gen = t.layout_generation
        return self

    def _rebuild(self) -> None:
        self.groups.clear()
        self.by_kv.clear()
        self.by_key.clear()
        self.term_groups.clear()
        self.anti_groups.clear()
        for i, ps in enumerate(self.table.pods):
            for p in ps.values():
                self._add(p, i)

    def _add(self, pod, row: int) -> None:
        sig = (pod.namespace, frozenset(pod.labels.items()))
        g = self.groups.get(sig)
        if g is None:
            g = self.groups[sig] = Group(pod.namespace, pod.labels)
            for k, v in pod.labels.items():
                self.by_kv.setdefault((k, v), set()).add(sig)
                self.by_key.setdefault(k, set()).add(sig)
        g.add(pod.key, row)
        if pod.has_affinity or pod.has_anti_affinity:
            terms = pod_terms(pod)
            if terms is not NO_TERMS and not terms.empty:
                for store, want in ((self.term_groups, True), (self.anti_groups, bool(terms.req_anti))):
                    if want:
                        e = store.get(id(terms))
                        if e is None:
                            e = store[id(terms)] = (terms, Group(pod.namespace, None))
                        e[1].add(pod.key, row)

    def _remove(self, pod) -> None:
        sig = (pod.namespace, frozenset(pod.labels.items()))
        g = self.groups.get(sig)
        if g is not None and g.remove(pod.key) and not g.size:
            del self.groups[sig]
            for k, v in pod.labels.items():
                s = self.by_kv.get((k, v))
                if s is not None:
                    s.discard(sig)
                    if not s:
                        del self.by_kv[(k, v)]
                s = self.by_key.get(k)
                if s is not None:
                    s.discard(sig)
                    if not s:
                        del self.by_key[k]
        if pod.has_affinity or pod.has_anti_affinity:
            terms = pod_terms(pod)
            for store in (self.term_groups, self.anti_groups):
                e = store.get(id(terms))
                if e is not None and e[1].remove(pod.key) and not e[1].size:
                    del store[id(terms)]

    # ---- queries -----------------------------------------------------------------
    def candidates(self, term: AffinityTerm):
        """Label groups that may match the term's selector (a superset; callers check)."""
        sel = term.selector
        if sel is None:
            return ()
        best = None
        for r in sel.requirements:
            if r.op == "In":
                if len(r.values) == 1:
                    c = self.by_kv.get((r.key, r.values[0]), ())
                else:
                    c = set()
                    for v in r.values:
                        c |= self.by_kv.get((r.key, v), set())
            elif r.op == "Exists":
                c = self.by_key.get(r.key, ())
            else:
                continue
            if best is None or len(c) < len(best):
                best = c
                if not best:
                    return ()
        if best is None:
            return list(self.groups.values())
        groups = self.groups
        return [groups[s] for s in best]

    def matching_groups(self, terms, ns_labels) -> list[Group]:
        """Label groups whose pods match every term in `terms` (empty terms: none)."""
        if not terms:
            return []
        cands = min((self.candidates(t) for t in terms), key=len)
        out = []
        for g in cands:
            ns, labels = g.ns, g.labels
            for t in terms:
                if not t.matches(ns, labels, ns_labels):
                    break
            else:
                out.append(g)
        return out


def get_index(table) -> PodIndex:
    """The table's shared PodIndex, brought up to date."""
    return table.shared("interpodaffinity.index", PodIndex).sync()


def domains(table, key: str):
    """(codes[N] int64 with -1 where node lacks `key`, number of distinct values) for a topology key.
    A node whose labels change gets its value's code (a new value gets the next code; codes of
    values no node has any more stay allocated, their domains simply count nothing)."""
    def build():
        vals = table.label_values(key)
        m: dict[str, int] = {}
        codes = np.fromiter((-1 if v is None else m.setdefault(v, len(m)) for v in vals),
                            dtype=np.int64, count=len(vals))
        return codes, len(m), m

    def update(val, rows):
        codes, _, m = val       # m is private: extended in place; codes are copied when they change
        new = {i: -1 if (v := table.nodes[i].labels.get(key)) is None else m.setdefault(v, len(m))
               for i in rows}
        if all(codes[i] == c for i, c in new.items()):
            return codes, len(m), m
        codes = codes.copy()
        for i, c in new.items():
            codes[i] = c
        return codes, len(m), m
    codes, nd, _ = table.cached(("ipa.domains", key), build, on=LABELS, update=update)
    return codes, nd


def domain_counts(table, key: str, rows: np.ndarray, weights=None) -> np.ndarray:
    """Per domain of `key`: sum of weights (default 1) of entries whose node row has the key."""
    codes, nd = domains(table, key)
    c = codes[rows]
    ok = c >= 0
    if weights is None:
        return np.bincount(c[ok], minlength=nd).astype(np.int64)
    return np.bincount(c[ok], weights=np.asarray(weights)[ok], minlength=nd).astype(np.int64)
