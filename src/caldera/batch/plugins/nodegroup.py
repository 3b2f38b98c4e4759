"""nodegroup: queues bound to groups of nodes (Volcano's pkg/scheduler/plugins/nodegroup).

A node belongs to the group named by its label `volcano.sh/nodegroup-name` (any value, "" too);
a Queue names groups in `spec.affinity`:

    affinity:
      nodeGroupAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [g1, g2]
        preferredDuringSchedulingIgnoredDuringExecution: [g2]
      nodeGroupAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [g3]
        preferredDuringSchedulingIgnoredDuringExecution: [g4]

Predicate (a task of a job in queue q, on a node), every failure UnschedulableAndUnresolvable:
- node without the label: fails with "node group label not found", unless `strict` is false and
  q has no rule at all (no affinity, or four empty lists), which passes;
- labelled node, q without rules: "node group affinity not specified";
- labelled node of group g: passes when g is in required or preferred affinity, except that g in
  required anti-affinity fails and g in preferred anti-affinity passes again (so a group listed in
  preferred anti-affinity always passes); otherwise "node does not satisfy the node group affinity".

Node order (no weight argument; nodes without the label, or queues without affinity, score 0):
  +100 when g is in required affinity; +50 when g is in preferred affinity, or, with
  `enablePreferredOrder`, +0.5 * 100 * (n - i) / n where i is g's position in the preferred list
  (its last position when listed twice) and n the number of distinct preferred groups; and the
  score is -1 whenever g is in preferred anti-affinity.

Arguments: `strict` (default true), `enablePreferredOrder` (default false).

Hierarchy (`enableHierarchy: true` on the plugin's conf entry): a queue without `spec.affinity`
takes the affinity of its nearest ancestor that has one (`affinity: {}` counts as having one and
stops the search). A queue's parent is `spec.parent`, "root" when unset; the root queue is an
ancestor only when it is one of the session's Queues (Caldera does not create a `root` Queue:
give one in the manifests to have queues inherit from it). A parent that is not a Queue ends the
chain, and a cycle is cut where it closes, as Volcano does (it only logs both).

Faithful to v1.15.1 (nodegroup_test.go is ported in tests/batch/test_nodegroup.py). Vectorised:
node groups are coded once per session and each queue's mask and scores are per-group tables.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..api.fiterrors import UNRESOLVABLE
from .base import BatchPlugin, Predicate

if TYPE_CHECKING:
    from ..api.info import TaskInfo
    from ..api.objects import QueueAffinity
    from ..framework.session import Session

NODE_GROUP_NAME_KEY = "volcano.sh/nodegroup-name"
ROOT_QUEUE = "root"
BASE_SCORE = 100
STRICT, PREFERRED_ORDER = "strict", "enablePreferredOrder"

ERR_AFFINITY_NOT_FOUND = "node group affinity not specified"
ERR_LABEL_NOT_FOUND = "node group label not found"
ERR_UNSATISFIED = "node does not satisfy the node group affinity"

# per-node outcome codes of a queue's predicate table
_PASS, _NO_LABEL, _NO_AFFINITY, _UNSATISFIED = 0, 1, 2, 3
_REASONS = {_NO_LABEL: ERR_LABEL_NOT_FOUND, _NO_AFFINITY: ERR_AFFINITY_NOT_FOUND, _UNSATISFIED: ERR_UNSATISFIED}


class GroupAffinity:
    """A queue's node group rules (queueGroupAffinity): predicate and score of one group."""
    __slots__ = ("anti_preferred", "anti_required", "preferred", "preferred_index", "required")

    def __init__(self, aff: QueueAffinity):
        self.required = frozenset(aff.required)
        self.preferred = frozenset(aff.preferred)
        self.anti_required = frozenset(aff.anti_required)
        self.anti_preferred = frozenset(aff.anti_preferred)
        # a group listed twice keeps its last position; n counts distinct groups
        self.preferred_index = {g: i for i, g in enumerate(aff.preferred)}

    def empty(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)

    def predicate(self, group: str) -> bool:
        ok = group in self.required or group in self.preferred
        if group in self.anti_required:
            ok = False
        if group in self.anti_preferred:
            ok = True
        return ok

    def score(self, group: str, preferred_order: bool) -> float:
        s = 0.0
        if group in self.required:
            s += BASE_SCORE
        if preferred_order:
            i = self.preferred_index.get(group)
            if i is not None:
                n = len(self.preferred_index)
                s += 0.5 * BASE_SCORE * float(n - i) / float(n)
        elif group in self.preferred:
            s += 0.5 * BASE_SCORE
        if group in self.anti_preferred:
            s = -1.0
        return s


class NodeGroupPlugin(BatchPlugin):
    name = "nodegroup"
    ARGUMENTS = frozenset({STRICT, PREFERRED_ORDER})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.strict = self.arg_bool(STRICT, True)
        self.preferred_order = self.arg_bool(PREFERRED_ORDER, False)
        self.affinity: dict[str, GroupAffinity | None] = {}

    # ---- queue attributes ----------------------------------------------------------------------
    def _init_queue_affinity(self, ssn: Session) -> None:
        own = {name: (GroupAffinity(q.queue.affinity) if q.queue.affinity is not None else None)
               for name, q in ssn.queues.items()}
        self.affinity = dict(own)
        opt = self.option or ssn.plugin_option(self.name)
        if opt is None or not opt.enabled("hierarchy"):
            return
        for name in ssn.queues:
            if own[name] is not None:
                continue
            for anc in self._ancestors(ssn, name):
                if own[anc] is not None:
                    self.affinity[name] = own[anc]
                    break

    @staticmethod
    def _ancestors(ssn: Session, name: str) -> list[str]:
        """The queue's ancestors, nearest first (buildAncestors): parents while they are queues
        of the session, "root" for a queue without one; stops at a cycle."""
        out: list[str] = []
        seen = {name}
        cur = name
        while cur != ROOT_QUEUE:
            parent = ssn.queues[cur].parent or ROOT_QUEUE
            if parent not in ssn.queues or parent in seen:
                break
            out.append(parent)
            seen.add(parent)
            cur = parent
        return out

    # ---- session -------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._init_queue_affinity(ssn)
        groups: dict[str, int] = {}
        codes = np.full(len(ssn.nodes), -1, dtype=np.intp)       # -1: no label
        for ni in ssn.nodes.infos:
            g = ni.node.labels.get(NODE_GROUP_NAME_KEY)
            if g is not None:
                codes[ni.i] = groups.setdefault(g, len(groups))
        self.group_codes = codes
        self.group_names = list(groups)
        self._tables: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        ssn.add("node_order", self.name, self.node_order)
        ssn.add("predicate", self.name, Predicate(self.mask, self.reason))

    def _table(self, queue: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """Per node group, plus a last entry for unlabelled nodes: (predicate outcome, score)."""
        got = self._tables.get(queue)
        if got is not None:
            return got
        aff = self.affinity.get(queue)
        unset = aff is None or aff.empty()
        n = len(self.group_names)
        outcome = np.empty(n + 1, dtype=np.intp)
        score = np.zeros(n + 1)
        for k, g in enumerate(self.group_names):
            if aff is None or unset:
                outcome[k] = _NO_AFFINITY
            else:
                outcome[k] = _PASS if aff.predicate(g) else _UNSATISFIED
            if aff is not None:
                score[k] = aff.score(g, self.preferred_order)
        outcome[n] = _PASS if (not self.strict and unset) else _NO_LABEL
        got = self._tables[queue] = (outcome, score)
        return got

    def _queue_of(self, task: TaskInfo) -> str:
        job = self.ssn.jobs.get(task.job)
        return job.queue if job is not None else ""

    def node_order(self, task: TaskInfo, idx: npt.NDArray[np.intp], detail: dict | None = None) -> np.ndarray:
        _, score = self._table(self._queue_of(task))
        return score[self.group_codes[idx]]          # code -1: the unlabelled entry, score 0

    def mask(self, task: TaskInfo, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_] | None:
        outcome, _ = self._table(self._queue_of(task))
        if not outcome.any():
            return None
        return outcome[self.group_codes[idx]] == _PASS

    def reason(self, task: TaskInfo, i: int) -> list[tuple[str, str]]:
        outcome, _ = self._table(self._queue_of(task))
        code = int(outcome[self.group_codes[i]])
        return [] if code == _PASS else [(UNRESOLVABLE, _REASONS[code])]
