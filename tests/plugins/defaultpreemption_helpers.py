"""Fixtures for the DefaultPreemption tests: kube's test resources, fake filter plugins, and a
scheduler whose profile holds exactly the plugins a Go test case registers."""
from __future__ import annotations

from caldera.api.objects import Pod
from caldera.api.pdb import PodDisruptionBudget
from caldera.config.types import PluginRef, Profile, SchedulerConfig
from caldera.engine.scheduler import Scheduler
from caldera.framework.interface import Plugin
from caldera.framework.runtime import Diagnosis
from caldera.framework.status import Code, Status
from caldera.plugins.registry import build_registry

from ..builders import make_node, make_table, pod_dict

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"cpu": None, "memory": None, "pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}
ERR_REASON_FAKE = "Nodes failed the fake plugin"


def epoch(n: int) -> str:
    """epochTimeN of the Go tests (Unix(0, n)); seconds instead of nanoseconds keeps the order."""
    return f"1970-01-01T00:00:{n:02d}Z"


def pod(name, *, prio=None, req=None, node=None, labels=None, start=None, ns="default", policy=None,
        nominated=None, terminating=False, conditions=None, **kw) -> Pod:
    d = pod_dict(name, ns, requests=dict(req) if req else None, node=node, priority=prio, labels=labels,
                 start_time=start, nominated=nominated, **kw)
    if terminating:
        d["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if conditions:
        d["status"]["conditions"] = conditions
    p = Pod(d)
    p.preemption_policy = policy or "PreemptLowerPriority"
    return p


def node(name, res=VERY_LARGE, labels=None):
    """st.MakeNode().Capacity(res): pods defaults to 32."""
    kw = {"cpu": None, "memory": None, "pods": "32"}
    kw.update(res)
    return make_node(name, labels=labels, **kw)


def topo_node(spec: str, res=VERY_LARGE):
    """'node-a/zone1' -> node named node-a with labels hostname=node-a, zone=zone1."""
    parts = spec.split("/")
    labels = dict(zip(("hostname", "zone", "region"), parts))
    return node(parts[0], res, labels)


def pdb(selector=None, allowed=None, disrupted=(), ns="default", name="pdb"):
    raw = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": name, "namespace": ns}, "spec": {}}
    if selector is not None:
        raw["spec"]["selector"] = {"matchLabels": dict(selector)}
    status = {}
    if allowed is not None:
        status["disruptionsAllowed"] = allowed
    if disrupted:
        status["disruptedPods"] = dict.fromkeys(disrupted, "2024-01-01T00:00:00Z")
    if status:
        raw["status"] = status
    return PodDisruptionBudget(raw)


# ---- fake plugins (kube's testing/framework fake_plugins.go) ----------------------------
class FakeFilter(Plugin):
    """Counts Filter calls; fails nodes listed in `codes` with that code."""
    name = "FakeFilter"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self.calls = 0
        self.codes: dict[str, Code] = {}

    def filter_node(self, state, pod, table, i):
        self.calls += 1
        code = self.codes.get(table.nodes[i].name, Code.SUCCESS)
        if code == Code.SUCCESS:
            return None
        return Status(code, f"injecting failure for pod {pod.name}")


class TrueFilter(Plugin):
    name = "TrueFilter"

    def filter_node(self, state, pod, table, i):
        return None


class FalseFilter(Plugin):
    name = "FalseFilter"

    def filter_node(self, state, pod, table, i):
        return Status.unschedulable(ERR_REASON_FAKE)


class MatchFilter(Plugin):
    """Passes only the node named like the pod."""
    name = "MatchFilter"

    def filter_node(self, state, pod, table, i):
        return None if table.nodes[i].name == pod.name else Status.unschedulable(ERR_REASON_FAKE)


FAKES = {"FakeFilter": FakeFilter, "TrueFilter": TrueFilter, "FalseFilter": FalseFilter, "MatchFilter": MatchFilter}
FIT = "NodeResourcesFit"


def build(nodes, pods=(), *, filters=(FIT,), pre_filters=None, args=None, pdbs=(), seed=0):
    """Scheduler + DefaultPreemption plugin over `nodes` with `pods` running on them."""
    reg = build_registry(extra=FAKES, third_party=False)
    if pre_filters is None:
        pre_filters = [f for f in filters if getattr(reg[f], "pre_filter", None) is not None]
    pl = {"queueSort": [PluginRef("PrioritySort")], "bind": [PluginRef("DefaultBinder")],
          "preFilter": [PluginRef(n) for n in pre_filters], "filter": [PluginRef(n) for n in filters],
          "postFilter": [PluginRef("DefaultPreemption")]}
    plugin_args = {"DefaultPreemption": dict(args)} if args else {}
    cfg = SchedulerConfig(profiles=[Profile(plugins=pl, plugin_args=plugin_args)])
    table = make_table(nodes, list(pods))
    sched = Scheduler(cfg, table, reg, seed=seed)
    sched.pdbs = list(pdbs)
    fw = sched.default_framework
    return sched, fw.plugin("DefaultPreemption")


def diagnosis(sched, statuses: dict[str, Status] | None, absent: Status | None = None) -> Diagnosis:
    t = sched.table
    return Diagnosis(num_all_nodes=len(t), node_status={t.index[k]: v for k, v in (statuses or {}).items()},
                     absent_status=absent if absent is not None else Status.unresolvable())


def all_unschedulable(sched) -> Diagnosis:
    return diagnosis(sched, {n.name: Status.unschedulable() for n in sched.table.nodes})


def by_name(sched, names):
    return [sched.table.index[n] for n in sorted(names)]


def summary(candidates):
    """[(node, sorted victim names, PDB violations)] sorted by node, as the Go tests compare."""
    return sorted((c.name, sorted(p.name for p in c.victims), c.num_pdb_violations) for c in candidates)


def table_snapshot(table):
    return ([list(d) for d in table.pods], table.req.copy(), dict(table.pod_node))
