"""nodeorder: kube's Score plugins as Volcano node scores (pkg/scheduler/plugins/nodeorder).

Arguments (integer weights; a plugin with weight 0 is not built):
  leastrequested.weight (1)   NodeResourcesFit, LeastAllocated over cpu:50, memory:50
  mostrequested.weight (0)    NodeResourcesFit, MostAllocated over cpu:1, memory:1
  balancedresource.weight (1) NodeResourcesBalancedAllocation over cpu, memory, nvidia.com/gpu
  nodeaffinity.weight (2)     NodeAffinity (with an empty addedAffinity: its PreScore never skips)
  podaffinity.weight (2)      InterPodAffinity
  tainttoleration.weight (3)  TaintToleration
  podtopologyspread.weight (2) PodTopologySpread (System defaulting)
  imagelocality.weight (1)    ImageLocality

ImageLocality is the NodeOrderFn: its raw per-node score (no normalisation) times its weight.
All others form the BatchNodeOrderFn over the candidate nodes: per plugin PreScore (Skip: the
plugin adds nothing), Score, NormalizeScore over those nodes, times its weight; summed.
With explain, each plugin's 0-100 score is reported under its name (the two NodeResourcesFit
strategies as NodeResourcesFit_LeastAllocated / NodeResourcesFit_MostAllocated, Volcano's keys).

Speed: the resource scores (NodeResourcesFit, BalancedAllocation) of a node depend only on the node
and its pods, so for each distinct pod request they are kept for every node and updated only on
the nodes whose pods changed (kube.ResourceRows); TaintToleration without any PreferNoSchedule taint in the
cluster is 100 on every node; plugins whose PreScore skips cost nothing. The explain path
(`detail`) computes every plugin directly over the candidates; both give the same numbers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...framework.interface import MAX_NODE_SCORE, CycleState
from ...plugins.imagelocality import image_states, pod_images
from .base import BatchPlugin
from .kube import KubeError, ResourceRows, RowCaches, SessionHandle, build, score

if TYPE_CHECKING:
    from ..framework.session import Session

LEAST = "NodeResourcesFit_LeastAllocated"
MOST = "NodeResourcesFit_MostAllocated"

# (argument, default weight, explain key, kube plugin, kube args)
SCORERS: tuple[tuple[str, int, str, str, dict[str, Any]], ...] = (
    ("leastrequested.weight", 1, LEAST, "NodeResourcesFit",
     {"scoringStrategy": {"type": "LeastAllocated",
                          "resources": [{"name": "cpu", "weight": 50}, {"name": "memory", "weight": 50}]}}),
    ("mostrequested.weight", 0, MOST, "NodeResourcesFit",
     {"scoringStrategy": {"type": "MostAllocated",
                          "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}),
    ("balancedresource.weight", 1, "NodeResourcesBalancedAllocation", "NodeResourcesBalancedAllocation",
     {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                    {"name": "nvidia.com/gpu", "weight": 1}]}),
    ("nodeaffinity.weight", 2, "NodeAffinity", "NodeAffinity", {}),
    ("podaffinity.weight", 2, "InterPodAffinity", "InterPodAffinity", {}),
    ("tainttoleration.weight", 3, "TaintToleration", "TaintToleration", {}),
    ("podtopologyspread.weight", 2, "PodTopologySpread", "PodTopologySpread", {"defaultingType": "System"}),
)
IMAGE_LOCALITY = ("imagelocality.weight", 1, "ImageLocality")
RESOURCE_SCORERS = frozenset({LEAST, MOST, "NodeResourcesBalancedAllocation"})
# PreScore Skip that kube's plugin would not return with Volcano's args (an empty, non-nil
# addedAffinity): the plugin scores 0 everywhere instead
_SKIP_IS_ZERO = frozenset({"NodeAffinity"})


def _prefer_no_schedule(table) -> bool:
    return table.cached("volcano.nodeorder.prefer-taints", lambda: any(
        t.effect == "PreferNoSchedule" for n in table.nodes for t in n.taints))


class NodeOrderPlugin(BatchPlugin):
    name = "nodeorder"
    ARGUMENTS = frozenset([arg for arg, *_ in SCORERS] + [IMAGE_LOCALITY[0]])

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.weights = {arg: self.arg_int(arg, default) for arg, default, *_ in SCORERS}
        self.weights[IMAGE_LOCALITY[0]] = self.arg_int(IMAGE_LOCALITY[0], IMAGE_LOCALITY[1])

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        handle = SessionHandle(ssn)
        # [(explain key, plugin, weight)]
        self.batch = [(key, build(kube, args, handle), self.weights[arg])
                      for arg, _, key, kube, args in SCORERS if self.weights[arg] != 0]
        self.resource = [b for b in self.batch if b[0] in RESOURCE_SCORERS]
        self.others = [b for b in self.batch if b[0] not in RESOURCE_SCORERS]
        self.rows = ResourceRows(self.resource) if self.resource else None
        self.caches = RowCaches()
        self._images: dict = {}
        w = self.weights[IMAGE_LOCALITY[0]]
        self.image = (build("ImageLocality", None, handle), w) if w != 0 else None
        ssn.add("node_order", self.name, self.node_order)
        ssn.add("batch_node_order", self.name, self.batch_node_order)

    # ---- NodeOrderFn: ImageLocality -----------------------------------------------------------------
    def node_order(self, task, idx: np.ndarray, detail: dict | None = None) -> np.ndarray | None:
        if self.image is None:
            return None
        plugin, w = self.image
        table = self.ssn.nodes.table
        if detail is None and not self._images_present(task.pod, table):
            return None                          # 0 on every node
        raw = np.asarray(plugin.score(CycleState(), task.pod, table, idx), dtype=np.int64)
        if detail is not None:
            detail[IMAGE_LOCALITY[2]] = raw
        return raw * float(w)

    def _images_present(self, pod, table) -> bool:
        """Does any node list one of the pod's images? (per image list and node set)"""
        spec = pod.spec
        sig = (pod.images, len(spec.get("containers") or ()) + len(spec.get("initContainers") or ()),
               id(table), table.node_generation)
        hit = self._images.get(sig)
        if hit is None:
            if len(self._images) > 4096:
                self._images.clear()
            states = image_states(table)
            hit = self._images[sig] = any(n in states for n in pod_images(pod)[0])
        return hit

    # ---- BatchNodeOrderFn ---------------------------------------------------------------------------
    def batch_node_order(self, task, idx: np.ndarray, detail: dict | None = None) -> np.ndarray | None:
        if not self.batch:
            return None
        if detail is not None:
            return self.reference(task, idx, detail)
        table = self.ssn.nodes.table
        pod = task.pod
        total = None
        if self.rows is not None:
            key = self.rows.key(pod)
            if key is not None:
                vals = self.caches.get(key, table, lambda: self._resource_full(pod, table),
                                       lambda i: self.rows.row(table, key, i))
                total = vals[idx]
        const = 0
        state = None
        for _, plugin, w in self.others:
            if plugin.name == "TaintToleration" and not _prefer_no_schedule(table):
                const += MAX_NODE_SCORE * w       # reverse-normalised zeros
                continue
            if state is None:
                state = CycleState()
            s = plugin.pre_score(state, pod, table, idx)
            if s is not None and s.is_skip():
                continue                          # NodeAffinity's Skip is 0 everywhere: the same
            try:
                sc = score(plugin, state, pod, table, idx, s)
            except KubeError:
                continue
            total = sc * w if total is None else total + sc * w
        if total is None:
            return np.full(idx.size, float(const))
        if const:
            total += const                        # (a fresh array: vals[idx] or a sum)
        return total

    def _resource_full(self, pod, table) -> np.ndarray:
        """The weighted resource scores on every node, through the kube plugins themselves."""
        idx = np.arange(len(table), dtype=np.intp)
        total = np.zeros(len(table))
        state = CycleState()
        for _, plugin, w in self.resource:
            sc = score(plugin, state, pod, table, idx)
            if sc is not None:
                total += sc * w
        return total

    def reference(self, task, idx: np.ndarray, detail: dict | None = None) -> np.ndarray:
        """Every plugin directly over the candidates (Volcano's loop), with sub-scores in `detail`."""
        table = self.ssn.nodes.table
        pod = task.pod
        state = CycleState()
        total = np.zeros(idx.size)
        for key, plugin, w in self.batch:
            try:
                sc = score(plugin, state, pod, table, idx)
            except KubeError:
                # Volcano drops every batch score of the task then; here only this plugin's
                continue
            if sc is None:
                if plugin.name not in _SKIP_IS_ZERO:
                    continue
                sc = np.zeros(idx.size, dtype=np.int64)
            total += sc * w
            if detail is not None:
                detail[key] = sc
        return total
