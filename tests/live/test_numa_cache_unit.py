"""Numatopologies in `caldera run` without an API server: informed only for a conf with
numa-aware, kept in the cache with Volcano's change flags (addNumaInfo), merged into the CPUs the
batch loop keeps per node (RefreshNumaSchedulerInfoByCrd) and taken from them at session close
(UpdateSchedulerNumaInfo), so a second session does not give the same CPUs again."""
from __future__ import annotations

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.batch.runner import run_session
from caldera.live.app import LiveScheduler, RunOptions
from caldera.live.cache import NUMA_LESS, NUMA_MORE, ClusterCache
from caldera.live.informer import RESOURCES
from caldera.live.loop import BatchLoop


def conf(*extra: str):
    plugins = "".join(f"  - name: {p}\n" for p in ("priority", "gang", *extra))
    text = f'actions: "enqueue, allocate"\ntiers:\n- plugins:\n{plugins}- plugins:\n  - name: predicates\n'
    return parse_volcano_conf(yaml.safe_load(text), "t.conf", ACTIONS, PLUGINS)


def numatopology(name: str, allocatable: str = "0-7") -> dict:
    """8 CPUs, NUMA 0: 0-3, NUMA 1: 4-7 (two per core), static / single-numa-node."""
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": name},
            "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                     "numares": {"cpu": {"allocatable": allocatable, "capacity": 8}},
                     "cpuDetail": {str(c): {"numa": c // 4, "socket": c // 4, "core": c // 2} for c in range(8)}}}


def node(name: str) -> dict:
    return {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": "16", "memory": "16Gi", "pods": "110"}}}


def pod(name: str, cpu: int = 4) -> dict:
    return {"metadata": {"name": name, "namespace": "t", "uid": f"uid-{name}",
                         "annotations": {"volcano.sh/numa-topology-policy": "single-numa-node"}},
            "spec": {"schedulerName": "volcano",
                     "containers": [{"name": "c", "resources": {"limits": {"cpu": str(cpu), "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


@pytest.mark.parametrize("extra,informed", [((), []), (("numa-aware",), ["numatopologies"])])
def test_informed_only_when_the_conf_has_the_plugin(extra, informed):
    app = LiveScheduler(object(), conf(*extra), RunOptions(metrics_addr="127.0.0.1:0", leader_elect=False))
    assert [i.name for i in app.informers][6:] == informed


def test_resource():
    r = RESOURCES["numatopologies"]
    assert r.path == "/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies" and not r.namespaced


def test_cache_flags_as_volcano_add_numa_info():
    warned: list[str] = []
    cache = ClusterCache(["volcano"], on_warning=warned.append)
    cache.changed.clear()
    cache.on_numatopology(numatopology("a", "0-7"))
    assert cache.changed.is_set() and cache.numa_changes == {"a": NUMA_MORE}
    assert cache.numatopologies["a"].numa_res["cpu"].allocatable == frozenset(range(8))
    cache.on_numatopology(numatopology("a", "0-3"))               # fewer free CPUs than before
    assert cache.numa_changes == {"a": NUMA_LESS}
    cache.on_numatopology(numatopology("a", "0-3"))               # as many: "more or no change"
    assert cache.numa_changes == {"a": NUMA_MORE}
    cache.on_numatopology(numatopology("a"), deleted=True)
    assert cache.numatopologies == {} and cache.numa_changes == {}
    cache.on_numatopology(numatopology("b", "3-1"))               # a bad one is dropped with a warning
    assert cache.numatopologies == {} and warned and "Numatopology b" in warned[0] and "reversed" in warned[0]


def _loop():
    cache = ClusterCache(["volcano"])
    loop = BatchLoop(conf("numa-aware"), cache, binder_factory=lambda **kw: None, status=None)
    return cache, loop


def _session(loop, cache):
    res = run_session(loop.snapshot(), loop.conf, scheduler_name="volcano")
    loop.numa_closed(res.session)
    return {b["pod"]: (b["node"], b.get("cpuset")) for b in res.bindings}


def test_a_second_session_does_not_reuse_the_cpus_of_the_first():
    """db takes NUMA 0 of n1 (0-3); before the exporter rewrites the Numatopology the next session
    knows those CPUs are taken: db2 gets NUMA 1. The exporter then writes 4-7 and "" (fewer: flag
    less, taken as they are no more than the kept ones), db3 fits nowhere; when db is gone it
    writes 0-3 (more than before: replaces the kept ones) and db3 gets 0-3."""
    cache, loop = _loop()
    cache.on_node_add(node("n1"))
    cache.on_numatopology(numatopology("n1"))
    cache.on_pod_add(pod("db"))
    assert _session(loop, cache) == {"t/db": ("n1", "0-3")}
    assert loop._numa["n1"].numa_res["cpu"].allocatable == frozenset(range(4, 8))
    cache.on_pod_update(pod("db"), {**pod("db"), "spec": {**pod("db")["spec"], "nodeName": "n1"},
                                    "status": {"phase": "Running"}})
    cache.on_pod_add(pod("db2"))
    assert _session(loop, cache) == {"t/db2": ("n1", "4-7")}
    cache.on_numatopology(numatopology("n1", "4-7"))              # (the exporter, late: db only)
    assert cache.numa_changes == {"n1": NUMA_LESS}
    loop.snapshot()
    assert loop._numa["n1"].numa_res["cpu"].allocatable == frozenset()  # kept 0 < 4: the kept stay
    cache.on_numatopology(numatopology("n1", ""))
    cache.on_pod_update(pod("db2"), {**pod("db2"), "spec": {**pod("db2")["spec"], "nodeName": "n1"},
                                     "status": {"phase": "Running"}})
    cache.on_pod_add(pod("db3"))
    assert _session(loop, cache) == {}
    # the exporter reports db gone: 0-3 free again (more than its last, "") -> replaces
    cache.on_numatopology(numatopology("n1", "0-3"))
    assert _session(loop, cache) == {"t/db3": ("n1", "0-3")}


def test_a_numatopology_with_fewer_cpus_merges_per_resource():
    """Flag less: a resource takes the Numatopology's free ids only when they are no more than the
    kept ones (RefreshNumaSchedulerInfoByCrd); otherwise the kept ones stay."""
    cache, loop = _loop()
    cache.on_node_add(node("n1"))
    cache.on_numatopology(numatopology("n1", "0-7"))
    loop.snapshot()
    loop._numa["n1"].numa_res["cpu"].allocatable = frozenset({0, 1})     # as if a session took 2-7
    cache.on_numatopology(numatopology("n1", "0-5"))                     # less than 0-7: flag less
    loop.snapshot()
    assert loop._numa["n1"].numa_res["cpu"].allocatable == frozenset({0, 1})   # 6 > 2 kept: kept
    cache.on_numatopology(numatopology("n1", "4"))                       # less again, 1 <= 2: taken
    loop.snapshot()
    assert loop._numa["n1"].numa_res["cpu"].allocatable == frozenset({4})


def test_only_nodes_there_are_and_deleted_ones_go():
    cache, loop = _loop()
    cache.on_node_add(node("n1"))
    cache.on_numatopology(numatopology("n1"))
    cache.on_numatopology(numatopology("ghost"))
    c = loop.snapshot()
    assert [d["metadata"]["name"] for _, d in c.other if d["kind"] == "Numatopology"] == ["n1"]
    cache.on_numatopology(numatopology("n1"), deleted=True)
    c = loop.snapshot()
    assert [d for _, d in c.other if d["kind"] == "Numatopology"] == [] and loop._numa == {}
