"""The HyperNode informer's cache side (live/cache.py on_hypernode) and the batch session's view
of it (live/loop.py BatchLoop.snapshot), without an API server."""
from __future__ import annotations

from caldera.live.cache import ClusterCache
from caldera.live.informer import RESOURCES


def hn(name, tier=1, members=("n0",), kind=None):
    d = {"apiVersion": "topology.volcano.sh/v1alpha1", "metadata": {"name": name},
         "spec": {"tier": tier, "members": [{"type": "Node", "selector": {"exactMatch": {"name": m}}}
                                            for m in members]}}
    if kind:
        d["kind"] = kind
    return d


def test_resource():
    r = RESOURCES["hypernodes"]
    assert (r.path, r.namespaced, r.kind) == ("/apis/topology.volcano.sh/v1alpha1/hypernodes", False, "HyperNode")


def test_cache_keeps_hypernodes_and_drops_bad_ones():
    warnings = []
    c = ClusterCache(["volcano"], on_warning=warnings.append)
    c.on_hypernode(hn("b"))                      # a list item without its kind
    c.on_hypernode(hn("a", kind="HyperNode"))
    assert sorted(c.hypernodes) == ["a", "b"] and c.hypernodes["b"]["kind"] == "HyperNode"
    assert c.changed.is_set()
    bad = hn("a")
    bad["spec"]["members"] = []
    c.on_hypernode(bad)                          # an update that does not parse: left out, warned
    assert sorted(c.hypernodes) == ["b"]
    assert warnings == ["HyperNode a: spec.members: member must have at least one member; ignored"]
    c.on_hypernode(hn("b"), deleted=True)
    assert c.hypernodes == {}


def test_session_sees_the_hypernodes_in_name_order():
    from caldera.batch.cache.snapshot import build_snapshot
    from caldera.live.loop import BatchLoop

    c = ClusterCache(["volcano"])
    c.on_node_add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
                   "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}})
    for name in ("z", "a"):
        c.on_hypernode(hn(name))
    loop = BatchLoop.__new__(BatchLoop)
    loop.cache = c
    for attr in ("_numa",):                      # (numa-aware's kept CPUs, when the loop has them)
        setattr(loop, attr, {})
    cluster = loop.snapshot()
    assert [d["metadata"]["name"] for _, d in cluster.other if d.get("kind") == "HyperNode"] == ["a", "z"]
    snap = build_snapshot(cluster)
    assert snap.hypernodes is not None
    assert sorted(snap.hypernodes.infos) == ["<cluster-top-hypernode>", "a", "z"]
    assert snap.hypernodes["a"].nodes.tolist() == [0]
