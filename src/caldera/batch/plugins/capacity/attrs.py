"""The capacity plugin's per-queue bookkeeping (Volcano's plugins/capacity queueAttr).

For every queue: deserved (spec.deserved), capability (spec.capability), guarantee
(spec.guarantee.resource), realCapability (the capability the cluster can actually honour),
allocated / request / inqueue / elastic sums over the queue's jobs, and share
(max over deserved dimensions of allocated/deserved; 1 for a queue without deserved).

Two ways to build them, as Volcano does:
- flat: one attribute per queue that has jobs; realCapability = min(capability,
  (cluster total - sum of all guarantees) + own guarantee); deserved is capped by it.
- hierarchical (enableHierarchy): every queue sits in a tree under `root` through spec.parent;
  a child inherits each capability dimension it leaves unset from its parent, realCapability is
  computed top-down from the parent's, and allocated/inqueue/... of a leaf also count in every
  ancestor. An invalid tree (unknown parent, a cycle, a job in a non-leaf queue) disables the
  plugin for the session (Volcano's readyToSchedule = false); inconsistent quotas (child
  capability above the parent's, children's deserved/guarantee summing above the parent's) are
  only reported.
"""
from __future__ import annotations

from ....api.resourcenames import is_scalar
from ...api.info import ALLOCATED_STATUS, PENDING, JobInfo, QueueInfo
from ...api.objects import Queue
from ...api.resource import INFINITY, MAXF, ZERO, Resource, exceeded_part, max_resource
from ..util import inqueue_resource, share_of

ROOT = "root"
MAX_INT64_F = float(2 ** 63 - 1)


class QueueAttr:
    __slots__ = (
        "allocated",
        "ancestors",
        "capability",
        "children",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "real_capability",
        "request",
        "share",
        "uid",
    )

    def __init__(self, uid: str, name: str):
        self.uid = uid
        self.name = name
        self.share = 0.0
        self.ancestors: list[str] = []
        self.children: dict[str, QueueAttr] = {}
        self.deserved = Resource()
        self.allocated = Resource()
        self.request = Resource()
        self.elastic = Resource()
        self.inqueue = Resource()
        self.capability: Resource | None = None
        self.real_capability: Resource | None = None
        self.guarantee = Resource()

    def update_share(self) -> None:
        """updateQueueAttrShare: a queue without deserved is best effort (share 1)."""
        if self.deserved.is_empty():
            self.share = 1.0
            return
        s = 0.0
        for n in self.deserved.names():
            s = max(s, share_of(self.allocated.get(n), self.deserved.get(n)))
        self.share = s

    def __repr__(self):
        return (f"QueueAttr({self.name}, deserved={self.deserved}, allocated={self.allocated}, "
                f"realCapability={self.real_capability}, share={self.share:.3f})")


# ---- Queue spec -> Resource, as api.NewResource reads a ResourceList ----------------------------
def spec_resource(q: Queue, key: str) -> Resource | None:
    """spec.<key> (or spec.guarantee.resource) as Volcano's NewResource builds it; None when
    the list is unset or empty (Volcano tests `len(...) != 0`)."""
    spec = q.raw.get("spec") or {}
    raw = (spec.get("guarantee") or {}).get("resource") if key == "guarantee" else spec.get(key)
    if not raw:
        return None
    src = {"capability": q.capability, "deserved": q.deserved, "guarantee": q.guarantee}[key]
    if src is None:
        return None
    out = Resource(src.cpu, src.memory)
    for n, v in src.scalars.items():
        if n in ("pods", "ephemeral-storage") or is_scalar(n):
            out.scalars[n] = v
    return out


# ---- per-job contributions ------------------------------------------------------------------
def job_contribution(job: JobInfo) -> tuple[Resource, Resource, Resource, Resource]:
    """(allocated, request, inqueue, elastic) that one job adds to its queue."""
    allocated, request, inqueue = Resource(), Resource(), Resource()
    for status, tasks in job.index.items():
        if status & ALLOCATED_STATUS:
            for t in tasks.values():
                allocated.add(t.resreq)
                request.add(t.resreq)
        elif status == PENDING:
            for t in tasks.values():
                request.add(t.resreq)
    pg = job.pg
    if pg.phase == "Inqueue" and pg.min_resources is not None:
        inqueue.add(job.deduct_sch_gated(inqueue_resource(job, job.allocated)))
    if pg.phase == "Running" and pg.min_resources is not None and job.count(ALLOCATED_STATUS) >= pg.min_member:
        inqueue.add(job.deduct_sch_gated(inqueue_resource(job, job.allocated)))
    return allocated, request, inqueue, job.elastic_resources()


# ---- flat ----------------------------------------------------------------------------------
def build_flat(ssn, total: Resource) -> dict[str, QueueAttr]:
    """buildQueueAttrs: attributes for the queues that have jobs."""
    total_guarantee = Resource()
    for q in ssn.queues.values():
        g = spec_resource(q.queue, "guarantee")
        if g is not None:
            total_guarantee.add(g)
    opts: dict[str, QueueAttr] = {}
    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue        # Volcano's snapshot drops such jobs
        attr = opts.get(queue.uid)
        if attr is None:
            attr = opts[queue.uid] = QueueAttr(queue.uid, queue.name)
            attr.deserved = spec_resource(queue.queue, "deserved") or Resource()
            cap = spec_resource(queue.queue, "capability")
            if cap is not None:
                if cap.cpu <= 0:
                    cap.cpu = MAXF
                if cap.memory <= 0:
                    cap.memory = MAXF
            attr.guarantee = spec_resource(queue.queue, "guarantee") or Resource()
            real = exceeded_part(total, total_guarantee).add(attr.guarantee)
            if cap is None:
                attr.capability = Resource()
            else:
                real.min_dimension(cap, INFINITY)
                attr.capability = cap
            attr.real_capability = real
        a, r, i, e = job_contribution(job)
        attr.allocated.add(a)
        attr.request.add(r)
        attr.inqueue.add(i)
        attr.elastic.add(e)
    for attr in opts.values():
        if attr.real_capability is not None:
            attr.deserved.min_dimension(attr.real_capability, INFINITY)
        attr.deserved = max_resource(attr.deserved, attr.guarantee)
        attr.update_share()
    return opts


# ---- hierarchical -----------------------------------------------------------------------------
class HierarchyError(Exception):
    pass


def _new_attr(q: QueueInfo) -> QueueAttr:
    attr = QueueAttr(q.uid, q.name)
    attr.deserved = spec_resource(q.queue, "deserved") or Resource()
    attr.capability = spec_resource(q.queue, "capability") or Resource()
    attr.guarantee = spec_resource(q.queue, "guarantee") or Resource()
    attr.real_capability = Resource()
    return attr


def build_hierarchy(ssn, total: Resource, warnings: list[str]) -> tuple[dict[str, QueueAttr], bool]:
    """buildHierarchicalQueueAttrs: (attributes, ready). `root` is Volcano's built-in queue (its
    scheduler creates it at start-up); when the manifests do not define it, a default one (no
    limits) stands in."""
    queues = dict(ssn.queues)
    if ROOT not in queues:
        queues[ROOT] = QueueInfo(Queue.implicit(ROOT))
    opts: dict[str, QueueAttr] = {}

    def link(q: QueueInfo) -> None:
        # (Volcano also tracks the queues being visited to report cycles, but a queue is only
        # recursed into before it has an attribute, so a cycle is never reported there: its
        # queues simply never hang below root. We warn about those below.)
        if q.name == ROOT:
            return
        parent = q.queue.parent or ROOT
        pinfo = queues.get(parent)
        if pinfo is None:
            raise HierarchyError(f"the queue {q.name} has invalid parent queue {parent}")
        if pinfo.uid not in opts:
            opts[pinfo.uid] = _new_attr(pinfo)
            link(pinfo)
        opts[pinfo.uid].children[q.uid] = opts[q.uid]
        opts[q.uid].ancestors = opts[pinfo.uid].ancestors + [pinfo.uid]

    try:
        for name in sorted(queues):
            q = queues[name]
            if q.uid in opts:
                continue
            opts[q.uid] = _new_attr(q)
            link(q)
    except HierarchyError as e:
        warnings.append(f"capacity: queue hierarchy is invalid ({e}); the capacity plugin admits and "
                        "allocates nothing this session")
        return opts, False
    detached = sorted(a.name for a in opts.values() if a.name != ROOT and (not a.ancestors or a.ancestors[0] != ROOT))
    if detached:
        warnings.append(f"capacity: queues {', '.join(detached)} do not lead to root through spec.parent (a "
                        "cycle); their realCapability is empty, so their jobs get nothing allocated, and a job "
                        "in a queue of the cycle itself stops the capacity plugin for the session")

    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        attr = opts.get(job.queue)
        if attr is None:
            continue
        if attr.children:
            warnings.append(f"capacity: the queue {attr.name} of job {job.namespace}/{job.name} is not a leaf "
                            "queue; the capacity plugin admits and allocates nothing this session")
            return opts, False
        contrib = job_contribution(job)
        for a in [attr] + [opts[x] for x in attr.ancestors]:
            a.allocated.add(contrib[0])
            a.request.add(contrib[1])
            a.inqueue.add(contrib[2])
            a.elastic.add(contrib[3])

    root = opts[ROOT]
    assert root.capability is not None      # set for every hierarchical attribute (_new_attr)
    if root.capability.is_empty():
        inf = Resource.infinite()
        for k in total.scalars:
            inf.scalars[k] = MAX_INT64_F
        root.capability = inf
    root.real_capability = root.capability
    _check_tree(root, warnings)
    for attr in opts.values():
        attr.update_share()
    return opts, True


def _check_tree(attr: QueueAttr, warnings: list[str]) -> None:
    """checkHierarchicalQueue: inherit unset capability dimensions, derive realCapability top
    down; report (never reject) quotas that the parent cannot honour."""
    total_g, total_d = Resource(), Resource()
    children = [attr.children[k] for k in sorted(attr.children)]
    parent_cap = attr.capability
    assert parent_cap is not None           # set for every hierarchical attribute (_new_attr)
    for c in children:
        c.deserved = max_resource(c.deserved, c.guarantee)
        total_d.add(c.deserved)
        total_g.add(c.guarantee)
        cap = c.capability
        assert cap is not None
        if cap.cpu <= 0:
            cap.cpu = parent_cap.cpu
        if cap.memory <= 0:
            cap.memory = parent_cap.memory
        for k, v in parent_cap.scalars.items():
            cap.scalars.setdefault(k, v)
        over = cap.less_equal_names(parent_cap, INFINITY)
        if over:
            warnings.append(f"capacity: child queue {c.name} capability {cap} exceeds parent queue "
                            f"{attr.name} capability {parent_cap} on {', '.join(over)}; the child's "
                            "effective capability is limited by the parent")
    if attr.name == ROOT:
        attr.guarantee = total_g
        attr.deserved = total_d
    for c in children:
        real = exceeded_part(attr.real_capability, total_g).add(c.guarantee)
        assert c.capability is not None
        real.min_dimension(c.capability, INFINITY)
        c.real_capability = real
    if attr.deserved.less_partly(total_d, ZERO):
        warnings.append(f"capacity: sum of child queue deserved {total_d} exceeds parent queue {attr.name} "
                        f"deserved {attr.deserved}")
    if attr.guarantee.less_partly(total_g, ZERO):
        warnings.append(f"capacity: sum of child queue guarantees {total_g} exceeds parent queue {attr.name} "
                        f"guarantee {attr.guarantee}; not all child guarantees can be met at once")
    for c in children:
        _check_tree(c, warnings)


def queue_level(l: QueueAttr, r: QueueAttr) -> int:
    """getQueueLevel: index of the deepest common entry of the two ancestor paths."""
    level = 0
    for i in range(min(len(l.ancestors), len(r.ancestors))):
        if l.ancestors[i] == r.ancestors[i]:
            level = i
        else:
            return level
    return level


def ancestor_at_depth(attr: QueueAttr | None, depth: int) -> str | None:
    """queueAncestorAtDepth: depth 1 is the parent."""
    if attr is None or depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


def ancestors_by_level(attr: QueueAttr | None, max_level: int) -> dict[int, str]:
    out: dict[int, str] = {}
    if attr is None or max_level <= 0:
        return out
    for level in range(1, max_level + 1):
        a = ancestor_at_depth(attr, level)
        if a is not None:
            out[level] = a
    return out
