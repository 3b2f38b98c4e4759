"""PodDisruptionBudgets and ResourceQuotas in `caldera run` without an API server: informed only
for a Volcano conf whose plugins read them, kept in the cache, handed to the session."""
from __future__ import annotations

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.batch.runner import run_session
from caldera.live.app import LiveScheduler, RunOptions
from caldera.live.cache import ClusterCache
from caldera.live.informer import RESOURCES
from caldera.live.loop import BatchLoop


def conf(*extra: str):
    plugins = "".join(f"  - name: {p}\n" for p in ("priority", "gang", *extra))
    text = f'actions: "enqueue, allocate"\ntiers:\n- plugins:\n{plugins}- plugins:\n  - name: predicates\n'
    return parse_volcano_conf(yaml.safe_load(text), "t.conf", ACTIONS, PLUGINS)


@pytest.mark.parametrize("extra,informed", [
    ((), []),
    (("pdb",), ["poddisruptionbudgets"]),
    (("resourcequota",), ["resourcequotas"]),
    (("pdb", "resourcequota"), ["poddisruptionbudgets", "resourcequotas"]),
])
def test_informed_only_when_the_conf_has_the_plugin(extra, informed):
    app = LiveScheduler(object(), conf(*extra), RunOptions(metrics_addr="127.0.0.1:0", leader_elect=False))
    names = [i.name for i in app.informers]
    assert names == ["nodes", "priorityclasses", "pods", "podgroups", "queues", "hypernodes", *informed]


def test_resources():
    assert RESOURCES["poddisruptionbudgets"].path == "/apis/policy/v1/poddisruptionbudgets"
    assert RESOURCES["resourcequotas"].path == "/api/v1/resourcequotas"


def quota(name, ns="team", hard="3", used="0"):
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns},
            "spec": {"hard": {"cpu": hard}}, "status": {"hard": {"cpu": hard}, "used": {"cpu": used}}}


def pdb(name, allowed=0, ns="team"):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}},
            "status": {"disruptionsAllowed": allowed}}


def test_cache_keeps_them_and_the_snapshot_lists_them_by_name():
    warned: list[str] = []
    cache = ClusterCache(["volcano"], on_warning=warned.append)
    loop = BatchLoop(conf("pdb", "resourcequota"), cache, binder_factory=lambda **kw: None, status=None)
    cache.changed.clear()
    cache.on_resource_quota(quota("b"))
    cache.on_resource_quota(quota("a"))
    cache.on_pdb(pdb("web"))
    assert cache.changed.is_set()
    c = loop.snapshot()
    assert [q.key for q in c.resource_quotas] == ["team/a", "team/b"] and [p.key for p in c.pdbs] == ["team/web"]
    cache.on_pdb({**pdb("web", allowed=2)})                       # an update replaces it
    assert loop.snapshot().pdbs[0].disruptions_allowed == 2
    cache.on_resource_quota(quota("a"), deleted=True)
    cache.on_pdb(pdb("web"), deleted=True)
    c = loop.snapshot()
    assert [q.key for q in c.resource_quotas] == ["team/b"] and c.pdbs == []
    bad = quota("b")
    bad["status"]["hard"] = {"cpu": "lots"}
    cache.on_resource_quota(bad)                                  # an invalid update drops the old object
    assert cache.resource_quotas == {} and warned and "ResourceQuota team/b" in warned[0]


def test_the_session_reads_the_cache_quota():
    """A PodGroup whose minResources exceed the namespace's quota stays Pending, with Volcano's
    event; a smaller one is bound."""
    cache = ClusterCache(["volcano"])
    loop = BatchLoop(conf("resourcequota"), cache, binder_factory=lambda **kw: None, status=None)
    cache.on_node_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi",
                                                                            "pods": "110"}}})
    cache.on_resource_quota(quota("compute"))
    for name, cpu in (("small", 1), ("big", 4)):
        cache.on_podgroup({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                           "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
                           "spec": {"minMember": 1, "minResources": {"cpu": str(cpu)}},
                           "status": {"phase": "Pending"}})
        cache.on_pod_add({"metadata": {"name": f"{name}-0", "namespace": "team", "uid": f"uid-{name}-0",
                                       "annotations": {"scheduling.k8s.io/group-name": name}},
                          "spec": {"schedulerName": "volcano", "containers": [
                              {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(cpu)}}}]},
                          "status": {"phase": "Pending"}})
    res = run_session(loop.snapshot(), loop.conf, scheduler_name="volcano")
    assert res.bindings == [{"pod": "team/small-0", "node": "n1"}]
    big = next(g for g in res.pod_groups if g["name"] == "team/big")
    assert big["phase"] == "Pending"
    assert big["events"][0]["message"] == ("resource quota insufficient, requested: map[cpu:4], used: map[cpu:0], "
                                           "limited: map[cpu:3]")
