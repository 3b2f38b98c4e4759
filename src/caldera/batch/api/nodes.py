"""Node accounting for a session, as columns: idle, used, releasing, pipelined per node.

Volcano keeps these as Resource objects on each NodeInfo; here they are float64 arrays
[nodes, dims] (dims: cpu, memory, then scalars in Volcano units) so that "does the task fit
Idle / FutureIdle" runs over every node at once with Volcano's exact tolerance rule. The core
NodeTable (pods on nodes, for the wrapped kube plugins) is kept in step by the session.
"""
from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from ...api.objects import Node
from ...state.nodetable import NodeTable
from .info import PIPELINED, RELEASING, TaskInfo
from .resource import MIN_RESOURCE, Resource, volcano_units
from .usage import NodeUsage


class NodeInfo:
    """One node's view onto the session's columns (what plugins see as Volcano's NodeInfo)."""
    __slots__ = ("i", "name", "node", "nodes", "tasks")

    def __init__(self, nodes: BatchNodes, i: int, node: Node):
        self.nodes = nodes
        self.i = i
        self.name = node.name
        self.node = node
        self.tasks: dict[str, tuple[int, TaskInfo]] = {}   # key -> (status when added, task)

    def _res(self, arr: np.ndarray) -> Resource:
        return self.nodes.resource_of(arr[self.i], self.i)

    @property
    def idle(self) -> Resource:
        return self._res(self.nodes.idle)

    @property
    def used(self) -> Resource:
        return self._res(self.nodes.used)

    @property
    def releasing(self) -> Resource:
        return self._res(self.nodes.releasing)

    @property
    def pipelined(self) -> Resource:
        return self._res(self.nodes.pipelined)

    @property
    def allocatable(self) -> Resource:
        return self._res(self.nodes.alloc)

    def future_idle(self) -> Resource:
        n = self.nodes
        return n.resource_of(n.idle[self.i] + n.releasing[self.i] - n.pipelined[self.i], self.i)

    def __repr__(self):
        return f"NodeInfo({self.name})"


class BatchNodes:
    def __init__(self, nodes: list[Node], extra_dims: set[str]):
        self.table = NodeTable(nodes)
        dims = {"cpu", "memory", "pods"} | extra_dims
        for n in nodes:
            dims.update(n.allocatable)
        dims.discard("cpu")
        dims.discard("memory")
        self.dim_names = ["cpu", "memory"] + sorted(d for d in dims if not d.startswith("count/"))
        self.dim = {d: j for j, d in enumerate(self.dim_names)}
        N, D = len(nodes), len(self.dim_names)
        self.alloc = np.zeros((N, D))
        self.present = np.zeros((N, D), dtype=bool)   # scalar keys a node's allocatable lists
        for i, n in enumerate(nodes):
            for r, v in n.allocatable.items():
                j = self.dim.get(r)
                if j is not None:
                    self.alloc[i, j] = volcano_units(r, v)
                    self.present[i, j] = True
        self.present[:, :2] = True
        self.idle = self.alloc.copy()
        self.used = np.zeros((N, D))
        self.releasing = np.zeros((N, D))
        self.pipelined = np.zeros((N, D))
        # resource-major copies kept in step, so a fit test over all nodes reads contiguous rows
        # (.copy(), not ascontiguousarray: with one node idle.T is already contiguous and would alias idle)
        self.idle_t = self.idle.T.copy()
        self.fidle_t = self.idle.T.copy()     # FutureIdle = Idle + Releasing - Pipelined
        self.max_tasks = np.array([n.allocatable.get("pods", 0) for n in nodes], dtype=np.int64)
        self.infos = [NodeInfo(self, i, n) for i, n in enumerate(nodes)]
        self.by_name = {ni.name: ni for ni in self.infos}
        self.names = [ni.name for ni in self.infos]

    def __len__(self):
        return len(self.infos)

    @functools.cached_property
    def usage(self) -> NodeUsage:
        """Measured usage (caldera.dev/usage), read when a plugin first asks (usage, rescheduling)."""
        return NodeUsage([ni.node for ni in self.infos])

    # tasks --------------------------------------------------------------------------------
    def vectorize(self, t: TaskInfo) -> None:
        r = t.resreq
        names = ["cpu", "memory"] + list(r.scalars)
        t.dims = np.array([self.dim[n] for n in names], dtype=np.intp)
        t.vec = np.array([r.get(n) for n in names])
        # LessEqual(l, r) with Volcano's tolerance is exactly l < r + 0.1, i.e. r > l - 0.1
        t.fit = tuple((int(j), float(v) - MIN_RESOURCE) for j, v in zip(t.dims, t.vec))

    def add_task(self, i: int, t: TaskInfo) -> None:
        """NodeInfo.AddTask: account the task by its current status."""
        ni = self.infos[i]
        if t.key in ni.tasks:
            raise ValueError(f"task {t.key} already on node {ni.name}")
        d, v = t.dims, t.vec
        st = t.status
        if st == PIPELINED:
            self.pipelined[i, d] += v
            self.fidle_t[d, i] -= v
        else:
            self.idle[i, d] -= v
            self.idle_t[d, i] -= v
            self.used[i, d] += v
            if st == RELEASING:
                self.releasing[i, d] += v
            else:
                self.fidle_t[d, i] -= v
        ni.tasks[t.key] = (st, t)
        t.node_name = ni.name
        self.table.add_pod(t.pod, i)

    def remove_task(self, i: int, t: TaskInfo) -> None:
        ni = self.infos[i]
        entry = ni.tasks.pop(t.key, None)
        if entry is None:
            return
        st = entry[0]
        d, v = t.dims, t.vec
        if st == PIPELINED:
            self.pipelined[i, d] -= v
            self.fidle_t[d, i] += v
        else:
            self.idle[i, d] += v
            self.idle_t[d, i] += v
            self.used[i, d] -= v
            if st == RELEASING:
                self.releasing[i, d] -= v
            else:
                self.fidle_t[d, i] += v
        if self.table.node_of(t.pod.key) is not None:
            self.table.remove_pod(t.pod.key)

    def update_task(self, i: int, t: TaskInfo) -> None:
        self.remove_task(i, t)
        self.add_task(i, t)

    # fit ----------------------------------------------------------------------------------
    def fit_mask(self, t: TaskInfo, future: bool = True) -> npt.NDArray[np.bool_]:
        """InitResreq.LessEqual(FutureIdle or Idle, Zero) over all nodes."""
        arr = self.fidle_t if future else self.idle_t
        fit = t.fit                     # never empty: cpu and memory are always in it
        j, thr = fit[0]
        m = arr[j] > thr
        for j, thr in fit[1:]:
            m = m & (arr[j] > thr)
        return m

    def fits(self, t: TaskInfo, avail: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """task.InitResreq.LessEqual(avail, Zero) for every node (or the rows idx)."""
        a = avail[:, t.dims] if idx is None else avail[idx[:, None], t.dims]
        v = t.vec
        return ((v < a) | (np.abs(v - a) < MIN_RESOURCE)).all(axis=1)

    def future_idle(self, idx: np.ndarray | None = None) -> np.ndarray:
        if idx is None:
            return self.idle + self.releasing - self.pipelined
        return self.idle[idx] + self.releasing[idx] - self.pipelined[idx]

    def insufficient(self, t: TaskInfo, i: int, avail_row: np.ndarray) -> list[str]:
        """The dimensions the task does not fit on one node (for messages)."""
        out = []
        for j, v in zip(t.dims, t.vec):
            a = avail_row[j]
            if not (v < a or abs(v - a) < MIN_RESOURCE):
                out.append(self.dim_names[j])
        return out

    def insufficient_reasons(self, t: TaskInfo, avail_rows: np.ndarray, cols_only: bool = False) -> np.ndarray:
        """Per row, "Insufficient <first dimension that does not fit>" (vectorised). With
        `cols_only`, avail_rows already holds just the task's dimensions."""
        a = avail_rows if cols_only else avail_rows[:, t.dims]
        v = t.vec
        bad = ~((v < a) | (np.abs(v - a) < MIN_RESOURCE))
        first = bad.argmax(axis=1)
        labels = np.array(["Insufficient " + self.dim_names[j] for j in t.dims], dtype=object)
        out = labels[first]
        out[~bad.any(axis=1)] = ""
        return out

    def resource_of(self, row: np.ndarray, i: int) -> Resource:
        r = Resource(row[0], row[1])
        for j in range(2, len(self.dim_names)):
            if self.present[i, j] or row[j] != 0:
                r.scalars[self.dim_names[j]] = float(row[j])
        return r

    def total(self) -> Resource:
        """The cluster's allocatable (ssn.TotalResource)."""
        s = self.alloc.sum(axis=0)
        r = Resource(s[0], s[1])
        anyp = self.present.any(axis=0)
        for j in range(2, len(self.dim_names)):
            if anyp[j]:     # type: ignore[index]  # numpy stubs: any(axis=0) of a 2-D array is an array, not a bool
                r.scalars[self.dim_names[j]] = float(s[j])
        return r
