"""Coscheduling's PodGroup manager (scheduler-plugins pkg/coscheduling/core/core.go).

It keeps, per PodGroup (`namespace/name`):
- the assigned pods: names of the group's pods that passed Permit (waiting or bound), plus the
  group's pods already on nodes when the manager first looks at the group (the reference fills
  this from its pod informer's add events for assigned pods);
- the "permitted" groups: minResources was checked and found available (valid for the Permit
  timeout, as the reference's TTL cache);
- the backed-off groups (podGroupBackoffSeconds: from a PostFilter rejection on, PreFilter
  refuses the group's pods; a rejection while backed off does not extend it) and the last time
  each group failed (QueueSort's timestamp for a failed group).
Times are the driver's clock (`Handle.now()`): virtual in `caldera simulate`, 0 in a pass.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...api.objects import Pod
from ...api.podgroup import POD_GROUP_LABEL, PodGroup
from ...framework.interface import CycleState

PG_NOT_SPECIFIED = "PodGroup not specified"
PG_NOT_FOUND = "PodGroup not found"
SUCCESS = "Success"
WAIT = "Wait"
PERMIT_STATE_KEY = "PermitCoscheduling"
PERMITTED_DEFAULT_TTL = 3.0      # the permitted groups' cache: gocache.New(3*time.Second, ...)


def pod_group_label(pod: Pod) -> str:
    return pod.labels.get(POD_GROUP_LABEL, "") if pod.labels else ""


def pod_group_full_name(pod: Pod) -> str:
    name = pod_group_label(pod)
    return f"{pod.namespace}/{name}" if name else ""


def wait_time(pg: PodGroup | None, schedule_timeout: float) -> float:
    """util.GetWaitTimeDuration: the group's scheduleTimeoutSeconds, else the plugin's
    permitWaitingTimeSeconds when not 0, else 60 seconds."""
    if pg is not None and pg.schedule_timeout_seconds is not None:
        return float(pg.schedule_timeout_seconds)
    if schedule_timeout:
        return schedule_timeout
    return 60.0


class PodGroupManager:
    def __init__(self, pod_groups: Callable[[], dict[str, PodGroup]], list_pods: Callable[[], list[Pod]],
                 table: Callable[[], object], schedule_timeout: float, now: Callable[[], float]):
        self._pod_groups = pod_groups
        self._list_pods = list_pods
        self._table = table
        self.schedule_timeout = schedule_timeout
        self.now = now
        self.permitted: dict[str, float] = {}        # group -> expiry
        self.backed_off: dict[str, float] = {}       # group -> expiry
        self.last_failed: dict[str, float] = {}      # group -> time of the last failure
        self.assigned: dict[str, set[str]] = {}
        self._seeded: set[str] = set()

    # ---- lookups -----------------------------------------------------------------------
    def get_pod_group(self, pod: Pod) -> tuple[str, PodGroup | None]:
        name = pod_group_label(pod)
        if not name:
            return "", None
        full = f"{pod.namespace}/{name}"
        return full, self._pod_groups().get(full)

    def siblings(self, pod: Pod) -> list[Pod]:
        """The pods of the namespace labelled with the pod's group (the pod itself included)."""
        name = pod_group_label(pod)
        return [p for p in self._list_pods()
                if p.namespace == pod.namespace and p.labels and p.labels.get(POD_GROUP_LABEL) == name]

    def _assigned(self, full: str) -> set[str] | None:
        if full not in self._seeded:       # the informer's adds of the group's assigned pods
            self._seeded.add(full)
            ns, name = full.split("/", 1)
            bound = {p.name for p in self._list_pods() if p.node_name and p.namespace == ns
                     and p.labels and p.labels.get(POD_GROUP_LABEL) == name}
            if bound:
                self.assigned.setdefault(full, set()).update(bound)
        return self.assigned.get(full)

    def assigned_count(self, full: str) -> int:
        a = self._assigned(full)
        return len(a) if a else 0

    def _live(self, cache: dict[str, float], key: str) -> bool:
        exp = cache.get(key)
        if exp is None:
            return False
        if self.now() >= exp:
            del cache[key]
            return False
        return True

    # ---- what the plugin calls -----------------------------------------------------------
    def pre_filter(self, pod: Pod) -> str | None:
        """None if the pod may proceed, else the reason it may not."""
        full, pg = self.get_pod_group(pod)
        if pg is None:
            return None
        if self._live(self.backed_off, full):
            return f"podGroup {full} failed recently"
        pods = self.siblings(pod)
        gap = pg.min_member - len(pods)
        if gap > 0:
            return (f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: "
                    f"{len(pods)}, minMember of group: {pg.min_member}")
        for p in pods:
            if p.scheduling_gates:
                gap += 1
            if gap > 0:
                return f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
        if pg.min_resources is None:
            return None
        if self._live(self.permitted, full):
            return None
        err = self.check_cluster_resource(pg, full)
        if err:
            return err
        # go-cache's Add with a zero duration takes the cache's default expiration (3 s)
        self.permitted[full] = self.now() + (self.schedule_timeout or PERMITTED_DEFAULT_TTL)
        return None

    def check_cluster_resource(self, pg: PodGroup, full: str) -> str | None:
        """CheckClusterResource: walking the nodes in order, subtract each node's free resources
        (the group's own pods not counted as using any) from minResources (with pods =
        minMember); fine as soon as every resource is covered."""
        want = dict(pg.min_resources or {})
        want["pods"] = pg.min_member
        table = self._table()
        n = len(table)           # type: ignore[arg-type]
        gap: dict[str, int] = {}
        if n:
            ns, name = full.split("/", 1)
            back = np.zeros((n, len(table.res_names)), dtype=np.int64)    # type: ignore[attr-defined]
            for i, on in enumerate(table.pods):                           # type: ignore[attr-defined]
                for p in on.values():
                    if p.namespace == ns and p.labels and p.labels.get(POD_GROUP_LABEL) == name:
                        rows, vals = table.pod_vector(p)                  # type: ignore[attr-defined]
                        back[i, rows] += vals
            free = table.alloc - table.req + back                         # type: ignore[attr-defined]
        for r, q in want.items():
            # a resource is covered at the first node where the running gap reaches <= 0
            if n:
                j = table.res_index.get(r)                                # type: ignore[attr-defined]
                col = free[:, j] if j is not None else np.zeros(n, dtype=np.int64)
                cum = q - np.cumsum(col)
                if (cum <= 0).any():
                    continue
                gap[r] = int(cum[-1])
            else:
                gap[r] = q
        if not gap:
            return None
        return "resource gap: map[" + " ".join(f"{r}:{v}m" if r == "cpu" else f"{r}:{v}"
                                               for r, v in sorted(gap.items())) + "]"

    def permit(self, state: CycleState, pod: Pod) -> str:
        full, pg = self.get_pod_group(pod)
        if not full:
            return PG_NOT_SPECIFIED
        if pg is None:
            return PG_NOT_FOUND
        assigned = self._assigned(full)
        if assigned is None:
            assigned = self.assigned[full] = set()
        assigned.add(pod.name)
        if len(assigned) >= pg.min_member:
            return SUCCESS
        if len(assigned) == 1:
            state.write(PERMIT_STATE_KEY, True)
        return WAIT

    def unreserve(self, pod: Pod) -> None:
        full = pod_group_full_name(pod)
        if not full:
            return
        a = self.assigned.get(full)
        if a is not None:
            a.discard(pod.name)
            if not a:
                del self.assigned[full]

    def creation_timestamp(self, pod: Pod, ts: float) -> float:
        name = pod_group_label(pod)
        if not name:
            return ts
        full = f"{pod.namespace}/{name}"
        failed = self.last_failed.get(full)
        if failed is not None:
            return failed
        pg = self._pod_groups().get(full)
        if pg is None:
            return ts
        return pg.creation or 0.0

    def backoff(self, full: str, seconds: float) -> None:
        """BackoffPodGroup: go-cache's Add, which keeps an entry that has not expired: a group
        backs off `seconds` from the first rejection, not from the last one."""
        if seconds and not self._live(self.backed_off, full):
            self.backed_off[full] = self.now() + seconds

    def delete_permitted(self, full: str) -> None:
        self.permitted.pop(full, None)

    def mark_failure(self, full: str) -> None:
        self.last_failed[full] = self.now()

    def clear_failure(self, full: str) -> None:
        self.last_failed.pop(full, None)
