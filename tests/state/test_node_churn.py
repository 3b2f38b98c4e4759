"""Node churn costs what it changes, and changes nothing it should not: random sequences of node
adds (one by one and in bulk), updates (labels, taints, allocatable, unschedulable, images, or
heartbeat only) and deletes, and running pods added and removed, go through the live
ClusterCache; after every step the filter verdicts and scores of a set of probe pods (kube's
default profile, every node) on the incrementally kept table equal those on a NodeTable built
from scratch from the same nodes and pods."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api.objects import Node
from caldera.live.cache import ClusterCache
from caldera.state import nodetable as nt
from caldera.state.nodetable import LABELS, NodeTable

from ..builders import make_node, make_pod, make_scheduler, node_dict, pod_dict, run_filter, run_score

NAMES = [f"n{i}" for i in range(6)]
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
IMAGES = [(["img1:1"], 300 * 2**20), (["img1:1"], 500 * 2**20), (["img2:1", "img2:latest"], 200 * 2**20),
          (["img3:1"], 900 * 2**20)]
TAINTS = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
          {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
          {"key": "gone", "value": "", "effect": "NoExecute"}]
ARGS = {"NodeAffinity": {"addedAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["blocked"]}]}]},
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}}


@st.composite
def node_spec(draw):
    labels = {}
    if draw(st.integers(0, 3)):
        labels[ZONE] = draw(st.sampled_from(["z1", "z2", "z3"]))
    for k, vals in (("disk", ["ssd", "hdd"]), ("num", ["1", "5", "10", "x"]), ("pool", ["blocked", "main"])):
        if draw(st.booleans()):
            labels[k] = draw(st.sampled_from(vals))
    return {"labels": labels,
            "taints": draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"])),
            "cpu": draw(st.sampled_from(["2", "4", "8"])),
            "gpu": draw(st.sampled_from([None, "1", "2"])),
            "unschedulable": draw(st.integers(0, 5)) == 0,
            "images": draw(st.lists(st.sampled_from(range(len(IMAGES))), max_size=3, unique=True))}


ASPECT_FIELDS = ("labels", "taints", "cpu", "gpu", "unschedulable", "images")

op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES), node_spec()),
    st.tuples(st.just("addmany"), st.lists(st.tuples(st.sampled_from(NAMES), node_spec()), min_size=1, max_size=3)),
    st.tuples(st.just("update"), st.sampled_from(NAMES), node_spec(),
              st.lists(st.sampled_from(ASPECT_FIELDS), max_size=2, unique=True)),   # [] = heartbeat
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
    st.tuples(st.just("pod"), st.integers(0, 11), st.sampled_from(NAMES),
              st.sampled_from(["plain", "anti", "port", "image"]), st.sampled_from(["a", "b"])),
    st.tuples(st.just("unpod"), st.integers(0, 11)),
)


def raw_node(name: str, spec: dict, beat: int) -> dict:
    d = node_dict(name, cpu=spec["cpu"], labels={HOST: name, **spec["labels"]}, taints=spec["taints"] or None,
                  unschedulable=spec["unschedulable"], extra={"example.com/gpu": spec["gpu"]},
                  images=[{"names": list(IMAGES[k][0]), "sizeBytes": IMAGES[k][1]} for k in spec["images"]] or None)
    d["metadata"]["resourceVersion"] = str(beat)
    d["status"]["conditions"] = [{"type": "Ready", "status": "True",
                                  "lastHeartbeatTime": f"2025-01-01T00:00:{beat % 60:02d}Z"}]
    return d


def raw_pod(k: int, node: str, kind: str, app: str) -> dict:
    kw: dict = {"labels": {"app": app}, "cpu": "100m", "node": node}
    if kind == "anti":
        kw["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": ZONE if k % 2 else HOST, "labelSelector": {"matchLabels": {"app": "a"}}}]}}
    elif kind == "port":
        kw["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    elif kind == "image":
        kw["image"] = "img2:1"
    return pod_dict(f"r{k}", **kw)


def probes():
    sel = {"matchLabels": {"app": "a"}}
    return [
        make_pod("spread", labels={"app": "a"}, cpu="500m", topology_spread=[
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel,
             "nodeTaintsPolicy": "Honor"},
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel},
            {"maxSkew": 2, "topologyKey": "disk", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}]),
        make_pod("affinity", labels={"app": "a"}, affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": ZONE, "labelSelector": sel}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "podAffinityTerm": {"topologyKey": "disk",
                                                  "labelSelector": {"matchLabels": {"app": "b"}}}}]}}),
        make_pod("anti", labels={"app": "a"}, affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOST, "labelSelector": sel}]}}),
        make_pod("nodeaff", cpu="3", affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                {"matchExpressions": [{"key": "num", "operator": "Gt", "values": ["3"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}},
                {"weight": 2, "preference": {"matchExpressions": [{"key": "num", "operator": "Exists"}]}}]}}),
        make_pod("tolerant", tolerations=[{"key": "dedicated", "operator": "Exists"},
                                          {"key": "spot", "operator": "Equal", "value": "true"}],
                 node_selector={"disk": "ssd"}),
        make_pod("images", containers=[{"name": "a", "image": "img1:1"}, {"name": "b", "image": "img2"},
                                       {"name": "c", "image": "img3:1"}]),
        make_pod("port", ports=[{"containerPort": 80, "hostPort": 8080}], requests={"example.com/gpu": "1"},
                 limits={"example.com/gpu": "1"}),
    ]


def fresh_copy(t: NodeTable) -> NodeTable:
    f = NodeTable(list(t.nodes))
    for i, ps in enumerate(t.pods):
        for p in ps.values():
            f.add_pod(p, i)
    return f


def decisions(table: NodeTable, sched, pods) -> list:
    out = []
    for p in pods:
        filt = run_filter(sched, p)
        out.append({n: None if s is None or isinstance(s, str) else (s.code, s.message()) for n, s in filt.items()})
        out.append(run_score(sched, p))
    return out


def columns(t: NodeTable) -> dict:
    """The table's columns by resource name (a column of zeros counts as absent: pods' requests
    add columns to the table they are evaluated against)."""
    out: dict = {"names": [n.name for n in t.nodes], "nonzero": t.nonzero.tolist(),
                 "unsched": t.unschedulable.tolist(), "any": t.any_unschedulable}
    for r, c in t.res_index.items():
        got = (t.alloc[:, c].tolist(), t.req[:, c].tolist(), t.free[c].tolist(), t.alloc_t[c].tolist())
        if any(any(x) for x in got):
            out[r] = got
    return out


def apply(cache: ClusterCache, specs: dict, o, beat: int) -> None:
    kind = o[0]
    if kind == "add":
        specs[o[1]] = o[2]
        cache.on_node_add(raw_node(o[1], o[2], beat))
    elif kind == "addmany":
        raws = []
        for name, spec in o[1]:
            specs[name] = spec
            raws.append(raw_node(name, spec, beat))
        cache.on_node_add_many(raws)
    elif kind == "update":
        name = o[1]
        if name not in specs:
            return
        spec = dict(specs[name])
        for f in o[3]:
            spec[f] = o[2][f]
        specs[name] = spec
        cache.on_node_update(None, raw_node(name, spec, beat))
    elif kind == "delete":
        specs.pop(o[1], None)
        cache.on_node_delete({"metadata": {"name": o[1]}})
    elif kind == "pod":
        key = f"default/r{o[1]}"
        if key in cache.pods:
            return
        cache.on_pod_add(raw_pod(o[1], o[2], o[3], o[4]))
    elif kind == "unpod":
        cache.on_pod_delete({"metadata": {"name": f"r{o[1]}", "namespace": "default"}})


@pytest.mark.parametrize("small", [False, True], ids=["row-updates", "rebuilds"])
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=1, max_size=14))
def test_incremental_table_decides_as_a_fresh_one(ops, small, monkeypatch):
    if small:       # a tiny journal and row budget: derived data is rebuilt rather than updated
        monkeypatch.setattr(nt, "NODE_LOG_MAX", 2)
        monkeypatch.setattr(nt, "REBUILD_ROWS", 1)
    cache = ClusterCache(["default-scheduler"])
    sched = make_scheduler(cache.table, default=True, args=ARGS)
    pods = probes()
    specs: dict = {}
    for beat, o in enumerate(ops, 1):
        apply(cache, specs, o, beat)
        t = cache.table
        f = fresh_copy(t)
        assert columns(t) == columns(f)
        assert decisions(t, sched, pods) == decisions(f, make_scheduler(f, default=True, args=ARGS), pods), o


def test_heartbeat_costs_nothing():
    """A Node update that changes nothing the scheduler reads replaces the stored object only:
    no journal entry, no generation, every derived value kept (the very same objects)."""
    cache = ClusterCache(["default-scheduler"])
    spec = {"labels": {ZONE: "z1"}, "taints": [TAINTS[0]], "cpu": "4", "gpu": None, "unschedulable": False,
            "images": [0]}
    cache.on_node_add_many([raw_node(n, spec, 1) for n in NAMES])
    sched = make_scheduler(cache.table, default=True, args=ARGS)
    pods = probes()
    t = cache.table
    want = decisions(t, sched, pods)
    before = {k: v[3] for k, v in t._cache.items()}
    gens = (t.node_generation, t.layout_generation, t.node_log_end)
    assert before
    for beat in range(2, 20):
        cache.on_node_update(None, raw_node(NAMES[beat % len(NAMES)], spec, beat))
    assert (t.node_generation, t.layout_generation, t.node_log_end) == gens
    assert all(t._cache[k][3] is v for k, v in before.items())
    assert t.nodes[2].raw["metadata"]["resourceVersion"] == "14"        # the new object is stored
    assert decisions(t, sched, pods) == want


class NoScan(list):
    def __iter__(self):
        raise AssertionError("a pass over every node")


def test_label_change_updates_one_row():
    """A label change journals (row, LABELS); label-derived values are updated for that row,
    values that do not depend on labels are kept as they are."""
    nodes = [make_node(f"n{i}", labels={HOST: f"n{i}", ZONE: f"z{i % 3}"}) for i in range(300)]
    t = NodeTable(nodes)
    zones = t.label_values(ZONE)
    taints = t.cached("t", lambda: object(), on=nt.TAINTS)
    n = copy.copy(nodes[7])
    n.labels = {**n.labels, ZONE: "z9"}
    assert t.update_node(n) == LABELS
    assert t.node_log[-1] == (7, LABELS)
    t.nodes = NoScan(t.nodes)
    again = t.label_values(ZONE)                                    # the updater runs, not a rebuild
    assert again[7] == "z9" and zones[7] == "z1"                    # a new array; the old one untouched
    assert (again[:7] == zones[:7]).all() and (again[8:] == zones[8:]).all()
    assert t.cached("t", lambda: object(), on=nt.TAINTS) is taints


def test_bulk_add_is_one_layout_change_and_rejects_duplicates():
    t = NodeTable()
    rows = t.add_nodes([make_node("a"), make_node("b", unschedulable=True)])
    assert rows == [0, 1] and t.layout_generation == 1 and t.unschedulable.tolist() == [False, True]
    with pytest.raises(ValueError, match="duplicate node a"):
        t.add_nodes([make_node("c"), make_node("a")])
    assert t.names == ["a", "b"] and len(t.alloc) == 2
    assert t.add_node(make_node("c")) == 2 and t.any_unschedulable
    assert np.array_equal(t.free, t.alloc_t)


# ---- the derived values themselves, against a fresh build --------------------------------------
def derived(t: NodeTable) -> dict:
    """Every per-table derived value the default plugins keep, in a form independent of how it
    was reached (ids and codes resolved to the values they stand for)."""
    from caldera.plugins.imagelocality import image_mask, image_states
    from caldera.plugins.interpodaffinity.index import domains
    from caldera.plugins.nodeaffinity.masks import _ints, _inverted
    from caldera.plugins.podtopologyspread.common import key_index
    from caldera.plugins.tainttoleration import _interned, hard_taints
    out: dict = {}
    for key in (ZONE, "disk", "num"):
        vals = t.label_values(key).tolist()
        out[("vals", key)] = vals
        out[("has", key)] = t.has_label(key).tolist()
        out[("inv", key)] = {v: ix.tolist() for v, ix in _inverted(t, key).items()}
        ok, ints = _ints(t, key)
        out[("ints", key)] = [int(x) if o else None for o, x in zip(ok, ints, strict=True)]
        codes, nd = domains(t, key)
        assert codes.max(initial=-1) < nd
        first: dict[int, str] = {}
        for c, v in zip(codes.tolist(), vals, strict=True):
            assert (c == -1) == (v is None) and first.setdefault(c, v) == v
        ids, uniques = key_index(t, key)
        out[("keyidx", key)] = [uniques[j] if j < len(uniques) else None for j in ids.tolist()]
        assert all(j == len(uniques) for j, v in zip(ids.tolist(), vals, strict=True) if v is None)
    ids, sets = hard_taints(t)
    out["hard"] = [sets[j] for j in ids.tolist()]
    ids, sets = _interned(t, ("PreferNoSchedule",), "taints.prefer")
    out["prefer"] = [sets[j] for j in ids.tolist()]
    out["images"] = image_states(t)
    for name in ("img1:1", "img2:latest", "img3:1"):
        out[("mask", name)] = image_mask(t, name).tolist()
    return out


row_op = st.one_of(
    st.tuples(st.just("update"), st.integers(0, 40), node_spec(),
              st.lists(st.sampled_from(("labels", "taints", "images")), min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("add"), st.integers(0, 40), node_spec()),
    st.tuples(st.just("delete"), st.integers(0, 40)),
)


@pytest.mark.parametrize("small", [False, True], ids=["row-updates", "rebuilds"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.lists(node_spec(), min_size=1, max_size=8), ops=st.lists(row_op, min_size=1, max_size=20))
def test_derived_values_equal_a_fresh_build(start, ops, small, monkeypatch):
    if small:
        monkeypatch.setattr(nt, "NODE_LOG_MAX", 2)
        monkeypatch.setattr(nt, "REBUILD_ROWS", 1)
    specs = {f"n{i}": s for i, s in enumerate(start)}
    t = NodeTable(Node(raw_node(n, s, 1)) for n, s in specs.items())
    derived(t)
    for beat, o in enumerate(ops, 2):
        names = [n.name for n in t.nodes]
        if o[0] == "update" and names:
            name = names[o[1] % len(names)]
            spec = dict(specs[name])
            for f in o[3]:
                spec[f] = o[2][f]
            specs[name] = spec
            t.update_node(Node(raw_node(name, spec, beat)))
        elif o[0] == "add" and f"n{o[1]}" not in specs:
            specs[f"n{o[1]}"] = o[2]
            t.add_node(Node(raw_node(f"n{o[1]}", o[2], beat)))
        elif o[0] == "delete" and names:
            name = names[o[1] % len(names)]
            del specs[name]
            t.remove_node(name)
        assert derived(t) == derived(NodeTable(t.nodes)), o
