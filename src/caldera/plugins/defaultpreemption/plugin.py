"""DefaultPreemption (PostFilter): evict lower-priority pods so that an unschedulable pod fits.

Flow (kube's DefaultPreemption.PostFilter -> Evaluator.Preempt):
  1. the preemptor must be eligible (preemptionPolicy is not Never; its nominated node, unless
     that node is now UnschedulableAndUnresolvable, has no lower-priority pod already being
     terminated by a preemption);
  2. nodes that failed Filter with Unschedulable are dry-run from a random offset until enough
     candidates are found (DefaultPreemptionArgs; see candidates.py, victims.py);
  3. the best candidate is picked (pick.py);
  4. its victims are evicted, lower-priority pods nominated to that node lose their nomination,
     and the preemptor is nominated to it. It binds in a later cycle, not in this one.
Every message is returned prefixed with "preemption: ", as kube's PostFilter does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...framework.interface import Plugin, PostFilterResult
from ...framework.status import Code, Status
from .candidates import (
    aggregate_message,
    count_potential_nodes,
    dry_run_preemption,
    fit_error_message,
    no_victims_message,
    potential_nodes,
)
from .fast import build as build_fast_path
from .pick import select_candidate
from .victims import importance_key, select_victims_on_node

if TYPE_CHECKING:
    from ...framework.protocols import PreemptionHandle

NAME = "DefaultPreemption"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_CANDIDATE = "no candidate node for preemption"


def _int_arg(args: dict, key: str, default: int) -> int:
    v = args.get(key, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool):
        raise ConfigError(f"DefaultPreemptionArgs.{key}: must be an integer, got {v!r}")
    return v


def terminating_by_preemption(pod) -> bool:
    """A pod being deleted whose DisruptionTarget condition says the scheduler preempted it."""
    if not pod.terminating:
        return False
    status = pod.raw.get("status") or {}
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"
    return False


class DefaultPreemption(Plugin):
    name = NAME
    handle: PreemptionHandle
    # victim selection by resource arithmetic when only NodeResourcesFit depends on pods (fast.py)
    use_fast_path = True

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        a = self.args
        known = {"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}
        unknown = set(a) - known - {"apiVersion", "kind"}
        if unknown:
            raise ConfigError(f"DefaultPreemptionArgs: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        pct = _int_arg(a, "minCandidateNodesPercentage", 10)
        absolute = _int_arg(a, "minCandidateNodesAbsolute", 100)
        errs = []
        if not 0 <= pct <= 100:
            errs.append(f"minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]")
        if absolute < 0:
            errs.append(f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)")
        if pct == 0 and absolute == 0:
            errs.append("minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
                        "minCandidateNodesAbsolute")
            errs.append("minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as "
                        "minCandidateNodesPercentage")
        if errs:
            raise ConfigError("DefaultPreemptionArgs: " + "; ".join(errs))
        self.min_candidate_nodes_percentage = pct
        self.min_candidate_nodes_absolute = absolute

    # ---- customisation points (kube's IsEligiblePod / MoreImportantPod) --------------
    def is_eligible_pod(self, table, i, victim, preemptor) -> bool:
        """Extra victim filter on top of "lower priority than the preemptor" (default: none)."""
        return True

    def is_preemption_allowed(self, table, i, victim, preemptor) -> bool:
        return victim.priority < preemptor.priority and self.is_eligible_pod(table, i, victim, preemptor)

    def potential_victims(self, table, i, pod) -> list:
        """The pods on node i this preemptor may preempt, in the node's pod order."""
        prio = pod.priority
        lower = [p for p in table.pods[i].values() if p.priority < prio]
        if lower and ("is_eligible_pod" in vars(self) or
                      type(self).is_eligible_pod is not DefaultPreemption.is_eligible_pod):
            lower = [p for p in lower if self.is_eligible_pod(table, i, p, pod)]
        return lower

    def sort_by_importance(self, pods) -> list:
        return sorted(pods, key=importance_key)

    # ---- helpers -------------------------------------------------------------------
    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        if n < self.min_candidate_nodes_absolute:
            n = self.min_candidate_nodes_absolute
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def select_victims_on_node(self, pod, table, i, pdbs):
        return select_victims_on_node(self, pod, table, i, pdbs)

    def nominated_node_of(self, pod) -> str:
        return pod.nominated_node_name or self.handle.nominated_node(pod)

    def pod_eligible_to_preempt_others(self, pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nom = self.nominated_node_of(pod)
        if nom:
            if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            table = self.handle.table
            i = table.index.get(nom)
            if i is not None:
                for p in table.pods[i].values():
                    if self.is_preemption_allowed(table, i, p, pod) and terminating_by_preemption(p):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def _clear_nomination(self, pod) -> None:
        if self.handle.nominated_node(pod) or pod.nominated_node_name:
            self.handle.nominate(pod, "")
            pod.nominated_node_name = ""

    # ---- PostFilter ----------------------------------------------------------------
    def post_filter(self, state, pod, diagnosis):
        result, s = self.preempt(pod, diagnosis)
        msg = s.message()
        if msg:
            return result, Status(s.code, "preemption: " + msg)
        return result, s

    def preempt(self, pod, diagnosis):
        """Evaluator.Preempt: (PostFilterResult or None, Status) before the message prefix."""
        table = self.handle.table
        nom = self.nominated_node_of(pod)
        nom_i = table.index.get(nom) if nom else None
        nom_status = diagnosis.status_of(nom_i) if nom_i is not None else diagnosis.absent_status
        if nom_status is None:
            nom_status = Status.unresolvable()
        ok, msg = self.pod_eligible_to_preempt_others(pod, nom_status)
        if not ok:
            return None, Status.unschedulable(msg)

        n = len(table)
        if n == 0:
            return None, Status.error("no nodes available")
        if self._no_victims_anywhere(pod):
            # every potential node's dry run would end at once with "No preemption victims found
            # for incoming pod" (SelectVictimsOnNode): count them, draw the dry run's offset
            k = count_potential_nodes(diagnosis, n)
            if k:
                self.get_offset_and_num_candidates(k)
            self._clear_nomination(pod)
            return None, Status.unschedulable(no_victims_message(n, k))
        candidates, statuses, errors = self.find_candidates(pod, diagnosis)
        if errors and not candidates:
            return None, Status.error(aggregate_message(errors))
        if not candidates:
            # kube returns a result with an empty nominated node: the pod loses its nomination
            self._clear_nomination(pod)
            return None, Status.unschedulable(fit_error_message(n, statuses))
        call_extenders = getattr(self.handle, "call_extenders", None)    # extenders with a preemptVerb
        if call_extenders is not None:
            candidates, err = call_extenders(pod, candidates)
            if err is not None:
                return None, Status.error(err)

        best = select_candidate(candidates)
        if best is None or not best.name:
            return None, Status.unschedulable(NO_CANDIDATE)
        self.prepare_candidate(best, pod)
        self.handle.nominate(pod, best.name)
        pod.nominated_node_name = best.name      # what the status patch does in kube
        return PostFilterResult(nominated_node=best.name), Status()

    def find_candidates(self, pod, diagnosis):
        table = self.handle.table
        nodes = potential_nodes(diagnosis, len(table))
        if not nodes:
            return [], {}, []
        offset, num = self.get_offset_and_num_candidates(len(nodes))
        fast = None
        if self.use_fast_path and "select_victims_on_node" not in vars(self) and \
                type(self).select_victims_on_node is DefaultPreemption.select_victims_on_node:
            fast = build_fast_path(self, pod, nodes)
        return dry_run_preemption(self, pod, nodes, self.handle.pdbs or [], offset, num, fast)

    def _no_victims_anywhere(self, pod) -> bool:
        """No pod on any node has a lower priority than `pod`, and victims are exactly the
        lower-priority pods."""
        low = self.handle.table.lowest_priority()
        return (low is None or low >= pod.priority) and self._default_victim_rules()

    def _default_victim_rules(self) -> bool:
        """Victims are exactly the lower-priority pods (no customisation point overridden)."""
        cls = type(self)
        return all(n not in vars(self) and getattr(cls, n) is getattr(DefaultPreemption, n)
                   for n in ("is_preemption_allowed", "potential_victims", "select_victims_on_node"))

    def prepare_candidate(self, c, pod) -> None:
        """Evict the victims (pods already terminating are left alone) and clear the nomination
        of lower-priority pods nominated to the node."""
        reason = f"preempted by {pod.key} on {c.name}"
        for v in c.victims:
            if v.terminating:
                continue
            self.handle.evict(v, reason)
        i = self.handle.table.index.get(c.name)
        if i is None:
            return
        for p in list(self.handle.nominated_pods(i)):
            if p.priority < pod.priority:
                self._clear_nomination(p)
