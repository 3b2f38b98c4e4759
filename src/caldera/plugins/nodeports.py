"""NodePorts: a node is rejected when a host port the pod wants is already used there.

A wanted (hostIP, protocol, hostPort) conflicts with a used one of the same protocol and port
when the IPs are equal or either is 0.0.0.0 (empty hostIP means 0.0.0.0, empty protocol TCP).
Host ports come from the containers and from restartable (sidecar) init containers, as kube's
GetHostPorts. Used ports are kept in an index (protocol, port) -> hostIP -> {node row: count},
brought up to date from the NodeTable's pod journal, so a pod with host ports costs work only
for the nodes that hold a pod with the same port.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import InputError
from ..framework.interface import Plugin
from ..framework.status import Status

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"
_STATE = "PreFilterNodePorts"
_CACHE = "nodeports"


def host_ports(pod) -> tuple[tuple[str, str, int], ...]:
    """(hostIP, protocol, hostPort) of the pod's ports with hostPort > 0, defaults applied."""
    got = pod.cache.get(_CACHE)
    if got is not None:
        return got
    out: list[tuple[str, str, int]] = []
    if pod.has_ports:
        spec = pod.spec
        for kind in ("initContainers", "containers"):
            for ci, c in enumerate(spec.get(kind) or ()):
                if not isinstance(c, dict):
                    continue
                if kind == "initContainers" and c.get("restartPolicy") != "Always":
                    continue          # only init containers that run for the pod's lifetime
                for pi, p in enumerate(c.get("ports") or ()):
                    if not isinstance(p, dict):
                        raise InputError(f"spec.{kind}[{ci}].ports[{pi}]: must be a mapping")
                    hp = p.get("hostPort")
                    if hp is None:
                        continue
                    if not isinstance(hp, int) or isinstance(hp, bool):
                        raise InputError(f"spec.{kind}[{ci}].ports[{pi}].hostPort: must be an integer, got {hp!r}")
                    if hp <= 0:
                        continue
                    out.append((str(p.get("hostIP") or BIND_ALL), str(p.get("protocol") or "TCP"), hp))
    got = pod.cache[_CACHE] = tuple(out)
    return got


class PortIndex:
    """Used host ports of the pods on each node: (protocol, port) -> hostIP -> {node row: count}."""

    def __init__(self):
        self.by_port: dict[tuple[str, int], dict[str, dict[int, int]]] = {}

    def apply(self, pod, i: int, delta: int) -> None:
        for ip, proto, port in host_ports(pod):
            ips = self.by_port.setdefault((proto, port), {})
            rows = ips.setdefault(ip, {})
            c = rows.get(i, 0) + delta
            if c > 0:
                rows[i] = c
            else:
                rows.pop(i, None)
                if not rows:
                    del ips[ip]
                    if not ips:
                        del self.by_port[(proto, port)]

    def conflicting_rows(self, ip: str, proto: str, port: int) -> set[int]:
        """Rows where (ip, proto, port) conflicts with a used port (kube's HostPortInfo.CheckConflict)."""
        ips = self.by_port.get((proto, port))
        if not ips:
            return set()
        keys: Iterable[str]
        if ip == BIND_ALL:
            keys = ips.keys()
        else:
            keys = (BIND_ALL, ip)
        out: set[int] = set()
        for k in keys:
            rows = ips.get(k)
            if rows:
                out.update(rows)
        return out


class NodePorts(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self._table = None
        self._node_gen = -1
        self._cursor = 0
        self._index = PortIndex()

    def events_to_register(self):
        return ["Pod/Delete", "Node/Add"]

    def _rebuild(self, table) -> None:
        idx = PortIndex()
        for i, pods in enumerate(table.pods):
            for p in pods.values():
                if p.has_ports:
                    idx.apply(p, i, 1)
        self._index = idx

    def index(self, table) -> PortIndex:
        """The used-port index of `table`, replaying the table's pod journal since the last call."""
        changes, end = table.journal_since(self._cursor)
        if self._table is not table or self._node_gen != table.layout_generation or changes is None:
            self._rebuild(table)     # (rows renumber only when nodes are added or removed)
            self._table, self._node_gen = table, table.layout_generation
        else:
            for pod, i, delta in changes:
                if pod.has_ports:
                    self._index.apply(pod, i, delta)
        self._cursor = end
        return self._index

    def pre_filter(self, state, pod):
        ports = host_ports(pod)
        if not ports:
            return Status.skip()
        state.write(_STATE, ports)
        return None

    def _bad(self, state, pod, table) -> np.ndarray:
        """Rows where a wanted port conflicts, as a sorted array (cached per table change)."""
        stamp = (id(table), table.node_generation, table.pod_generation)
        hit = state.get("NodePorts.bad")
        if hit is not None and hit[0] == stamp:
            return hit[1]
        wanted = state.get(_STATE)
        if wanted is None:
            wanted = host_ports(pod)
        index = self.index(table)
        rows: set[int] = set()
        for ip, proto, port in wanted:
            rows |= index.conflicting_rows(ip, proto, port)
        bad = np.zeros(len(table), dtype=bool)
        if rows:
            bad[np.fromiter(rows, dtype=np.intp, count=len(rows))] = True
        state.write("NodePorts.bad", (stamp, bad))
        return bad

    def filter(self, state, pod, table, idx):
        return ~self._bad(state, pod, table)[idx]

    def filter_status(self, state, pod, table, i):
        return Status.unschedulable(ERR_REASON)
