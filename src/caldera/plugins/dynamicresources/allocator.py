"""Structured-parameters allocation (staging dynamic-resource-allocation structured/, the stable
allocator) over numpy device columns.

Devices are rows: `row[d]` is the NodeTable row of the node whose ResourceSlice published device d
(-1: an allNodes slice, -2: a node not in the table), `used[d]` whether an allocated claim holds it.
A request's match mask over all devices (its class's selectors and its own, all true) is evaluated
once per distinct selector set and cached for the run. Filter then counts, per node and with one
`np.bincount`, the free matching devices of each request: a node short of any request's count is
rejected without a per-node loop. Only nodes that pass and whose pod has more than one request go
through the allocator's search (first fit in device order, backtracking as kube's allocateOne
does), which also gives Reserve the devices.

Device order is kube's: pools by (driver, pool name), each pool's devices in the order read.
ExactCount takes `count` free matching devices; All takes every matching device the node can
reach and fails when one of them is in use (zero matching devices is an empty, successful result).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...api.dra import ALL, Device, DeviceResult, DraObjects, Request, ResourceClaim
from ...api.dracel import device_activation, matches


class DraState:
    """The run's DRA objects as columns, shared by every pod's cycle (owned by the scheduler)."""

    def __init__(self, objs: DraObjects):
        self.objs = objs
        order = sorted(range(len(objs.devices)), key=lambda j: (objs.devices[j].driver, objs.devices[j].pool, j))
        self.devices: list[Device] = [objs.devices[j] for j in order]
        self.index = {(d.driver, d.pool, d.name): j for j, d in enumerate(self.devices)}
        self.used = np.zeros(len(self.devices), dtype=bool)
        self._activations: list[dict[str, Any] | None] = [None] * len(self.devices)
        self._masks: dict[tuple[str, ...], np.ndarray] = {}
        self._rows: np.ndarray | None = None
        self._rows_for: tuple[int, int] | None = None
        self.bound: dict[str, list[dict[str, Any]]] = {}     # pod key -> its claims' devices (output)
        for c in objs.claims.values():
            if c.allocation:
                self._mark(c, True)
                nodes = {self.devices[self.index[(x.driver, x.pool, x.device)]].node for x in c.allocation
                         if (x.driver, x.pool, x.device) in self.index} - {None}
                if c.allocated_node is None:      # no status.allocation.nodeSelector: its devices' node
                    c.allocated_node = next(iter(nodes)) if len(nodes) == 1 else None

    # ---- columns -------------------------------------------------------------------------------
    def rows(self, table) -> np.ndarray:
        key = (id(table), len(table))
        if self._rows is None or self._rows_for != key:
            idx = table.index
            self._rows = np.array([-1 if d.node is None else idx.get(d.node, -2) for d in self.devices],
                                  dtype=np.int64)
            self._rows_for = key
        return self._rows

    def mask(self, selectors: tuple[str, ...]) -> np.ndarray:
        m = self._masks.get(selectors)
        if m is None:
            m = np.ones(len(self.devices), dtype=bool)
            for expr in selectors:
                for j in np.flatnonzero(m).tolist():
                    act = self._activations[j]
                    if act is None:
                        act = self._activations[j] = device_activation(self.devices[j])
                    if not matches(expr, act):
                        m[j] = False
            self._masks[selectors] = m
        return m

    def request_mask(self, req: Request) -> np.ndarray:
        cls = self.objs.classes[req.device_class]
        return self.mask(cls.selectors + req.selectors)

    # ---- allocation ------------------------------------------------------------------------------
    def feasible(self, table, claims: list[ResourceClaim], idx: np.ndarray) -> np.ndarray:
        """Per entry of idx: may the claims be allocated there? Exact for one request; a
        necessary condition (each request alone fits) otherwise, completed by `allocate`."""
        rows = self.rows(table)
        n = len(table)
        ok = np.ones(idx.size, dtype=bool)
        local = rows >= 0
        for c in claims:
            for r in c.requests:
                m = self.request_mask(r)
                if r.mode == ALL:
                    busy = m & self.used
                    bad = np.bincount(rows[busy & local], minlength=n)[idx] > 0
                    if (busy & (rows == -1)).any():
                        bad[:] = True
                    ok &= ~bad
                    continue
                free = m & ~self.used
                cnt = np.bincount(rows[free & local], minlength=n)[idx] + int((free & (rows == -1)).sum())
                ok &= cnt >= r.count
        return ok

    def allocate(self, table, claims: list[ResourceClaim], i: int) -> list[list[DeviceResult]] | None:
        """The devices for each claim on node row i (first fit with backtracking), or None."""
        rows = self.rows(table)
        reach = (rows == i) | (rows == -1)
        reqs: list[tuple[int, Request, list[int]]] = []
        for ci, c in enumerate(claims):
            for r in c.requests:
                m = self.request_mask(r) & reach
                cand = np.flatnonzero(m).tolist()
                if r.mode == ALL and (m & self.used).any():
                    return None
                reqs.append((ci, r, cand))
        taken: set[int] = set()
        picks: list[list[int]] = [[] for _ in reqs]

        def place(k: int) -> bool:
            if k == len(reqs):
                return True
            _, r, cand = reqs[k]
            if r.mode == ALL:
                if any(j in taken for j in cand):
                    return False
                picks[k] = list(cand)
                taken.update(cand)
                if place(k + 1):
                    return True
                taken.difference_update(cand)
                return False
            return pick(k, r, cand, 0, r.count)

        def pick(k: int, r: Request, cand: list[int], start: int, left: int) -> bool:
            if left == 0:
                return place(k + 1)
            for pos in range(start, len(cand)):
                j = cand[pos]
                if self.used[j] or j in taken:
                    continue
                taken.add(j)
                picks[k].append(j)
                if pick(k, r, cand, pos + 1, left - 1):
                    return True
                picks[k].pop()
                taken.discard(j)
            return False

        if not place(0):
            return None
        out: list[list[DeviceResult]] = [[] for _ in claims]
        for (ci, r, _), js in zip(reqs, picks):
            for j in js:
                d = self.devices[j]
                out[ci].append(DeviceResult(r.name, d.driver, d.pool, d.name))
        return out

    def _mark(self, c: ResourceClaim, used: bool) -> None:
        for res in c.allocation or []:
            j = self.index.get((res.driver, res.pool, res.device))
            if j is not None:
                self.used[j] = used

    def commit(self, c: ResourceClaim, results: list[DeviceResult], node: str) -> None:
        c.allocation = results
        local = any(self.devices[self.index[(x.driver, x.pool, x.device)]].node is not None for x in results)
        c.allocated_node = node if local else None
        self._mark(c, True)

    def release(self, c: ResourceClaim) -> None:
        self._mark(c, False)
        c.allocation = None
        c.allocated_node = None
