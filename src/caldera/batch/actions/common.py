"""What several actions share: the schedulable jobs by queue, node predicates with the per-role
error cache, node scoring and the best-node choice (Volcano's util.PredicateHelper /
PrioritizeNodes / SelectBestNodeAndScore), vectorised over nodes, plus the explain record.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..api.fiterrors import ERROR, UNSCHEDULABLE, FitErrors, insufficient
from ..api.info import PENDING, TaskInfo
from ..api.objects import parse_go_bool
from ..framework.hooks import NodeOrderError
from ..util.pqueue import PriorityQueue

if TYPE_CHECKING:
    from ..framework.hooks import PredicateFn

BASELINE_PERCENTAGE = 50
MIN_NODES_TO_FIND = 100
MIN_PERCENTAGE_TO_FIND = 5


def num_feasible_to_find(n: int, percentage: int = 0) -> int:
    """CalculateNumOfFeasibleNodesToFind with Volcano's default options."""
    if n <= MIN_NODES_TO_FIND or percentage >= 100:
        return n
    pct = percentage
    if pct <= 0:
        pct = max(BASELINE_PERCENTAGE - n // 125, MIN_PERCENTAGE_TO_FIND)
    return max(n * pct // 100, MIN_NODES_TO_FIND)


def jobs_by_queue(ssn, select, *, admit_pending: bool = False, every_queue: bool = False):
    """The preamble of allocate, backfill, preempt and reclaim: walk the session's jobs (in uid
    order, Caldera's fixed stand-in for Go's map order) and skip those that are not schedulable:
    a Pending PodGroup, a failed JobValid, a queue the session does not know. `select(job)` is
    asked about every remaining job and returns the action's per-job data, or None to leave the
    job out. Returns (queues in QueueOrder, {queue uid: its selected jobs in JobOrder},
    {job uid: select's data}, in job uid order).

    What really differs between the four actions in Volcano is a parameter here:
    - admit_pending (allocate): without an `enqueue` action in the conf a Pending job is turned
      Inqueue on the spot instead of being skipped; the other actions always skip it.
    - every_queue (reclaim): the queue of every schedulable job is pushed, whether or not one of
      its jobs is selected (reclaim.go pushes the queue before its JobStarving check); allocate,
      backfill and preempt only push queues that have a selected job.
    enqueue does not use this: it is the action *for* Pending jobs (it keeps only them), skips
    neither Pending nor JobValid failures, and pushes the queue of every job (enqueue.go).
    """
    queues = PriorityQueue(ssn.queue_order_less)
    by_queue: dict[str, PriorityQueue] = {}
    data: dict = {}
    seen: set[str] = set()
    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        if job.is_pending():
            if not admit_pending or ssn.enqueue_configured:
                continue
            job.pg.phase = "Inqueue"
        if ssn.job_valid(job) is not None:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if every_queue and queue.uid not in seen:
            seen.add(queue.uid)
            queues.push(queue)
        got = select(job)
        if got is None:
            continue
        jobs = by_queue.get(queue.uid)
        if jobs is None:
            jobs = by_queue[queue.uid] = PriorityQueue(ssn.job_order_less)
            if not every_queue:
                queues.push(queue)
        jobs.push(job)
        data[job.uid] = got
    return queues, by_queue, data


def pending_tasks(job) -> list[TaskInfo]:
    """The job's Pending tasks that are not scheduling-gated, in uid order (preempt, reclaim)."""
    return [t for _, t in sorted(job.index.get(PENDING, {}).items()) if not t.sch_gated]


class PredicateHelper:
    """Filters nodes for a task. Nodes that failed for an earlier task of the same job and role
    are failed again without re-running the predicates (Volcano's predicate error cache)."""

    def __init__(self, ssn, use_cache: bool = True, resource_fit: str | None = "future"):
        self.ssn = ssn
        self.use_cache = use_cache
        self.resource_fit = resource_fit   # "future": InitResreq <= FutureIdle first; None: plugins only
        self.cache: dict[str, tuple[np.ndarray, list]] = {}

    def predicate_nodes(self, task: TaskInfo, idx: np.ndarray | None = None, find_all: bool = False):
        """(feasible node indices, FitErrors). Nodes are scanned from the session's round-robin
        start; the scan stops after enough feasible nodes (Volcano's percentage of nodes to find),
        and the next task starts where this one stopped."""
        ssn = self.ssn
        nodes = ssn.nodes
        N = len(nodes)
        fe = FitErrors()
        if N == 0:
            return np.zeros(0, dtype=np.intp), fe
        key = f"{task.job}/{task.role}" if (self.use_cache and task.role) else None
        cached = self.cache.get(key) if key else None
        scope = None      # None: every node
        if idx is not None:
            scope = np.zeros(N, dtype=bool)
            scope[idx] = True
        if cached is None:
            base = scope
        else:
            base = ~cached[0] if scope is None else (scope & ~cached[0])
        fit = nodes.fit_mask(task, True) if self.resource_fit == "future" else None
        if fit is None:
            ok = np.ones(N, dtype=bool) if base is None else base.copy()
        else:
            ok = fit if base is None else (base & fit)
        live = np.flatnonzero(ok)
        failures: Sequence[tuple[PredicateFn, np.ndarray]] = ()
        if len(live):
            pmask, failures = ssn.predicate(task, live)
            if not pmask.all():
                ok = ok.copy() if ok is fit else ok
                ok[live[~pmask]] = False
                live = live[pmask]
        feasible = live
        # round robin: scan from the start index, wrapping around
        start = ssn.rr_start % N
        if start and len(feasible):
            cut = np.searchsorted(feasible, start)
            feasible = np.concatenate([feasible[cut:], feasible[:cut]])
        if not find_all:
            want = num_feasible_to_find(N if idx is None else len(idx))
            if len(feasible) > want:
                last = int(feasible[want - 1])
                feasible = feasible[:want]
                ssn.rr_start = (last + 1) % N
            else:
                ssn.rr_start = start  # every node processed: a full turn ends where it began
        # Failures. Only gathered when someone will read them: the role cache (which learns
        # every failing node), a task that fits nowhere (its message), or --explain.
        if key is None and len(feasible) and ssn.explain is None:
            return feasible, fe
        if cached is not None:
            hit = cached[0] if scope is None else (cached[0] & scope)
            hit_i = np.flatnonzero(hit)
            if len(hit_i):
                fe.add_lazy([nodes.names[i] for i in hit_i], lambda k, h=hit_i, c=cached: _cached_reason(c, int(h[k])))
        # (what failed: "fit" or a predicate, the failing node rows, "fit": the task's idle columns there)
        fail_sets: list[tuple[str | PredicateFn, np.ndarray, np.ndarray | None]] = []
        if fit is not None:
            badm = ~fit if base is None else (base & ~fit)
            bad_i = np.flatnonzero(badm)
            if len(bad_i):
                cols = nodes.fidle_t[task.dims][:, bad_i].T   # the task's dimensions, as they are now
                fail_sets.append(("fit", bad_i, cols))
        for fn, bad_i in failures:
            fail_sets.append((fn, bad_i, None))
        for what, bad_i, cols in fail_sets:
            resolver = self._resolver(task, what, bad_i, cols)
            if len(feasible) == 0 or ssn.explain is not None:
                names = [nodes.names[i] for i in bad_i]
                if what == "fit":
                    fe.add_bulk(names, UNSCHEDULABLE,
                                lambda c=cols: nodes.insufficient_reasons(task, c, cols_only=True))
                else:
                    fe.add_lazy(names, resolver)
            if key:
                entry = self.cache.get(key)
                if entry is None:
                    entry = self.cache[key] = (np.zeros(N, dtype=bool), [])
                entry[0][bad_i] = True
                entry[1].append((bad_i, resolver))
        return feasible, fe

    def _resolver(self, task: TaskInfo, what, bad_i: np.ndarray, cols):
        nodes = self.ssn.nodes
        if what == "fit":
            def fit_reason(k):
                row = np.zeros(len(nodes.dim_names))
                row[task.dims] = cols[k]
                return [(UNSCHEDULABLE, insufficient(nodes.insufficient(task, int(bad_i[k]), row)))]
            return fit_reason
        return lambda k: what.reason(task, int(bad_i[k]))


def action_arg_bool(ssn, action: str, key: str, default: bool) -> bool:
    """Arguments.GetBool for an action's `configurations` entry: strconv.ParseBool spellings;
    a value that does not parse keeps the default."""
    v = ssn.conf.action_args(action).get(key)
    if isinstance(v, bool):
        return v
    parsed = None if v is None else parse_go_bool(v)
    return default if parsed is None else parsed


def prepredicate_errors(ssn, err: str, scope: np.ndarray | None = None) -> FitErrors:
    """A failed PrePredicate fails the task on every node (of `scope`) with that error."""
    fe = FitErrors()
    names = ssn.nodes.names
    for name in names if scope is None else (names[i] for i in scope):
        fe.set_node(name, [(ERROR, err)])
    return fe


def _cached_reason(entry, i: int) -> list:
    """The reason node i failed for the role, from the failure set that recorded it."""
    for bad_i, resolve in entry[1]:
        k = int(np.searchsorted(bad_i, i))
        if k < len(bad_i) and bad_i[k] == i:
            return resolve(k)
    return []


def select_best(ssn, task: TaskInfo, idx: np.ndarray, scores: np.ndarray) -> int:
    """BestNodeFn, else a random node among the highest scores (seeded)."""
    b = ssn.best_node(task, idx, scores)
    if b is not None:
        return b
    top = np.flatnonzero(scores == scores.max())
    if len(top) == 1:
        return int(idx[top[0]])
    return int(idx[top[ssn.rng.integers(len(top))]])


def record_explain(ssn, task: TaskInfo, fe: FitErrors | None, idx: np.ndarray | None) -> None:
    """The first time the session tries to place `task`: why each node was filtered and how
    each feasible node scored, per plugin."""
    if ssn.explain is None or task.key in ssn.explain:
        return
    entry: dict[str, dict[str, Any]] = {"filtered": {}, "scores": {}}
    if fe is not None:
        entry["filtered"] = {n: ", ".join(r for _, r in st if r) or "filtered" for n, st in fe.nodes.items()}
    if idx is not None and len(idx):
        detail: dict = {}
        try:
            total = ssn.node_scores(task, idx, detail)
        except NodeOrderError:
            ssn.explain[task.key] = entry       # no scores (see hooks.NodeOrderError)
            return
        names = [ssn.nodes.infos[i].name for i in idx]
        for k, n in enumerate(names):
            row = {p: _num(v[k]) for p, v in detail.items()}
            row["total"] = _num(total[k])
            entry["scores"][n] = row
    ssn.explain[task.key] = entry


def _num(v):
    f = float(v)
    return int(f) if f.is_integer() else round(f, 4)
