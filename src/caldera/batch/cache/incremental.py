"""A session snapshot kept between sessions and brought up to date with what changed (Volcano's
SchedulerCache, which its Snapshot() clones for each session).

`build_snapshot` turns a whole cluster into jobs, tasks, queues and node columns; a replay that
opens a session every period would redo that for every pod at every tick. `KeptSnapshot` does it
once and then applies only the tick's changes: the pods (by key) that arrived, were bound,
evicted, completed or released, the PodGroups that appeared, and whatever the last session
itself touched. Caldera keeps the objects instead of cloning them; what makes that correct is that
after every sync the kept state is exactly what `build_snapshot` would build from the same
cluster (the equivalence test, tests/sim/test_volcano_incremental.py, runs both and compares):

- A session changes tasks only through allocate / pipeline / evict and their undo, each of which
  fires the session's allocate/deallocate events; `watch(ssn)` records those tasks. Every recorded
  task is rebuilt from its pod at the next sync, like every changed pod: a fresh TaskInfo (status
  from the pod, no last transaction, no eviction flag), placed on its node by that status. So a
  discarded or pipelined allocation, an eviction the session dropped, a bind not yet applied
  leave nothing behind; the columns go back by the same integer amounts they moved.
- A job whose tasks changed is rebuilt (a fresh JobInfo over its tasks, in the cluster's pod
  order): its status index, allocated and total request are sums, not running totals. Every
  other job only loses the fit errors of the session that ran since. The PodGroup object is
  kept: an explicit group's phase carries over (the replay writes it back to the manifest too);
  an implicit group (the controller's `podgroup-<pod uid>`) takes its phase from
  `implicit_phases` when its job is rebuilt, as build_snapshot does when it creates the group
  afresh from the pod. So `implicit_phases` may change only to follow the phase a session wrote
  on the group, or together with a `changed()` of the group's pod.
- Order matters where Go iterates slices: a node's tasks (victim candidates) are kept in the
  order build_snapshot adds them, the cluster's pod order (`position`); jobs too.
- What changes the shape of the columns (a node added, removed or updated, a pod requesting a
  resource no column has) rebuilds everything with build_snapshot.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from ...api.loader import Cluster
from ...api.objects import Pod, PriorityClass
from ..api.info import COMPLETED_STATUS, PENDING, JobInfo, TaskInfo, task_status
from ..api.nodes import BatchNodes, NodeInfo
from ..api.objects import GROUP_NAME_ANNOTATION, PodGroup
from .snapshot import VOLCANO_SCHEDULER, Snapshot, build_snapshot, implicit_group_key, implicit_podgroup, job_priority

Position = Callable[[str], tuple]
V = TypeVar("V")


def _sort_keys(d: dict[str, V], key: Position) -> None:
    """Reorder `d` in place by key(k) of its keys."""
    items = sorted(d.items(), key=lambda kv: key(kv[0]))
    d.clear()
    d.update(items)


class KeptSnapshot:
    """The snapshot of a cluster that changes pod by pod.

    `lookup(key)` is the cluster's current pod of that key (None: gone); `position(key)` its
    place in the cluster's pod order (the order build_snapshot would see the pods in);
    `group_rank(key)` the place of an explicit PodGroup among the PodGroup manifests."""

    def __init__(self, lookup: Callable[[str], Pod | None], position: Position,
                 group_rank: Callable[[str], int], priority_classes: Mapping[str, PriorityClass],
                 implicit_phases: Mapping[str, str], scheduler_name: str = VOLCANO_SCHEDULER):
        self.lookup = lookup
        self.implicit_phases = implicit_phases
        self.position = position
        self.group_rank = group_rank
        self.priority_classes = priority_classes
        self.scheduler_name = scheduler_name
        self.snap: Snapshot | None = None
        self.tasks: dict[str, TaskInfo] = {}              # pod key -> its task (in a job and/or on a node)
        self.members: dict[str, dict[str, None]] = {}     # job key -> its pods' keys
        self.dirty: dict[str, None] = {}                  # pod keys to rebuild at the next sync
        self.dirty_jobs: dict[str, None] = {}
        self.first: dict[str, tuple] = {}                 # job key -> its place in the jobs' order
        self.synced_jobs: dict[str, None] = {}            # the jobs the last sync rebuilt or removed
        self.opened = False                               # a session ran since the last sync
        self.rebuilds = 0

    # ---- what changed --------------------------------------------------------------------
    def changed(self, key: str) -> None:
        """The pod `key` arrived, was bound, evicted, completed or released (or may have)."""
        self.dirty[key] = None

    def invalidate(self) -> None:
        """Rebuild everything at the next sync (the node set or a node changed)."""
        self.snap = None

    def add_group(self, pg: PodGroup, member_keys) -> None:
        """An explicit PodGroup appears; `member_keys`: its pods' keys (present or not)."""
        snap = self.snap
        if snap is None:
            return
        snap.podgroups[pg.key] = pg
        self.dirty_jobs[pg.key] = None
        for k in member_keys:
            self.dirty[k] = None

    def remove_group(self, key: str) -> None:
        """The explicit PodGroup `key` is gone (its job finished: see sim/volcano.py)."""
        snap = self.snap
        if snap is None:
            return
        snap.podgroups.pop(key, None)
        self.dirty_jobs[key] = None

    def watch(self, ssn) -> None:
        """Record every task the session `ssn` allocates, pipelines, evicts or undoes; they are
        rebuilt at the next sync."""
        dirty = self.dirty

        def touched(t: TaskInfo) -> None:
            dirty[t.key] = None
        ssn.add_event_handler(allocate=touched, deallocate=touched)
        self.opened = True

    # ---- bringing it up to date --------------------------------------------------------------
    def sync(self, view: Callable[[], Cluster]) -> Snapshot:
        """The snapshot as build_snapshot would build it from the cluster now (`view()` builds
        that cluster, for a full rebuild)."""
        snap = self.snap
        if snap is not None and self.dirty:
            dims = snap.nodes.dim if snap.nodes is not None else {}
            for key in self.dirty:
                p = self.lookup(key)
                if p is not None and any(r not in dims and not r.startswith("count/") for r in p.requests):
                    snap = self.snap = None        # a new resource: new columns
                    break
        if snap is None:
            return self._rebuild(view())
        for key in self.dirty:
            self._detach(snap, key)
        for key in self.dirty:
            self._attach(snap, key)
        self.dirty.clear()
        reorder = False
        for key in self.dirty_jobs:
            reorder |= self._sync_job(snap, key)
        self.synced_jobs, self.dirty_jobs = self.dirty_jobs, {}
        if reorder:
            order = sorted(snap.jobs, key=self._job_place)
            if list(snap.jobs) != order:
                snap.jobs = {k: snap.jobs[k] for k in order}
        if self.opened:       # what a session left on jobs it did not touch: its fit errors
            for job in snap.jobs.values():
                if job.fit_errors:
                    job.fit_errors = {}
            self.opened = False
        snap.warnings = []
        return snap

    def _rebuild(self, cluster: Cluster) -> Snapshot:
        self.rebuilds += 1
        snap = self.snap = build_snapshot(cluster, self.scheduler_name, self.implicit_phases)
        assert snap.nodes is not None
        snap.total = snap.nodes.total()          # the nodes do not change until the next rebuild
        self.tasks = {}
        self.members = {}
        self.dirty.clear()
        self.dirty_jobs.clear()
        for key, job in snap.jobs.items():
            m = self.members[key] = {}
            for t in job.tasks.values():
                self.tasks[t.key] = t
                m[t.key] = None
        for ni in snap.nodes.infos:
            for k, (_, t) in ni.tasks.items():
                self.tasks.setdefault(k, t)
        self.first = {key: self._first_place(key) for key in snap.jobs}
        self.synced_jobs = dict.fromkeys(snap.jobs)
        self.opened = False
        snap.warnings = []
        return snap

    def _job_place(self, key: str) -> tuple:
        return self.first[key]

    def _first_place(self, key: str) -> tuple:
        m = self.members.get(key)
        if m:
            return (0, min(self.position(k) for k in m))
        return (1, self.group_rank(key))

    def _detach(self, snap: Snapshot, key: str) -> None:
        old = self.tasks.pop(key, None)
        if old is None:
            return
        nodes = snap.nodes
        assert nodes is not None
        ni = nodes.by_name.get(old.node_name) if old.node_name else None
        if ni is not None and key in ni.tasks:
            nodes.remove_task(ni.i, old)
        if old.job:
            self.members[old.job].pop(key, None)
            self.dirty_jobs[old.job] = None

    def _attach(self, snap: Snapshot, key: str) -> None:
        """The pod's task as build_snapshot makes it: in its job (a pod of this scheduler whose
        PodGroup exists), and on its node while it holds one."""
        p = self.lookup(key)
        if p is None:
            return
        nodes = snap.nodes
        assert nodes is not None
        job_key = ""
        if p.scheduler_name == self.scheduler_name:
            gname = p.annotations.get(GROUP_NAME_ANNOTATION)
            if gname:
                k = f"{p.namespace}/{gname}"
                if k in snap.podgroups:
                    job_key = k
            else:
                job_key = implicit_group_key(p)
                pg = snap.podgroups.get(job_key)
                if pg is None or pg.creation != p.creation:     # (a pod resubmitted: its group is new)
                    snap.podgroups[job_key] = implicit_podgroup(p)
        ni = None
        if p.node_name and not p.finished:
            ni = nodes.by_name.get(p.node_name)
            status = task_status(p)
            if status & COMPLETED_STATUS or status == PENDING:
                ni = None
        if not job_key and ni is None:
            return
        t = TaskInfo(p, job_key)
        nodes.vectorize(t)
        self.tasks[key] = t
        if job_key:
            self.members.setdefault(job_key, {})[key] = None
            self.dirty_jobs[job_key] = None
        if ni is not None:
            last = next(reversed(ni.tasks), None)
            nodes.add_task(ni.i, t)
            if last is not None and self.position(last) > self.position(key):
                self._reorder_node(nodes, ni)

    def _reorder_node(self, nodes: BatchNodes, ni: NodeInfo) -> None:
        """Put the node's tasks (and its pods in the node table) back in the cluster's pod order,
        build_snapshot's."""
        _sort_keys(ni.tasks, self.position)
        _sort_keys(nodes.table.pods[ni.i], self.position)

    def _sync_job(self, snap: Snapshot, key: str) -> bool:
        """Rebuild (or drop) the job `key`; True when its place in the jobs' order changed."""
        members = self.members.get(key)
        pg = snap.podgroups.get(key)
        if pg is None or (not members and pg.implicit):
            snap.jobs.pop(key, None)
            self.members.pop(key, None)
            self.first.pop(key, None)
            if pg is not None:
                del snap.podgroups[key]
            return False
        if pg.implicit:
            pg.phase = self.implicit_phases.get(key, "Pending")
            pg.conditions = []
        job = JobInfo(key, pg, job_priority(pg, self.priority_classes))
        if members:
            pos = self.position
            for k in sorted(members, key=pos):
                job.add_task(self.tasks[k])
        snap.jobs[key] = job
        place = self._first_place(key)
        if self.first.get(key) == place:
            return False
        self.first[key] = place
        return True
