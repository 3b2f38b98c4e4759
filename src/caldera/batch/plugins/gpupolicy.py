"""gpupolicy: the GPU placement policies of the FGD experiment as Volcano node scores (Caldera's
own plugin; docs/gpu.md, "From a Volcano tier").

The six kube score plugins of caldera.plugins.gpu (FGD, BestFit, GpuPacking, GpuClustering,
DotProd, Random) and GPUTopology (GPU links) wrapped the way nodeorder wraps kube's score plugins
(kube.score): a BatchNodeOrderFn over the candidate nodes that runs each enabled plugin's
PreScore (Skip: it adds nothing), Score and NormalizeScore (BestFit's min-max over the
candidates) on the session's core NodeTable, multiplied by its weight, summed. A plugin whose
score is invalid adds nothing, as in nodeorder. So each policy's 0-100 score of a node is the
kube profile's for the same nodes and pods; with --explain each is reported under the kube
plugin's name and the weighted sum under "gpupolicy".

Arguments (integers >= 0, nodeorder-style; a policy with weight 0 is not built):
  fgd.weight            FGD
  bestfit.weight        BestFit
  gpupacking.weight     GpuPacking
  gpuclustering.weight  GpuClustering
  dotprod.weight        DotProd
  random.weight         Random
  gputopology.weight    GPUTopology (GPU links: pods asking whole GPUs, by the nodes' islands)
  fgd.workload          FGD's target workload: a YAML/JSON file (path relative to the working
                        directory), the format of FGD's args.workload (plugins/gpu/workload.py);
                        without it, learned from the session's pods (pending tasks and pods on
                        nodes), as the kube plugin learns it from the input's pods
Defaults: every weight 0, except that a gpupolicy entry that sets none of the weights scores
with FGD alone, weight 1 (enabling the plugin means "place by FGD"). Once any weight is set the
others default to 0.

GPU selection (which GPU a share of a GPU takes when the session places the task;
gpupolicy_devices.py): FGD's when fgd.weight > 0, else Random's when random.weight > 0, else
`best`; not when the entry's enableNodeOrder is false (the policies do not score then).

The per-GPU fit (a share needs one GPU with enough free milli; k whole GPUs k fully free ones) is
the predicates plugin's, which wraps kube's GPUDevices filter (predicate.GPUDevicesEnable, default
true). When the conf has no predicates plugin (or its enablePredicate is false), gpupolicy
registers that predicate itself, so a session does not place a task on GPUs it does not fit
unless predicate.GPUDevicesEnable: false says so.

Random draws with a generator seeded from the session's seed (the kube profile uses the
scheduler's RNG, which also breaks ties: Random's draws match kube's only in distribution).
"""
from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING, Any

import numpy as np

from ...api.gpu import pod_gpu_demand
from ...errors import ConfigError
from ...framework.interface import CycleState
from ...plugins.gpu.workload import load_workload
from ..api.info import PENDING, RELEASING
from .base import BatchPlugin, Predicate
from .gpupolicy_devices import GPUPOLICY, attach
from .kube import KubeError, SessionHandle, build, score, volcano_code

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ...api.objects import Pod
    from ...gpu.demand import Distribution
    from ..framework.session import Session

# (argument, kube plugin) in the order the scores are summed and reported
WEIGHTS: tuple[tuple[str, str], ...] = (
    ("fgd.weight", "FGD"),
    ("bestfit.weight", "BestFit"),
    ("gpupacking.weight", "GpuPacking"),
    ("gpuclustering.weight", "GpuClustering"),
    ("dotprod.weight", "DotProd"),
    ("random.weight", "Random"),
    ("gputopology.weight", "GPUTopology"),     # GPU links (docs/gpu.md): whole GPUs from one island
)
FGD_WEIGHT = "fgd.weight"
RANDOM_WEIGHT = "random.weight"
WORKLOAD = "fgd.workload"
DEFAULT_FGD_WEIGHT = 1          # when the entry sets none of the weights

_WORKLOADS: dict[tuple[str, int, int], Distribution] = {}   # (path, mtime_ns, size) -> distribution


def default_weights(arguments: Mapping[str, Any]) -> bool:
    """Does the entry set none of the weights (so FGD scores alone, weight 1)?"""
    return not any(arg in arguments for arg, _ in WEIGHTS)


def _fgd_scores(arguments: Mapping[str, Any]) -> bool:
    """Is fgd.weight non-zero (FGD built, so fgd.workload read)? A value that does not parse
    counts as non-zero here; the plugin rejects it when the session opens."""
    if default_weights(arguments):
        return True
    v = arguments.get(FGD_WEIGHT)
    if v is None:
        return False
    try:
        return int(v) != 0
    except (TypeError, ValueError):
        return True


def workload_distribution(path: str) -> Distribution:
    """load_workload, kept per (path, modification time, size): a simulation opens a session per
    tick, each with its own plugin."""
    try:
        st = os.stat(path)
    except OSError:
        return load_workload(path)        # its one-line error
    key = (path, st.st_mtime_ns, st.st_size)
    dist = _WORKLOADS.get(key)
    if dist is None:
        if len(_WORKLOADS) > 64:
            _WORKLOADS.clear()
        dist = _WORKLOADS[key] = load_workload(path)
    return dist


def session_pods(ssn: Session) -> list[Pod]:
    """The session's pods as FGD learns its workload from them: the pods on nodes (the core
    table: bound pods of every scheduler, and tasks the session placed) and the tasks not on a
    node that are pending or being evicted -- the session's pods as it opened, whenever asked."""
    table = ssn.nodes.table
    pods = [p for on in table.pods for p in on.values()]
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            if t.status & (PENDING | RELEASING) and table.node_of(t.pod.key) is None:
                pods.append(t.pod)
    return pods


class GpuSessionHandle(SessionHandle):
    """SessionHandle plus what the GPU policies ask of it: the pods FGD learns its workload from,
    and a seeded RNG for Random."""

    def __init__(self, ssn: Session):
        super().__init__(ssn)
        self._ssn = ssn
        self.rng = random.Random(ssn._seed)

    def workload_pods(self) -> list[Pod]:
        return session_pods(self._ssn)


class GpuPolicyPlugin(BatchPlugin):
    name = GPUPOLICY
    ARGUMENTS = frozenset([*(arg for arg, _ in WEIGHTS), WORKLOAD])

    @classmethod
    def arguments_read(cls, arguments):
        return cls.ARGUMENTS if _fgd_scores(arguments) else cls.ARGUMENTS - {WORKLOAD}

    @classmethod
    def unread_hint(cls, key, arguments):
        if key == WORKLOAD:
            return f"FGD does not score: {FGD_WEIGHT} is 0; set it to a positive weight to use the workload"
        return None

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        defaults = default_weights(self.args)
        self.weights: dict[str, int] = {}
        for arg, _ in WEIGHTS:
            w = self.arg_int(arg, DEFAULT_FGD_WEIGHT if defaults and arg == FGD_WEIGHT else 0)
            if w < 0:
                raise self._bad(arg, "an integer >= 0 (0: off)", self.args.get(arg))
            self.weights[arg] = w
        self.dist: Distribution | None = None
        path = self.args.get(WORKLOAD)
        if path is not None and self.weights[FGD_WEIGHT]:
            if not isinstance(path, str) or not path:
                raise self._bad(WORKLOAD, "a path to a YAML or JSON workload file (or leave it out to learn "
                                "the workload from the session's pods)", path)
            try:
                self.dist = workload_distribution(path)
            except ConfigError as e:
                msg = str(e).removeprefix("FGDArgs.workload: ")
                raise ConfigError(f"{self.source}: {self.name}.arguments.{WORKLOAD}: {msg}") from None
        self.scorers: list[tuple[str, Any, int]] = []     # (kube plugin name, plugin, weight)
        self.selection: Any = None                          # the plugin whose GPU selection rule applies

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        handle = GpuSessionHandle(ssn)
        self.scorers = []
        for arg, kube in WEIGHTS:
            w = self.weights[arg]
            if not w:
                continue
            plugin = build(kube, None, handle)
            if kube == "FGD" and self.dist is not None:
                plugin.use_workload(self.dist)    # the file's, loaded once (FGD's args.workload)
            self.scorers.append((kube, plugin, w))
        opt = self.option
        scoring = opt is None or opt.enabled("node_order")
        by_name = {name: plugin for name, plugin, _ in self.scorers}
        self.selection = None
        if scoring:
            if self.weights[FGD_WEIGHT] > 0:
                self.selection = by_name["FGD"]
            elif self.weights[RANDOM_WEIGHT] > 0:
                self.selection = by_name["Random"]
        self.gpus = attach(ssn)
        if not _predicates_decide_gpu_fit(ssn):
            self.filter = build("GPUDevices", None, handle)
            ssn.add("predicate", self.name, Predicate(self.mask, self.reason))
        if self.scorers:
            ssn.add("batch_node_order", self.name, self.batch_node_order)

    # ---- BatchNodeOrderFn -------------------------------------------------------------------
    def batch_node_order(self, task, idx: np.ndarray, detail: dict | None = None) -> np.ndarray | None:
        table = self.ssn.nodes.table
        pod = task.pod
        state = CycleState()
        total: np.ndarray | None = None
        for key, plugin, w in self.scorers:
            try:
                sc = score(plugin, state, pod, table, idx)
            except KubeError:
                continue                  # as nodeorder: only this plugin's scores are dropped
            if sc is None:
                continue                  # PreScore Skip
            if detail is not None:
                detail[key] = sc
            part = sc * float(w)
            total = part if total is None else total + part
        return total

    # ---- the per-GPU fit, when predicates does not check it ------------------------------------
    def mask(self, task, idx: np.ndarray) -> np.ndarray | None:
        pod = task.pod
        if not pod_gpu_demand(pod)[0]:
            return None
        return self.filter.filter(CycleState(), pod, self.ssn.nodes.table, idx)

    def reason(self, task, i: int) -> list[tuple[str, str]]:
        s = self.filter.filter_status(CycleState(), task.pod, self.ssn.nodes.table, i)
        return [(volcano_code(s), s.message())]

    # ---- the GPUs a task took (bindings[].devices) ---------------------------------------------
    def devices_of(self, task) -> tuple[int, ...] | None:
        return self.gpus.devices_of(task)


def _predicates_decide_gpu_fit(ssn: Session) -> bool:
    """Does a predicates entry of the conf run its predicates in this session? It then runs the
    GPUDevices filter, unless its predicate.GPUDevicesEnable is false, which is respected."""
    opt = ssn.plugin_option("predicates")
    return opt is not None and opt.enabled("predicate")
