"""InterPodAffinity: required pod affinity / anti-affinity (PreFilter, Filter) and preferred
affinity / anti-affinity, both the incoming pod's and, symmetrically, existing pods' (PreScore,
Score, NormalizeScore), as kube-scheduler's interpodaffinity plugin.

Args (InterPodAffinityArgs): hardPodAffinityWeight (default 1, 0..100) -- the score an existing
pod's *required* affinity term matching the incoming pod adds to its topology domain;
ignorePreferredTermsOfExistingPods (default false) -- skip scoring when the incoming pod has no
preferred terms.

Namespaces: see terms.py. A namespace's labels are those of the handle's `workloads`
(api/workloads.py: the input's Namespace objects in `caldera schedule`, the Namespace informer in
`caldera run`), None when it does not know the namespace (kube's NamespaceLister miss). A handle
without workloads (None) treats every namespace as existing with only the label the API server
puts on all namespaces, `kubernetes.io/metadata.name: <name>`. Labels registered in
`namespace_labels` (namespace -> labels; tests) are added on top.

Cost: a pod without (anti-)affinity in a cluster whose running pods have none
(`table.pods_with_affinity == 0`) is skipped at PreFilter and PreScore without any work.
Otherwise the work is proportional to the pods that match the incoming pod's selectors and to
the distinct term sets of pods that have terms (see index.py), plus numpy passes over nodes.
"""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Status
from .filtering import OK, compute_verdicts, verdict_status
from .scoring import node_scores, normalize, topology_scores
from .terms import NO_TERMS, NS_NAME_LABEL, pod_terms

NAME = "InterPodAffinity"
PREFILTER_KEY = "PreFilter" + NAME
PRESCORE_KEY = "PreScore" + NAME


def parse_args(args: dict) -> tuple[int, bool]:
    known = {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods", "apiVersion", "kind"}
    unknown = set(args) - known
    if unknown:
        raise ConfigError(f"InterPodAffinityArgs: unknown field(s) {sorted(unknown)}; "
                          f"known: hardPodAffinityWeight, ignorePreferredTermsOfExistingPods")
    kind = args.get("kind")
    if kind not in (None, "InterPodAffinityArgs"):
        raise ConfigError(f"InterPodAffinityArgs: kind is {kind!r}; pluginConfig for InterPodAffinity "
                          "takes kind InterPodAffinityArgs")
    w = args.get("hardPodAffinityWeight", 1)
    if w is None:
        w = 1
    if not isinstance(w, int) or isinstance(w, bool):
        raise ConfigError(f"InterPodAffinityArgs.hardPodAffinityWeight: must be an integer in [0, 100], got {w!r}")
    if not 0 <= w <= 100:
        raise ConfigError(f"InterPodAffinityArgs.hardPodAffinityWeight: Invalid value: {w}: not in valid range "
                          "[0, 100]; set an integer from 0 to 100 (default 1)")
    ign = args.get("ignorePreferredTermsOfExistingPods", False)
    if ign is None:
        ign = False
    if not isinstance(ign, bool):
        raise ConfigError("InterPodAffinityArgs.ignorePreferredTermsOfExistingPods: must be true or false, "
                          f"got {ign!r}")
    return w, ign


class InterPodAffinity(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self.hard_weight, self.ignore_existing_preferred = parse_args(self.args)
        self.namespace_labels: dict[str, dict[str, str]] = {}

    def events_to_register(self):
        return ["Pod/Add", "Pod/UpdatePodLabel", "Pod/Delete",
                "Node/Add", "Node/UpdateNodeLabel", "Node/UpdateNodeTaint"]

    def ns_labels(self, ns: str) -> dict[str, str] | None:
        """The labels of namespace `ns`, None when the namespace lister does not find it."""
        wl = getattr(self.handle, "workloads", None)
        base = {NS_NAME_LABEL: ns} if wl is None else wl.namespace_labels(ns)
        extra = self.namespace_labels.get(ns)
        if not extra:
            return base
        out = dict(extra)
        out.update(base or {NS_NAME_LABEL: ns})
        return out

    @staticmethod
    def _terms(pod):
        return pod_terms(pod) if (pod.has_affinity or pod.has_anti_affinity) else NO_TERMS

    # ---- PreFilter / Filter -----------------------------------------------------------
    def pre_filter(self, state, pod):
        if not (pod.has_affinity or pod.has_anti_affinity) and self.handle.table.pods_with_affinity == 0:
            return Status.skip()
        terms = self._terms(pod)
        if terms.error:
            return Status.unresolvable(f"parsing pod: {terms.error}")
        table = self.handle.table
        if table.pods_with_affinity == 0 and not terms.req_aff and not terms.req_anti:
            return Status.skip()
        verdicts = compute_verdicts(table, pod, terms, self.ns_labels)
        if verdicts is None:
            return Status.skip()
        state.write(PREFILTER_KEY, verdicts)
        return None

    def _verdicts(self, state, pod, table):
        v = state.get(PREFILTER_KEY)
        if v is None or v.size != len(table):
            terms = self._terms(pod)
            v = None if terms.error else compute_verdicts(table, pod, terms, self.ns_labels)
            if v is None:
                v = np.zeros(len(table), dtype=np.int8)
            state.write(PREFILTER_KEY, v)
        return v

    def filter(self, state, pod, table, idx):
        return self._verdicts(state, pod, table)[idx] == OK

    def filter_status(self, state, pod, table, i):
        s = verdict_status(int(self._verdicts(state, pod, table)[i]))
        return s if s is not None else Status()

    # ---- PreScore / Score / NormalizeScore --------------------------------------------
    def pre_score(self, state, pod, table, idx):
        has_preferred = False
        if pod.has_affinity or pod.has_anti_affinity:
            aff = pod.affinity
            for block in ("podAffinity", "podAntiAffinity"):
                b = aff.get(block)
                if isinstance(b, dict) and b.get("preferredDuringSchedulingIgnoredDuringExecution"):
                    has_preferred = True
        if self.ignore_existing_preferred and not has_preferred:
            return Status.skip()
        if not has_preferred and table.pods_with_affinity == 0:
            return Status.skip()
        terms = self._terms(pod)
        if terms.error:
            return Status.error(f"failed to parse pod: {terms.error}")
        scores = topology_scores(table, pod, terms, self.hard_weight, self.ns_labels)
        if scores is None:
            return Status.skip()
        state.write(PRESCORE_KEY, scores)
        return None

    def score(self, state, pod, table, idx):
        scores = state.get(PRESCORE_KEY)
        if scores is None:
            return np.zeros(idx.size, dtype=np.int64)
        return node_scores(table, scores, idx)

    def normalize_score(self, state, pod, scores):
        if not state.get(PRESCORE_KEY):
            return scores
        return normalize(scores)
