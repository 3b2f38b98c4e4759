"""PodTopologySpread: spread matching pods evenly across topology domains.

Hard constraints (whenUnsatisfiable: DoNotSchedule) are enforced by PreFilter/Filter
(filtering.py), soft ones (ScheduleAnyway) scored by PreScore/Score/NormalizeScore (scoring.py);
parsing, args and pod counting live in common.py. Semantics follow kube-scheduler v1.34+
(pkg/scheduler/framework/plugins/podtopologyspread): per-constraint domain counts, minDomains,
nodeAffinityPolicy (default Honor) / nodeTaintsPolicy (default Ignore), matchLabelKeys merged into
the selector, terminating pods and other namespaces not counted.

Default constraints (PodTopologySpreadArgs): with defaultingType System (the default) a pod without
constraints of its own gets kube's system defaults (hostname maxSkew 3, zone maxSkew 5, both
ScheduleAnyway); with List it gets args.defaultConstraints (which must not set a labelSelector).
Either way their selector is built from the Services, ReplicationControllers, ReplicaSets and
StatefulSets that select the pod (helper.DefaultSelector; the objects come from the handle's
`workloads`: the input's manifests in `caldera schedule`, informers in `caldera run`). As in kube,
when nothing selects the pod the default constraints are dropped and PreFilter / PreScore return
Skip; so does a pod without constraints when the scheduler knows no Service or controller at all,
at the cost of one attribute check.
"""
from __future__ import annotations

import numpy as np

from ...framework.interface import Plugin
from ...framework.status import Status
from .common import (
    DO_NOT_SCHEDULE,
    NAME,
    SCHEDULE_ANYWAY,
    SpreadArgs,
    SpreadError,
    default_constraints,
    pod_constraints,
)
from .filtering import PASS, compute_prefilter, filter_codes, status_for
from .scoring import compute_raw_scores, normalize

PREFILTER_KEY = "PreFilter" + NAME
PRESCORE_KEY = "PreScore" + NAME


class PodTopologySpread(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self.spread_args = SpreadArgs(self.args)
        self.system_defaulted = self.spread_args.system_defaulted

    def _constraints(self, pod, action: str):
        """The pod's own constraints for `action`, or the defaults if it has none of its own."""
        own = pod_constraints(pod)
        if own is not None:
            return own[0] if action == DO_NOT_SCHEDULE else own[1]
        return default_constraints(self.spread_args, pod, action, getattr(self.handle, "workloads", None))

    # ---- PreFilter / Filter ---------------------------------------------------------------
    def pre_filter(self, state, pod):
        try:
            cs = self._constraints(pod, DO_NOT_SCHEDULE)
        except SpreadError as e:
            return Status.error(f"obtaining pod's hard topology spread constraints: {e}")
        if not cs:
            return Status.skip()
        state.write(PREFILTER_KEY, compute_prefilter(self.handle.table, pod, cs))
        return None

    def _state(self, state, pod, table):
        s = state.get(PREFILTER_KEY)
        if s is None:   # Filter without PreFilter (e.g. a caller that skipped it): compute now
            cs = self._constraints(pod, DO_NOT_SCHEDULE)
            s = compute_prefilter(table, pod, cs)
            state.write(PREFILTER_KEY, s)
        return s

    def filter(self, state, pod, table, idx):
        s = self._state(state, pod, table)
        if not s.constraints:
            return None  # every node passes
        return filter_codes(s, idx) == PASS

    def filter_status(self, state, pod, table, i):
        s = self._state(state, pod, table)
        return status_for(int(filter_codes(s, np.array([i], dtype=np.intp))[0]))

    def filter_statuses(self, state, pod, table, idx):
        s = self._state(state, pod, table)
        return [status_for(int(c)) for c in filter_codes(s, idx)]

    # ---- PreScore / Score / NormalizeScore ------------------------------------------------------
    def pre_score(self, state, pod, table, idx):
        if len(table) == 0:
            return Status.skip()
        try:
            cs = self._constraints(pod, SCHEDULE_ANYWAY)
        except SpreadError as e:
            return Status.error(f"obtaining pod's soft topology spread constraints: {e}")
        if not cs:
            return Status.skip()
        # only non-system-default rules require every topology key on a node
        require_all = pod_constraints(pod) is not None or not self.system_defaulted
        state.write(PRESCORE_KEY, compute_raw_scores(table, pod, cs, np.asarray(idx, dtype=np.intp),
                                                     require_all))
        return None

    def score(self, state, pod, table, idx):
        raw = state.get(PRESCORE_KEY)
        if raw is None:
            return np.zeros(idx.size, dtype=np.int64)
        return raw[idx]

    def normalize_score(self, state, pod, scores):
        if state.get(PRESCORE_KEY) is None:
            return scores
        return normalize(np.asarray(scores, dtype=np.int64))

    def events_to_register(self):
        return ["Pod/Add", "Pod/UpdatePodLabel", "Pod/UpdatePodToleration", "Pod/Delete",
                "Node/Add", "Node/Delete", "Node/UpdateNodeLabel", "Node/UpdateNodeTaint"]
