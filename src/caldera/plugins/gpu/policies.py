"""The GPU placement policies of the FGD experiment as score plugins: Random, DotProd,
GpuClustering, GpuPacking, BestFit and FGD (EXPERIMENT.md section 6; caldera.gpu.policies).

Each scores every feasible node for the one pod (U = 1) with caldera.gpu.policies.score over the
NodeTable's GPU columns, as kube's 0..100 integers (values outside [0, 100], possible only on
nodes larger than the experiment's 128 CPUs / 8 GPUs, are clipped). BestFit's raw scores are
min-max normalised over the feasible nodes in NormalizeScore. Random gives 100 to one feasible node
drawn uniformly with the scheduler's seeded RNG and 0 to the others.

GPU selection (which GPU a share of a GPU takes, applied at GPUDevices' Reserve): FGD's own (the
GPU with the best FGD score, lowest index on ties) when FGD scores in the profile, else Random's
(a GPU drawn uniformly from those that fit) when Random does, else `best` (`gpu_selection`:
FGD 2, Random 1, the others 0).

FGD's target workload: args.workload (a file, see workload.py), else learned from the pods the
driver reports (`caldera schedule`: the input's pending and running pods), else from the pods on
nodes when FGD first scores; fixed from then on, as in the paper.
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

from ...api.gpu import pod_gpu_demand
from ...errors import ConfigError
from ...framework.interface import MAX_NODE_SCORE, Plugin
from ...gpu import policies as gp
from ...gpu.demand import Demands, Distribution
from .common import gpu_view, one_row, pod_demands
from .workload import learn_workload, load_workload

if TYPE_CHECKING:
    from ...framework.protocols import NormalizeScorePlugin, ScorePlugin


class GpuPolicy(Plugin):
    """One policy of caldera.gpu.policies as a Score plugin."""
    policy = ""
    gpu_selection = 0          # precedence of this policy's GPU selection rule (0: `best`)

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self._check_args()

    def _check_args(self) -> None:
        if self.args:
            raise ConfigError(f"{self.name}Args: unknown field(s) {sorted(self.args)}; {self.name} takes no args")

    def events_to_register(self):
        return []

    def _scored(self, state, pod, table, idx) -> gp.Scored:
        view = gpu_view(table)
        d = pod_demands(pod, view.model_names)
        return gp.score(self.policy, view, idx, d)

    def score(self, state, pod, table, idx):
        return np.clip(self._scored(state, pod, table, idx).score[:, 0], 0, MAX_NODE_SCORE)


class Random(GpuPolicy):
    name = "Random"
    policy = gp.RANDOM
    gpu_selection = 1

    @property
    def rng(self) -> random.Random:
        """The scheduler's seeded RNG (--seed); a handle without one (Volcano's wrappers) gets a
        generator of this plugin's, seeded 0."""
        r = getattr(self.handle, "rng", None)
        if r is None:
            r = self.__dict__.setdefault("_rng", random.Random(0))
        return r

    def score(self, state, pod, table, idx):
        out = np.zeros(idx.size, dtype=np.int64)
        if idx.size:
            out[self.rng.randrange(idx.size)] = MAX_NODE_SCORE
        return out

    def select_gpu(self, state, pod, i: int) -> int | None:
        """A GPU of node i drawn uniformly from those the pod's share fits."""
        _, milli = pod_gpu_demand(pod)
        dev = self.handle.table.gpu
        fits = np.flatnonzero(dev.free[i, :int(dev.gpus[i])] >= milli)
        return int(fits[self.rng.randrange(fits.size)]) if fits.size else None


class DotProd(GpuPolicy):
    name = "DotProd"
    policy = gp.DOTPROD


class GpuClustering(GpuPolicy):
    name = "GpuClustering"
    policy = gp.CLUSTERING


class GpuPacking(GpuPolicy):
    name = "GpuPacking"
    policy = gp.PACKING


class BestFit(GpuPolicy):
    name = "BestFit"
    policy = gp.BESTFIT

    def score(self, state, pod, table, idx):
        return self._scored(state, pod, table, idx).score[:, 0]

    def normalize_score(self, state, pod, scores):
        return gp.normalize(scores) if scores.size else scores


SCORE_KEY = "ScoreFGD"
RELEARN = 0.10               # caldera run: learn the workload again when the running pods moved by 10 %
RELEARN_MIN = 10             # ... and by at least this many pods


class FGD(GpuPolicy):
    name = "FGD"
    policy = gp.FGD
    gpu_selection = 2

    def _check_args(self) -> None:
        unknown = sorted(set(self.args) - {"workload"})
        if unknown:
            raise ConfigError(f"FGDArgs: unknown field(s) {unknown}; known: workload")
        path = self.args.get("workload")
        self._dist: Distribution | None = None
        self._fixed = False          # the file's, or the driver's whole workload: never learned again
        self._learned_from = 0
        if path is not None:
            if not isinstance(path, str) or not path:
                raise ConfigError(f"FGDArgs.workload: expected a file path, got {path!r}; set args.workload "
                                  "to a YAML or JSON workload file, or leave it out to learn it from the pods")
            self._dist = load_workload(path)
            self._fixed = True
        self._target: tuple[tuple[str, ...], Demands] | None = None

    def use_workload(self, dist: Distribution) -> None:
        """Score against this target workload for good, as a workload file does (gpupolicy's
        fgd.workload, loaded once for many sessions)."""
        self._dist, self._fixed, self._target = dist, True, None

    def distribution(self) -> Distribution:
        """The target workload: the file's; else learned from the pods the driver reports (the
        input of `schedule`, the trace of `simulate`), once; else (`caldera run`) from the pods
        running on the nodes, learned again whenever their number moved by more than RELEARN
        (10 %, at least RELEARN_MIN pods) since it was last learned."""
        if self._dist is not None and (self._fixed or not self._stale()):
            return self._dist
        pods = getattr(self.handle, "workload_pods", None)
        got = pods() if pods is not None else None
        self._fixed = got is not None
        if got is None:
            table = self.handle.table
            got = [p for on in table.pods for p in on.values()]
        self._dist = learn_workload(got)
        self._learned_from = len(got)
        self._target = None
        return self._dist

    def _stale(self) -> bool:
        running = len(self.handle.table.pod_node)
        return abs(running - self._learned_from) > max(RELEARN_MIN, RELEARN * self._learned_from)

    def _m(self, model_names: list[str]) -> tuple[Demands, np.ndarray]:
        dist = self.distribution()
        key = tuple(model_names)
        if self._target is None or self._target[0] != key:
            self._target = (key, dist.demands(model_names))
        return self._target[1], dist.p

    def _scored(self, state, pod, table, idx) -> gp.Scored:
        view = gpu_view(table)
        m, p = self._m(view.model_names)
        sc = gp.score(gp.FGD, view, idx, pod_demands(pod, view.model_names), m, p)
        state.write(SCORE_KEY, (idx, sc.gpu[:, 0]))
        return sc

    def select_gpu(self, state, pod, i: int) -> int | None:
        """The GPU FGD gives the pod's share on node i: the one chosen when it scored (same state),
        else scored now on node i alone (the pod's own CPU, already assumed there, given back)."""
        got = state.get(SCORE_KEY)
        if got is not None:
            idx, gpus = got
            j = np.flatnonzero(idx == i)
            if j.size:
                g = int(gpus[j[0]])
                return g if g != gp.NO_GPU else None
        table = self.handle.table
        cpu = int(pod.requests.get("cpu", 0)) if table.node_of(pod.key) == i else 0
        view = one_row(table, i, cpu)
        m, p = self._m(view.model_names)
        sc = gp.score(gp.FGD, view, np.zeros(1, dtype=np.intp), pod_demands(pod, view.model_names), m, p)
        g = int(sc.gpu[0, 0])
        return g if g != gp.NO_GPU else None


POLICY_PLUGINS = (Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD)

if TYPE_CHECKING:
    _contract: tuple[ScorePlugin, NormalizeScorePlugin, ScorePlugin] = (DotProd(), BestFit(), FGD())
