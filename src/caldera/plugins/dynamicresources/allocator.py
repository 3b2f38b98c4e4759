"""Structured-parameters allocation over numpy device columns: kube v1.35's "incubating" allocator
(staging dynamic-resource-allocation structured/internal/incubating), the one kube-scheduler uses
with v1.35's default gates (DRAAdminAccess and DRAPrioritizedList on).

Devices are rows in kube's order (pools by (driver, pool name), each pool's devices in the order
read). `row[d]` is the NodeTable row of the node whose ResourceSlice published device d (-1: an
allNodes slice, -2: a node not in the table, -3: a slice with a nodeSelector, whose nodes are
the column `selnodes[sel[d]]`). `used[d]`: an allocated claim holds the device (admin-access
results do not count). A request's selectors (its class's, then its own) are evaluated once per
device for the run; the outcome is True, False or a CEL runtime error.

Filter counts, per node and with one `np.bincount` (plus one product for nodeSelector slices) per
request, the free matching devices the node can reach: for a pod with one plain request this is
the exact answer. Other pods (several requests or claims, firstAvailable, constraints) are checked
that way first (each request alone, any subrequest) and then searched device by device on the
nodes that pass, as kube's allocateOne does: claims, requests, subrequests in order, devices
first fit with backtracking, matchAttribute constraints checked as devices are added.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...api.dra import ALL, Constraint, Device, DeviceResult, DraObjects, Request, ResourceClaim
from ...api.dracel import CelRuntimeError, Semver, device_activation, evaluate

MAX_RESULTS = 32           # resourceapi.AllocationResultsMaxSize
_UNKNOWN, _FALSE, _TRUE, _ERROR = 0, 1, 2, 3


class AllocationError(Exception):
    """Allocation cannot go on (kube: Filter returns an Error status with this text)."""


class _MaxSize(Exception):
    """errAllocationResultMaxSizeExceeded."""


class DraState:
    """The run's DRA objects as columns, shared by every pod's cycle (owned by the scheduler)."""

    def __init__(self, objs: DraObjects):
        self.objs = objs
        order = sorted(range(len(objs.devices)), key=lambda j: (objs.devices[j].driver, objs.devices[j].pool, j))
        self.devices: list[Device] = [objs.devices[j] for j in order]
        self.index = {(d.driver, d.pool, d.name): j for j, d in enumerate(self.devices)}
        self.used = np.zeros(len(self.devices), dtype=bool)
        self._activations: list[dict[str, Any] | None] = [None] * len(self.devices)
        self._outcomes: dict[str, np.ndarray] = {}            # expr -> per-device outcome
        self._errors: dict[tuple[str, int], str] = {}
        self._masks: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[np.ndarray, np.ndarray]] = {}
        self._rows: np.ndarray | None = None
        self._rows_for: tuple[int, int] | None = None
        self._selnodes: np.ndarray | None = None
        sels: dict[int, int] = {}
        self.selectors: list[Any] = []
        self.sel = np.full(len(self.devices), -1, dtype=np.int64)
        for j, d in enumerate(self.devices):
            if d.selector is not None:
                k = sels.setdefault(id(d.selector), len(self.selectors))
                if k == len(self.selectors):
                    self.selectors.append(d.selector)
                self.sel[j] = k
        self.bound: dict[str, list[dict[str, Any]]] = {}     # pod key -> its claims' devices (output)
        for c in objs.claims.values():
            if c.allocation:
                self._mark(c, True)
                if c.allocated_node is None and c.node_selector is None:   # its devices' node
                    nodes = {self.devices[self.index[(x.driver, x.pool, x.device)]].node for x in c.allocation
                             if (x.driver, x.pool, x.device) in self.index} - {None}
                    c.allocated_node = next(iter(nodes)) if len(nodes) == 1 else None

    # ---- columns -------------------------------------------------------------------------------
    def rows(self, table) -> np.ndarray:
        key = (id(table), len(table))
        if self._rows is None or self._rows_for != key:
            idx = table.index
            self._rows = np.array([-3 if d.selector is not None else -1 if d.node is None else idx.get(d.node, -2)
                                   for d in self.devices], dtype=np.int64)
            self._rows_for = key
            self._selnodes = None
        return self._rows

    def forget_rows(self) -> None:
        """The table's rows moved (a node joined or left): `rows` maps the devices again."""
        self._rows = None

    def selnodes(self, table) -> np.ndarray:
        """[selector, node row]: the nodes each ResourceSlice nodeSelector matches."""
        self.rows(table)
        if self._selnodes is None:
            from ..nodeaffinity.masks import selector_mask
            self._selnodes = np.array([selector_mask(table, s) for s in self.selectors], dtype=bool) \
                if self.selectors else np.zeros((0, len(table)), dtype=bool)
        return self._selnodes

    def reach(self, table, i: int) -> np.ndarray:
        """The devices node row i can use."""
        rows = self.rows(table)
        m = (rows == i) | (rows == -1)
        if self.selectors:
            sn = self.selnodes(table)[:, i]
            m |= (rows == -3) & sn[np.maximum(self.sel, 0)]
        return m

    def counts(self, table, m: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Per entry of idx: how many devices of mask m the node can reach."""
        rows = self.rows(table)
        n = len(table)
        local = m & (rows >= 0)
        out = np.bincount(rows[local], minlength=n)[idx] + int((m & (rows == -1)).sum())
        if self.selectors:
            per_sel = np.bincount(self.sel[m & (rows == -3)], minlength=len(self.selectors))
            out = out + (per_sel @ self.selnodes(table).astype(np.int64))[idx]
        return out

    # ---- selectors -------------------------------------------------------------------------------
    def _outcome(self, expr: str, cand: np.ndarray) -> np.ndarray:
        """Evaluate expr on the devices of `cand` not evaluated yet; the per-device outcomes."""
        out = self._outcomes.get(expr)
        if out is None:
            out = self._outcomes[expr] = np.zeros(len(self.devices), dtype=np.int8)
        for j in np.flatnonzero(cand & (out == _UNKNOWN)).tolist():
            act = self._activations[j]
            if act is None:
                act = self._activations[j] = device_activation(self.devices[j])
            try:
                out[j] = _TRUE if evaluate(expr, act) else _FALSE
            except CelRuntimeError as e:
                out[j] = _ERROR
                self._errors[(expr, j)] = str(e)
        return out

    def selectable(self, cls_sel: tuple[str, ...], req_sel: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(match, error) per device: the class's selectors then the request's, in order, each
        evaluated only while the earlier ones were true; `error` marks the devices where one
        failed before any was false."""
        key = (cls_sel, req_sel)
        r = self._masks.get(key)
        if r is None:
            live = np.ones(len(self.devices), dtype=bool)
            err = np.zeros(len(self.devices), dtype=bool)
            for expr in cls_sel + req_sel:
                o = self._outcome(expr, live)
                err |= live & (o == _ERROR)
                live &= o == _TRUE
            r = self._masks[key] = (live, err)
        return r

    def selector_error(self, claim: ResourceClaim, cls_sel: tuple[str, ...], req_sel: tuple[str, ...],
                       cls_name: str, j: int) -> str:
        """kube's text for the CEL runtime error of device j (selectorsMatch)."""
        for pos, expr in enumerate(cls_sel):
            o = self._outcome(expr, _one(len(self.devices), j))[j]
            if o == _ERROR:
                return f"class {cls_name}: selector #{pos}: CEL runtime error: {self._errors[(expr, j)]}"
            if o != _TRUE:
                break
        for pos, expr in enumerate(req_sel):
            o = self._outcome(expr, _one(len(self.devices), j))[j]
            if o == _ERROR:
                return f"claim {claim.key}: selector #{pos}: CEL runtime error: {self._errors[(expr, j)]}"
            if o != _TRUE:
                break
        return ""

    def request_mask(self, req: Request) -> np.ndarray:
        return self.selectable(self.objs.classes[req.device_class].selectors, req.selectors)[0]

    def mask(self, selectors: tuple[str, ...]) -> np.ndarray:
        return self.selectable((), selectors)[0]

    # ---- allocation ------------------------------------------------------------------------------
    def _fits(self, table, r: Request, idx: np.ndarray) -> np.ndarray:
        m = self.request_mask(r)
        if r.mode == ALL:                  # every matching device, at least one, none in use
            ok = self.counts(table, m, idx) > 0
            if not r.admin_access:
                ok &= self.counts(table, m & self.used, idx) == 0
            return ok
        avail = m if r.admin_access else m & ~self.used
        return self.counts(table, avail, idx) >= r.count

    def simple(self, claims: list[ResourceClaim]) -> bool:
        """Is `feasible` the exact answer (one plain request, no constraints)?"""
        return len(claims) == 1 and len(claims[0].requests) == 1 and not claims[0].requests[0].subrequests \
            and not claims[0].constraints

    def first_choice(self, claims: list[ResourceClaim]) -> bool:
        """One claim with one firstAvailable request and no constraints: the subrequest kube
        allocates on a node is the first that fits there alone (`choices`)."""
        return len(claims) == 1 and len(claims[0].requests) == 1 and bool(claims[0].requests[0].subrequests) \
            and not claims[0].constraints

    def choices(self, table, r: Request, idx: np.ndarray) -> np.ndarray:
        """Per entry of idx: the index of the subrequest of r that kube allocates there, -1 none
        (a subrequest over the 32-device claim limit is skipped, as errAllocationResultMaxSizeExceeded)."""
        out = np.full(idx.size, -1, dtype=np.int64)
        for k, s in enumerate(r.subrequests):
            ok = self._fits(table, s, idx)
            if s.mode == ALL:
                ok &= self.counts(table, self.request_mask(s), idx) <= MAX_RESULTS
            elif s.count > MAX_RESULTS:
                continue
            out[(out < 0) & ok] = k
        return out

    def feasible(self, table, claims: list[ResourceClaim], idx: np.ndarray) -> np.ndarray:
        """Per entry of idx: may the claims be allocated there? Exact when `simple`; otherwise a
        necessary condition (each request alone fits, with one of its subrequests), which
        `allocate` completes."""
        ok = np.ones(idx.size, dtype=bool)
        for c in claims:
            for r in c.requests:
                if r.subrequests:
                    any_ok = np.zeros(idx.size, dtype=bool)
                    for s in r.subrequests:
                        any_ok |= self._fits(table, s, idx)
                    ok &= any_ok
                else:
                    ok &= self._fits(table, r, idx)
        return ok

    def first_error(self, table, claims: list[ResourceClaim], idx: np.ndarray) -> str:
        """The CEL runtime error kube's allocator would meet first, on a device that one of the
        nodes idx can reach and that it would evaluate (in use devices are skipped unless the
        request has admin access), or ''."""
        rows = self.rows(table)
        if self.selectors:
            sn: np.ndarray = np.asarray(self.selnodes(table)[:, idx].any(axis=1))
            reach_sel = (rows == -3) & sn[np.maximum(self.sel, 0)]
        else:
            reach_sel = np.zeros(len(self.devices), dtype=bool)
        reach = np.isin(rows, idx) | (rows == -1) | reach_sel
        for c in claims:
            for r in c.requests:
                for s in r.subrequests or (r,):
                    cls = self.objs.classes[s.device_class]
                    _, err = self.selectable(cls.selectors, s.selectors)
                    bad = err & reach if s.admin_access or s.mode == ALL else err & reach & ~self.used
                    if bad.any():
                        j = int(np.flatnonzero(bad)[0])
                        return self.selector_error(c, cls.selectors, s.selectors, cls.name, j)
        return ""

    def allocate(self, table, claims: list[ResourceClaim], i: int) -> list[list[DeviceResult]] | None:
        """The devices for each claim on node row i, or None (kube's Allocate for one node).
        Raises AllocationError where kube's allocator returns an error."""
        return _Search(self, table, claims, i).run()

    def _mark(self, c: ResourceClaim, used: bool) -> None:
        for res in c.allocation or []:
            if res.admin_access:
                continue
            j = self.index.get((res.driver, res.pool, res.device))
            if j is not None:
                self.used[j] = used

    def node_selector(self, results: list[DeviceResult]) -> tuple[str | None, dict[str, Any] | None]:
        """createNodeSelector: (the node, when a device is local to one) and the allocation's
        status.allocation.nodeSelector (None: available on every node)."""
        fields: list[dict[str, Any]] = []
        exprs: list[dict[str, Any]] = []
        for x in results:
            d = self.devices[self.index[(x.driver, x.pool, x.device)]]
            if d.node is not None:
                return d.node, {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [d.node]}]}]}
            if d.raw_selector is not None:
                for t in d.raw_selector.get("nodeSelectorTerms") or []:
                    for src, dst in (((t or {}).get("matchFields") or [], fields),
                                     ((t or {}).get("matchExpressions") or [], exprs)):
                        for req in src:
                            if not any(_same_requirement(req, e) for e in dst):
                                dst.append(req)
        if not fields and not exprs:
            return None, None
        term: dict[str, Any] = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        return None, {"nodeSelectorTerms": [term]}

    def commit(self, c: ResourceClaim, results: list[DeviceResult], node: str) -> None:
        from ...api.selectors import parse_node_selector
        c.allocation = results
        c.allocated_node, c.node_selector = self.node_selector(results)
        c.available_on = parse_node_selector(c.node_selector, "nodeSelector") if c.node_selector else None
        self._mark(c, True)

    def release(self, c: ResourceClaim) -> None:
        self._mark(c, False)
        c.allocation = None
        c.allocated_node = None
        c.node_selector = None
        c.available_on = None


def _one(n: int, j: int) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[j] = True
    return m


def _same_requirement(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("key") == b.get("key") and a.get("operator") == b.get("operator") and \
        set(a.get("values") or []) == set(b.get("values") or [])


def _attribute(d: Device, name: str) -> Any:
    """lookupAttribute: the fully qualified attribute (an unqualified one counts for the
    driver's domain); None when the device lacks it."""
    dom, _, n = name.partition("/")
    return d.attributes.get(dom, {}).get(n)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Semver) or isinstance(b, Semver):
        return isinstance(a, Semver) and isinstance(b, Semver) and a.text == b.text
    return type(a) is type(b) and a == b


class _Constraint:
    """matchAttributeConstraint: every device of the named requests has the same value."""

    def __init__(self, c: Constraint):
        self.requests = set(c.requests)
        self.attribute = c.attribute
        self.value: Any = None
        self.n = 0

    def applies(self, req: str, sub: str) -> bool:
        if not self.requests:
            return True
        return req in self.requests or (bool(sub) and f"{req}/{sub}" in self.requests)

    def add(self, req: str, sub: str, d: Device) -> bool:
        if not self.applies(req, sub):
            return True
        v = _attribute(d, self.attribute)
        if v is None:
            return False
        if self.n == 0:
            self.value, self.n = v, 1
            return True
        if not _same(v, self.value):
            return False
        self.n += 1
        return True

    def remove(self, req: str, sub: str) -> None:
        if self.applies(req, sub):
            self.n -= 1


class _Search:
    """One Allocate call: the recursion of kube's allocateOne over (claim, request, subrequest,
    device), with the same order, backtracking and early stops."""

    def __init__(self, st: DraState, table, claims: list[ResourceClaim], i: int):
        self.st = st
        self.claims = claims
        self.reach_mask = st.reach(table, i)
        self.reach = np.flatnonzero(self.reach_mask).tolist()
        self.cons = [[_Constraint(c) for c in cl.constraints] for cl in claims]
        self.allocating: dict[int, set[int]] = {}
        self.result: list[list[tuple[int, str, str, bool]]] = [[] for _ in claims]   # (device, req, sub, admin)
        self.data: dict[tuple[int, int, int], tuple[Request, str, int, list[int]]] = {}

    # requestData: (the request or subrequest, its parent's name or "", numDevices, allDevices)
    def _prepare(self) -> None:
        st = self.st
        for ci, c in enumerate(self.claims):
            min_total = 0
            for ri, r in enumerate(c.requests):
                subs = r.subrequests or (r,)
                lo = None
                for si, s in enumerate(subs):
                    n, alld = s.count, []
                    if s.mode == ALL:
                        cls = st.objs.classes[s.device_class]
                        match, err = st.selectable(cls.selectors, s.selectors)
                        bad = err & self.reach_mask
                        if bad.any():
                            raise AllocationError(st.selector_error(c, cls.selectors, s.selectors, cls.name,
                                                                    int(np.flatnonzero(bad)[0])))
                        alld = np.flatnonzero(match & self.reach_mask).tolist()
                        n = len(alld)
                    self.data[(ci, ri, si)] = (s, r.name if r.subrequests else "", n, alld)
                    lo = n if lo is None else min(lo, n)
                min_total += lo or 0
            if min_total > MAX_RESULTS:
                raise AllocationError(f"claim {c.key}: number of requested devices {min_total} exceeds the "
                                      f"claim limit of {MAX_RESULTS}")

    def run(self) -> list[list[DeviceResult]] | None:
        self._prepare()
        if not self._one(0, 0, 0, 0, False):
            return None
        st = self.st
        out: list[list[DeviceResult]] = []
        for res in self.result:
            out.append([DeviceResult(f"{parent}/{name}" if parent else name, st.devices[j].driver,
                                     st.devices[j].pool, st.devices[j].name, admin)
                        for j, name, parent, admin in res])
        return out

    def _in_use(self, j: int) -> bool:
        return bool(self.st.used[j]) or bool(self.allocating.get(j))

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self._one(ci + 1, 0, 0, 0, False)
            except _MaxSize:
                return False
        r, parent, n, alld = self.data[(ci, ri, si)]
        if not in_sub and parent:
            all_exceeded = True
            k = 0
            while (ci, ri, k) in self.data:
                try:
                    ok = self._one(ci, ri, k, 0, True)
                except _MaxSize:
                    k += 1
                    continue
                all_exceeded = False
                if ok:
                    return True
                k += 1
            if all_exceeded:
                raise _MaxSize()
            return False
        if r.mode == ALL and not alld:
            return False
        if di >= n:
            return self._one(ci, ri + 1, 0, 0, False)
        if len(self.result[ci]) + n - di > MAX_RESULTS:
            raise _MaxSize()
        st = self.st
        if r.mode == ALL:
            undo = self._add(ci, r, parent, alld[di], must=True)
            if undo is None:
                return False
            try:
                if self._one(ci, ri, si, di + 1, in_sub):
                    return True
            except _MaxSize:
                undo()
                raise
            undo()
            return False
        cls = st.objs.classes[r.device_class]
        match, err = st.selectable(cls.selectors, r.selectors)
        for j in self.reach:
            if r.admin_access:
                if ci in self.allocating.get(j, ()):
                    continue
            elif self._in_use(j):
                continue
            if err[j]:
                raise AllocationError(st.selector_error(claim, cls.selectors, r.selectors, cls.name, j))
            if not match[j]:
                continue
            undo = self._add(ci, r, parent, j, must=False)
            if undo is None:
                continue
            try:
                done = self._one(ci, ri, si, di + 1, in_sub)
            except _MaxSize:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def _add(self, ci: int, r: Request, parent: str, j: int, must: bool) -> Any:
        """allocateDevice: the undo function, or None when the device cannot be added."""
        if r.admin_access:
            if ci in self.allocating.get(j, ()):
                return None
        elif self._in_use(j):
            return None
        d = self.st.devices[j]
        base, sub = (parent, r.name) if parent else (r.name, "")
        cons = self.cons[ci]
        for k, c in enumerate(cons):
            if not c.add(base, sub, d):
                if must:
                    raise AllocationError(f"claim {self.claims[ci].key}, request {r.name}: cannot add device "
                                          f"{d.driver}/{d.pool}/{d.name} because a claim constraint would not "
                                          "be satisfied")
                for e in range(k):
                    cons[e].remove(base, sub)
                return None
        self.allocating.setdefault(j, set()).add(ci)
        self.result[ci].append((j, r.name, parent, r.admin_access))

        def undo() -> None:
            for c in cons:
                c.remove(base, sub)
            self.allocating[j].discard(ci)
            self.result[ci].pop()
        return undo
