"""One experiment of the FGD protocol (EXPERIMENT.md section 3): an openb pod list, shuffled with
the seed, tuned to `tune` x the GPU capacity (clones drawn from the original list appended, or
random pods pruned), placed one at a time on the openb GPU nodes by one policy; nothing finishes
and a pod no node can take is dropped. After every attempt one sample: arrived milli-GPU,
allocated milli-GPU, the cluster's fragmentation (sum of F_n) and its free milli-GPU.

Only the node a pod went to changes, so its row of scores (every kind of pod of the run) is the
only one recomputed: a decision is a column lookup, a filter on memory and an argmax.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...api.gpu import MILLI_PER_GPU
from ...errors import InputError
from ...gpu.demand import Demand, Demands, Distribution, distribution
from ...gpu.frag import breakdown, node_fragmentation
from ...gpu.nodes import GpuNodes
from ...gpu.policies import BESTFIT, POLICIES, RANDOM, normalize, random_gpu, score, whole_gpus
from ...gpu.policies import fits as node_fits
from ..traces.common import csv_table, parse_count, require_columns, row_where
from ..traces.openb import ANY_MODEL, NODE_COLUMNS, POD_COLUMNS, gpu_spec_models
from .variants import EXTRA_POLICIES, spec, tie_scores

TUNE = 1.3
RANK_WEIGHT = 1 << 32        # score * RANK_WEIGHT - rank: the highest score, then the lowest rank


@dataclass(frozen=True)
class Task:
    name: str
    demand: Demand
    memory: int


@dataclass
class Trace:
    """An openb pod list: its tasks sorted by name (the 'original workload')."""
    name: str
    tasks: list[Task]

    def distribution(self) -> Distribution:
        return distribution(t.demand for t in self.tasks)


@dataclass
class Cluster:
    names: list[str]
    cpu: list[int]
    memory: list[int]
    gpus: list[int]
    models: list[str]

    def fresh(self) -> GpuNodes:
        return GpuNodes(self.names, self.cpu, self.memory, self.gpus, self.models)


@dataclass
class Samples:
    """The experiment's samples (one per attempted pod) and its end state."""
    workload: str
    policy: str
    seed: int
    capacity: int
    arrived: np.ndarray
    allocated: np.ndarray
    fragmented: np.ndarray
    free: np.ndarray
    failed: dict[str, int] = field(default_factory=dict)
    categories: dict[str, float] = field(default_factory=dict)
    pods: int = 0
    wall_seconds: float = 0.0


def _cells(path: str, required: tuple[str, ...]):
    columns, rows = csv_table(path)
    require_columns(columns, required, path)
    return columns, rows


def read_cluster(path: str) -> Cluster:
    columns, rows = _cells(path, NODE_COLUMNS)
    c = Cluster([], [], [], [], [])
    for line, cells in rows:
        try:
            row = {k: cells[columns[k]].strip() for k in NODE_COLUMNS}
            if not row["sn"]:
                raise InputError("sn: required; every node needs a name")
            c.names.append(row["sn"])
            c.cpu.append(parse_count(row["cpu_milli"], "cpu_milli"))
            c.memory.append(parse_count(row["memory_mib"], "memory_mib"))
            c.gpus.append(parse_count(row["gpu"], "gpu"))
            c.models.append("" if row["model"].lower() in ANY_MODEL else row["model"])
        except InputError as e:
            raise InputError(e.problem, path, row_where(line)) from None
    if not c.names:
        raise InputError("no nodes: the FGD protocol needs an openb node list with at least one row", path)
    if sum(c.gpus) == 0:
        raise InputError("no GPUs: the FGD protocol measures GPU allocation; use the GPU node list "
                         "(openb_node_list_gpu_node.csv)", path)
    return c


def read_trace(path: str) -> Trace:
    columns, rows = _cells(path, POD_COLUMNS)
    spec = columns.get("gpu_spec")
    tasks = []
    for line, cells in rows:
        try:
            name = cells[columns["name"]].strip()
            if not name:
                raise InputError("name: required; every pod needs a name")
            k = parse_count(cells[columns["num_gpu"]].strip(), "num_gpu")
            milli = min(parse_count(cells[columns["gpu_milli"]].strip(), "gpu_milli"), MILLI_PER_GPU)
            models = tuple(gpu_spec_models(cells[spec].strip() if spec is not None else ""))
            if k > 1 and 0 < milli < MILLI_PER_GPU:
                raise InputError(f"num_gpu {k} with gpu_milli {milli}: a share of a GPU is for one GPU")
            d = Demand(parse_count(cells[columns["cpu_milli"]].strip(), "cpu_milli"), milli, k, models if k else ())
            tasks.append(Task(name, d, parse_count(cells[columns["memory_mib"]].strip(), "memory_mib")))
        except InputError as e:
            raise InputError(e.problem, path, row_where(line)) from None
    tasks.sort(key=lambda t: t.name)
    return Trace(_stem(path), tasks)


def _stem(path: str) -> str:
    return Path(path).stem


def tuned(trace: Trace, capacity: int, tune: float, rng: np.random.Generator) -> list[Task]:
    """The run's pod list: the original shuffled, then inflated with clones (drawn with replacement,
    appended; the first draw whose per-GPU milli would pass the target stops it) or pruned (random
    pods removed, order kept) to `tune` x capacity."""
    tasks = [trace.tasks[i] for i in rng.permutation(len(trace.tasks))]
    target = tune * capacity
    total = sum(t.demand.gpu_total for t in tasks)
    if total < target and not any(t.demand.gpu_total for t in trace.tasks):
        raise InputError(f"{trace.name}: no pod asks for GPUs, so no number of clones reaches {tune:g} x the "
                         "GPU capacity; the FGD protocol needs GPU pods", "--workload")
    if total < target:
        while True:
            c = trace.tasks[int(rng.integers(len(trace.tasks)))]
            if total + c.demand.milli > target:
                break
            tasks.append(c)
            total += c.demand.gpu_total
    else:
        keep = np.ones(len(tasks), dtype=bool)
        alive = list(range(len(tasks)))
        while total > target and alive:
            i = alive.pop(int(rng.integers(len(alive))))
            keep[i] = False
            total -= tasks[i].demand.gpu_total
        tasks = [t for t, k in zip(tasks, keep) if k]
    return tasks


def run(cluster: Cluster, trace: Trace, policy: str, seed: int, tune: float = TUNE) -> Samples:
    """One experiment (trace x policy x seed)."""
    if policy not in POLICIES and policy not in EXTRA_POLICIES:
        raise InputError(f"unknown policy {policy!r}; known: {', '.join((*POLICIES, *EXTRA_POLICIES))}",
                         "--policy")
    sp = spec(policy)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    nodes = cluster.fresh()
    tasks = tuned(trace, nodes.capacity, tune, rng)
    order = sorted(range(len(nodes)), key=lambda i: nodes.names[i])
    rank = np.empty(len(nodes), dtype=np.int64)
    rank[order] = rng.permutation(len(nodes))

    dist = trace.distribution()
    m, p = dist.demands(nodes.model_names), dist.p
    kinds = sorted({t.demand for t in tasks})
    kind_of = {d: u for u, d in enumerate(kinds)}
    d = Demands(kinds, nodes.model_names)
    everything = np.arange(len(nodes))
    s = score(sp.primary, nodes, everything, d, m, p, sp.exact)
    fits, scores, share_gpu = s.fits.T.copy(), s.score.T.copy(), s.gpu.T.copy()     # kinds x nodes
    ties = tie_scores(sp.tie, nodes, everything, d).T.copy() if sp.tie else None
    frag = node_fragmentation(nodes, everything, m, p)

    n_pods = len(tasks)
    arrived_a = np.empty(n_pods, dtype=np.int64)
    allocated_a = np.empty(n_pods, dtype=np.int64)
    frag_a = np.empty(n_pods, dtype=np.float64)
    failed: dict[str, int] = {}
    allocated = 0
    mem_free = nodes.mem_free
    arrival = _arrivals(tasks, sp.window)
    for j, (i, t) in enumerate(_attempt_order(tasks, sp.window)):
        dm = t.demand
        u = kind_of[dm]
        arrived = arrival[i]
        cand = np.flatnonzero(fits[u] & (mem_free >= t.memory))
        if len(cand) == 0:
            key = f"cpu={dm.cpu} gpu={dm.k}x{dm.milli}" + (f" model={dm.spec()}" if dm.models else "")
            failed[key] = failed.get(key, 0) + 1
        else:
            if len(cand) == 1:
                n = int(cand[0])
            elif sp.primary == RANDOM:
                n = int(cand[rng.integers(len(cand))])
            elif ties is not None:
                n = int(cand[np.lexsort((rank[cand], -ties[u, cand], -scores[u, cand]))[0]])
            else:
                sc = scores[u, cand]
                if sp.primary == BESTFIT:
                    sc = normalize(sc)
                n = int(cand[np.argmax(sc * RANK_WEIGHT - rank[cand])])
            if dm.sharing:
                gpus = [random_gpu(nodes.free[n], dm.milli, rng) if sp.primary == RANDOM else int(share_gpu[u, n])]
            else:
                gpus = whole_gpus(nodes.free[n], dm.k)
            nodes.place(n, dm, t.memory, gpus)
            row = np.array([n])
            # only the kinds that still fit this node need a score
            fits[:, n] = fit_now = node_fits(nodes, row, d)[0]
            live = np.flatnonzero(fit_now)
            if len(live):
                sub = d.subset(live)
                s = score(sp.primary, nodes, row, sub, m, p, sp.exact)
                scores[live, n], share_gpu[live, n] = s.score[0], s.gpu[0]
                if ties is not None and sp.tie:
                    ties[live, n] = tie_scores(sp.tie, nodes, row, sub)[0]
            # FGD measured the node's F_n while scoring it
            frag[n] = s.fragmentation[0] if len(live) and s.fragmentation is not None else \
                node_fragmentation(nodes, row, m, p)[0]
            allocated += dm.gpu_total
        arrived_a[j], allocated_a[j], frag_a[j] = arrived, allocated, frag.sum()
    free_a = nodes.capacity - allocated_a
    return Samples(trace.name, policy, seed, nodes.capacity, arrived_a, allocated_a, frag_a, free_a, failed,
                   breakdown(nodes, m, p), n_pods, time.perf_counter() - t0)


def _arrivals(tasks: list[Task], window: int) -> list[int]:
    """Arrived milli-GPU at each attempt: every pod before it in arrival order and itself; with a
    window of B arrivals, every pod of its window (all of them arrived before the first decision)."""
    out, total = [], 0
    for lo in range(0, len(tasks), window):
        total += sum(t.demand.gpu_total for t in tasks[lo:lo + window])
        if window == 1:
            out.append(total)
        else:
            out.extend([total] * len(tasks[lo:lo + window]))
    return out


def _attempt_order(tasks: list[Task], window: int) -> list[tuple[int, Task]]:
    """Pods in the order they are attempted: arrival order, or per window of B arrivals the
    largest GPU demand first (whole GPUs, then larger shares; more CPU first on equal GPU)."""
    if window == 1:
        return list(enumerate(tasks))
    out = []
    for lo in range(0, len(tasks), window):
        chunk = tasks[lo:lo + window]
        out.extend(sorted(enumerate(chunk, lo), key=lambda it: (-it[1].demand.gpu_total, -it[1].demand.milli,
                                                                  -it[1].demand.cpu, it[0])))
    return out
