"""drf plugin: port of volcano pkg/scheduler/plugins/drf/hdrf_test.go (TestHDRF, both cases), plus
table tests of each registered function read off drf.go (dominant share, JobOrder, Preemptable
with shareDelta, the event handlers, hdrf's tree, QueueOrder and Reclaimable) and end-to-end
sessions.

Volcano's TestHDRF never fails (it compares the expected map with a *Resource through
DeepEqual and fails only when they are equal); its expected allocations are asserted here for
real. Its `"pods": 5` entries are dropped: Volcano's task Resreq carries no `pods` scalar, so
job.Allocated never holds one.
"""
from __future__ import annotations

import pytest

from caldera.batch.conf import PluginOption, Tier, VolcanoConf
from caldera.batch.plugins.drf import SHARE_DELTA, DRFPlugin
from caldera.batch.plugins.hdrf import _parse_weight
from caldera.batch.runner import run_session
from caldera.errors import InputError

from .helpers import cluster, node, open_session, outcome, pod, podgroup, queue, rl, run

HIER = "volcano.sh/hierarchy"
HIER_W = "volcano.sh/hierarchy-weights"
G = 1_000_000_000

DRF_FLAGS = """
    enableJobOrder: true
    enablePreemptable: true
    enableReclaimable: true
    enableQueueOrder: true
    enableJobReady: false
    enableJobPipelined: false
    enableTaskOrder: false
    enablePreemptive: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enableJobEnqueued: false
    enableJobStarving: false
    enabledOverused: false
    enabledAllocatable: false
"""


def drf_conf(hierarchy: bool, actions: str = "allocate") -> str:
    return (f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: {str(hierarchy).lower()}'
            + DRF_FLAGS)


def hqueue(name, path, weights):
    return queue(name, 1, annotations={HIER: path, HIER_W: weights})


def make_pods(n, cpu, mem, group, ns="default"):
    """hdrf_test.go's makePods: n pending pods <group>-p<i>."""
    return [pod(ns, f"{group}-p{i}", req=rl(cpu, mem), group=group) for i in range(n)]


def running(ns, name, node_name, req, group):
    return pod(ns, name, node=node_name, phase="Running", req=req, group=group)


# --- TestHDRF ------------------------------------------------------------------------------

def rescaling_case():
    docs = [podgroup("default", "pg1", 0, "root-sci"),
            podgroup("default", "pg21", 0, "root-eng-dev"),
            podgroup("default", "pg22", 0, "root-eng-prod")]
    docs += make_pods(10, "1", "1G", "pg1") + make_pods(10, "1", "0G", "pg21") + make_pods(10, "0", "1G", "pg22")
    docs += [hqueue("root-sci", "root/sci", "100/50"),
             hqueue("root-eng-dev", "root/eng/dev", "100/50/50"),
             hqueue("root-eng-prod", "root/eng/prod", "100/50/50"),
             node("n", rl("10", "10G", {"pods": "50"}))]
    return docs


def blocking_case():
    docs = [podgroup("default", "pg1", 0, "root-pg1"),
            podgroup("default", "pg2", 0, "root-pg2"),
            podgroup("default", "pg31", 0, "root-pg3-pg31"),
            podgroup("default", "pg32", 0, "root-pg3-pg31"),   # sic: the Go test puts pg32 in pg31's queue
            podgroup("default", "pg4", 0, "root-pg4")]
    docs += (make_pods(30, "1", "0G", "pg1") + make_pods(30, "1", "0G", "pg2") + make_pods(30, "1", "0G", "pg31")
             + make_pods(30, "0", "1G", "pg32") + make_pods(30, "0", "1G", "pg4"))
    docs += [hqueue("root-pg1", "root/pg1", "100/25"),
             hqueue("root-pg2", "root/pg2", "100/25"),
             hqueue("root-pg3-pg31", "root/pg3/pg31", "100/25/50"),
             hqueue("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
             hqueue("root-pg4", "root/pg4", "100/25"),
             node("n", rl("30", "30G", {"pods": "500"}))]
    return docs


HDRF_CASES = [
    pytest.param(rescaling_case, {"pg1": (5000, 5 * G), "pg21": (5000, 0), "pg22": (0, 5 * G)}, id="rescaling test"),
    pytest.param(blocking_case, {"pg1": (10000, 0), "pg2": (10000, 0), "pg31": (10000, 0),
                                 "pg32": (0, 15 * G), "pg4": (0, 15 * G)}, id="blocking nodes test"),
]


def allocations(res) -> dict:
    return {j.name: (j.allocated.cpu, j.allocated.memory) for j in res.session.jobs.values()}


def go_tiers(with_proportion: bool) -> VolcanoConf:
    """TestHDRF's tiers, built raw as the Go test does (unset flags false). Volcano's conf parser
    rejects hdrf with proportion in one tier; the Go test bypasses it, and so does this."""
    plugins = [PluginOption("drf", {"hierarchy": True, "queue_order": True, "job_order": True})]
    if with_proportion:
        plugins.append(PluginOption("proportion", {"job_enqueued": True, "queue_order": True, "reclaimable": True}))
    return VolcanoConf(["allocate"], [Tier(plugins)], source="test")


@pytest.mark.parametrize("build,expected", HDRF_CASES)
def test_hdrf_go(build, expected):
    res = run_session(cluster(build()), go_tiers(True))
    assert allocations(res) == expected


@pytest.mark.parametrize("build,expected", [
    # proportion only breaks drf's exact ties; without it ties go to the queue name, and the
    # eng queues (root-eng-*) win every tie against root-sci
    pytest.param(rescaling_case, {"pg1": (4000, 4 * G), "pg21": (6000, 0), "pg22": (0, 6 * G)}, id="rescaling"),
    HDRF_CASES[1],
])
def test_hdrf_without_proportion(build, expected):
    res = run_session(cluster(build()), go_tiers(False))
    assert allocations(res) == expected


# --- dominant share ------------------------------------------------------------------------

SHARE_CASES = [
    # (cluster node allocatable, job pods [(phase, requests)], expected share, dominant)
    ("cpu dominant", rl("10", "10G"), [("Running", rl("2", "1G")), ("Running", rl("1", "1G"))], 0.3, "cpu"),
    ("memory dominant", rl("10", "10G"), [("Running", rl("1", "4G"))], 0.4, "memory"),
    ("pending tasks do not count", rl("10", "10G"), [("Pending", rl("5", "5G"))], 0.0, ""),
    ("scalar dominant", rl("10", "10G", {"nvidia.com/gpu": "4"}),
     [("Running", rl("1", "1G", {"nvidia.com/gpu": "2"}))], 0.5, "nvidia.com/gpu"),
    ("mixed running and pending", rl("10", "10G"), [("Running", rl("1", "1G")), ("Pending", rl("8", "8G"))],
     0.1, "cpu"),
]


@pytest.mark.parametrize("alloc,pods,share,dominant", [c[1:] for c in SHARE_CASES], ids=[c[0] for c in SHARE_CASES])
def test_job_share_at_open(alloc, pods, share, dominant):
    docs = [node("n1", alloc), queue("default"), podgroup("ns", "pg", 0)]
    for k, (phase, req) in enumerate(pods):
        docs.append(pod("ns", f"p{k}", node="n1" if phase == "Running" else "", phase=phase, req=req, group="pg"))
    ssn = open_session(docs, drf_conf(False))
    attr = ssn.plugins["drf"].job_attrs["ns/pg"]
    assert attr.share == pytest.approx(share, abs=1e-12)
    assert attr.dominant == dominant


def rl_res(cpu=0.0, mem=0.0):
    from caldera.batch.api.resource import Resource
    return Resource(cpu, mem)


def test_share_counts_only_the_clusters_dimensions():
    p = DRFPlugin()
    p._dims = [("cpu", 10.0)]
    assert p.calculate_share(rl_res(cpu=5)) == ("cpu", 0.5)
    # dimensions the cluster lacks are not looked at (only the total's names count)
    r = rl_res(cpu=0)
    r.scalars["nvidia.com/gpu"] = 1000.0
    assert p.calculate_share(r) == ("", 0.0)


# --- JobOrder ------------------------------------------------------------------------------

@pytest.mark.parametrize("a_running,b_running,want", [
    (["1"], ["2"], -1),
    (["2"], ["1"], 1),
    (["1"], ["1"], 0),
    ([], ["1"], -1),
])
def test_job_order(a_running, b_running, want):
    docs = [node("n1", rl("10", "10G")), queue("default"), podgroup("ns", "a", 0), podgroup("ns", "b", 0)]
    for g, cpus in (("a", a_running), ("b", b_running)):
        for k, c in enumerate(cpus):
            docs.append(running("ns", f"{g}{k}", "n1", rl(c, "0"), g))
        docs.append(pod("ns", f"{g}-pending", req=rl("1", "0"), group=g))
    ssn = open_session(docs, drf_conf(False))
    fn = ssn.fns["job_order"]["drf"]
    assert fn(ssn.jobs["ns/a"], ssn.jobs["ns/b"]) == want
    assert fn(ssn.jobs["ns/b"], ssn.jobs["ns/a"]) == -want


def test_job_order_in_allocate():
    """One free cpu, two jobs in one queue: the job with the lower share gets it, although the
    other is first by creation/name."""
    docs = [node("n1", rl("4", "10G")), queue("default"),
            podgroup("ns", "a", 0, creation="2024-01-01T00:00:00Z"),
            podgroup("ns", "b", 0, creation="2024-01-02T00:00:00Z"),
            running("ns", "a-run", "n1", rl("2", "1G"), "a"),
            running("ns", "b-run", "n1", rl("1", "1G"), "b"),
            pod("ns", "a-new", req=rl("1", "1G"), group="a"),
            pod("ns", "b-new", req=rl("1", "1G"), group="b")]
    assert outcome(run(docs, drf_conf(False)))["bind"] == {"ns/b-new": "n1"}
    # with the job order off, creation order decides
    off = drf_conf(False).replace("enableJobOrder: true", "enableJobOrder: false")
    assert outcome(run(docs, off))["bind"] == {"ns/a-new": "n1"}


# --- Preemptable ---------------------------------------------------------------------------

PREEMPT_CASES = [
    # (name, preemptor's job running [req], preemptor req, victim job running [(name, req)],
    #  candidates (names, in order), expected victims)
    ("victims while the victim job stays at or above the preemptor, cumulative",
     [], rl("1", "0"), [("v0", rl("1", "0")), ("v1", rl("1", "0")), ("v2", rl("1", "0"))],
     ["v0", "v1", "v2"], ["v0", "v1"]),
    ("preemptor already ahead: no victims",
     [rl("3", "0")], rl("1", "0"), [("v0", rl("1", "0")), ("v1", rl("1", "0")), ("v2", rl("1", "0"))],
     ["v0", "v1", "v2"], []),
    ("dominant resources differ: equal shares are victims",
     [], rl("1", "4G"), [("v0", rl("2", "1G")), ("v1", rl("2", "1G")), ("v2", rl("2", "1G"))],
     ["v0", "v1"], ["v0"]),
    ("within shareDelta below the preemptor: victim",
     [], rl("1", "0"), [("keep", rl("0", "999995000")), ("v", rl("0", "1G"))], ["v"], ["v"]),
    ("more than shareDelta below the preemptor: not a victim",
     [], rl("1", "0"), [("keep", rl("0", "999980000")), ("v", rl("0", "1G"))], ["v"], []),
]


@pytest.mark.parametrize("p_running,p_req,v_running,cands,want", [c[1:] for c in PREEMPT_CASES],
                         ids=[c[0] for c in PREEMPT_CASES])
def test_preemptable(p_running, p_req, v_running, cands, want):
    docs = [node("n1", rl("10", "10G")), queue("default"), podgroup("ns", "p", 0), podgroup("ns", "v", 0),
            pod("ns", "preemptor", req=p_req, group="p")]
    docs += [running("ns", f"prun{k}", "n1", r, "p") for k, r in enumerate(p_running)]
    docs += [running("ns", n, "n1", r, "v") for n, r in v_running]
    ssn = open_session(docs, drf_conf(False))
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    victims, vote = ssn.fns["preemptable"]["drf"](tasks["preemptor"], [tasks[n] for n in cands])
    assert vote == 1
    assert [t.name for t in victims] == want


def test_preemptable_unknown_preemptor_job():
    docs = [node("n1", rl("10", "10G")), queue("default"), podgroup("ns", "v", 0),
            running("ns", "v0", "n1", rl("1", "0"), "v"), pod("ns", "x", req=rl("1", "0"), group="v")]
    ssn = open_session(docs, drf_conf(False))
    t = next(t for t in ssn.jobs["ns/v"].tasks.values() if t.name == "x")
    t.job = "ns/gone"
    assert ssn.fns["preemptable"]["drf"](t, list(ssn.jobs["ns/v"].tasks.values())) == (None, 1)


def test_share_delta_value():
    assert SHARE_DELTA == 0.000001


# --- event handlers ------------------------------------------------------------------------

def test_events_keep_shares_current():
    docs = [node("n1", rl("10", "10G")), queue("default"), podgroup("ns", "a", 0),
            running("ns", "r", "n1", rl("2", "1G"), "a"), pod("ns", "p", req=rl("3", "1G"), group="a")]
    ssn = open_session(docs, drf_conf(False))
    drf = ssn.plugins["drf"]
    job = ssn.jobs["ns/a"]
    tasks = {t.name: t for t in job.tasks.values()}
    assert drf.share("ns/a") == pytest.approx(0.2)
    stmt = ssn.statement()
    stmt.allocate(tasks["p"], 0)
    assert drf.share("ns/a") == pytest.approx(0.5)
    stmt.discard()
    assert drf.share("ns/a") == pytest.approx(0.2)
    stmt = ssn.statement()
    stmt.evict(tasks["r"], "test")
    assert drf.share("ns/a") == pytest.approx(0.0)
    stmt.discard()
    assert drf.share("ns/a") == pytest.approx(0.2)


# --- hierarchy ----------------------------------------------------------------------------

def test_registration_depends_on_hierarchy():
    docs = [node("n1", rl("10", "10G")), queue("default")]
    flat = open_session(docs, drf_conf(False))
    assert "drf" not in flat.fns["queue_order"] and "drf" not in flat.fns["reclaimable"]
    assert "drf" in flat.fns["job_order"] and "drf" in flat.fns["preemptable"]
    h = open_session(docs, drf_conf(True))
    assert "drf" in h.fns["queue_order"] and "drf" in h.fns["reclaimable"]


@pytest.mark.parametrize("s,w", [("50", 50.0), ("2.5", 2.5), ("0.5", 1.0), ("0", 1.0), ("-3", 1.0),
                                 ("abc", 1.0), ("", 1.0), (" 5", 1.0), ("1_000", 1.0)])
def test_weight_parse(s, w):
    assert _parse_weight(s) == w


def two_queue_docs(a_running: int, b_running: int, a_weight: str, b_weight: str,
                   a_pending: int = 1, b_pending: int = 1):
    docs = [node("n1", rl("10", "10G")),
            hqueue("qa", "root/a", f"100/{a_weight}"), hqueue("qb", "root/b", f"100/{b_weight}"),
            podgroup("ns", "ja", 0, "qa"), podgroup("ns", "jb", 0, "qb")]
    for g, n, pend in (("ja", a_running, a_pending), ("jb", b_running, b_pending)):
        docs += [running("ns", f"{g}-r{k}", "n1", rl("1", "0"), g) for k in range(n)]
        docs += [pod("ns", f"{g}-p{k}", req=rl("1", "0"), group=g) for k in range(pend)]
    return docs


def test_tree_values():
    """ja 2 cpu in a (weight 1), jb 4 cpu in b (weight 2): the root rescales b down to a's
    dominant share, 2 + 4 * (0.2 / 0.4) = 4 cpu."""
    ssn = open_session(two_queue_docs(2, 4, "1", "2"), drf_conf(True))
    root = ssn.plugins["drf"].root
    a, b = root.children["a"], root.children["b"]
    assert (a.weight, b.weight) == (1.0, 2.0)
    assert a.attr.share == pytest.approx(0.2) and b.attr.share == pytest.approx(0.4)
    assert root.attr.allocated.cpu == pytest.approx(4000)
    assert root.attr.share == pytest.approx(0.4)
    assert set(a.children) == {"ns/ja"} and a.children["ns/ja"].children is None
    assert not any(n.saturated for n in (root, a, b))


@pytest.mark.parametrize("a_run,b_run,a_pend,b_pend,aw,bw,want", [
    (2, 4, 1, 1, "1", "2", 0),      # 0.2 / 1 == 0.4 / 2: no opinion
    (2, 5, 1, 1, "1", "2", -1),     # 0.2 < 0.25
    (2, 3, 1, 1, "1", "2", 1),      # 0.2 > 0.15
    (2, 4, 1, 1, "1", "1", -1),     # without weights a's lower share wins
    (2, 4, 0, 1, "1", "2", 1),      # ja got all it asked for: saturated, goes last
    (2, 1, 1, 0, "1", "1", -1),     # jb saturated although its share is lower
])
def test_hdrf_queue_order(a_run, b_run, a_pend, b_pend, aw, bw, want):
    ssn = open_session(two_queue_docs(a_run, b_run, aw, bw, a_pend, b_pend), drf_conf(True))
    fn = ssn.fns["queue_order"]["drf"]
    assert fn(ssn.queues["qa"], ssn.queues["qb"]) == want
    assert fn(ssn.queues["qb"], ssn.queues["qa"]) == -want


def test_hdrf_queue_order_in_allocate():
    """One free cpu. qb (path root/a, weight 1) holds 1 of 8 cpus: 0.125; qa (root/b, weight 4)
    holds 6: 0.75 / 4 = 0.1875. hdrf serves qb; without the hierarchy qa goes first by name."""
    docs = [node("n1", rl("8", "10G")),
            hqueue("qa", "root/b", "100/4"), hqueue("qb", "root/a", "100/1"),
            podgroup("ns", "ja", 0, "qa"), podgroup("ns", "jb", 0, "qb"),
            pod("ns", "ja-new", req=rl("1", "0"), group="ja"), pod("ns", "jb-new", req=rl("1", "0"), group="jb")]
    docs += [running("ns", f"ja-r{k}", "n1", rl("1", "0"), "ja") for k in range(6)]
    docs += [running("ns", "jb-r0", "n1", rl("1", "0"), "jb")]
    assert outcome(run(docs, drf_conf(True)))["bind"] == {"ns/jb-new": "n1"}
    assert outcome(run(docs, drf_conf(False)))["bind"] == {"ns/ja-new": "n1"}


@pytest.mark.parametrize("a_run,b_run,aw,bw,want", [
    (1, 6, "1", "2", 6),   # ja +1 -> 0.2 ; jb -1 -> 0.5 / 2 = 0.25 : every jb task is a victim
    (2, 4, "1", "2", 0),   # 0.3 vs 0.3 / 2 = 0.15
    (1, 6, "1", "4", 0),   # 0.2 vs 0.5 / 4 = 0.125
    (1, 6, "1", "1", 6),   # 0.2 vs 0.5
    (2, 3, "1", "1", 0),   # 0.3 vs 0.2
])
def test_hdrf_reclaimable(a_run, b_run, aw, bw, want):
    # ja keeps pending work (3 cpus asked beyond its running ones) so that it is not saturated
    ssn = open_session(two_queue_docs(a_run, b_run, aw, bw, a_pending=3), drf_conf(True))
    drf = ssn.plugins["drf"]
    before = (drf.root.attr.share, drf.total_allocated.cpu)
    reclaimer = next(t for t in ssn.jobs["ns/ja"].tasks.values() if t.name == "ja-p0")
    cands = sorted((t for t in ssn.jobs["ns/jb"].tasks.values() if t.node_name), key=lambda t: t.name)
    victims, vote = ssn.fns["reclaimable"]["drf"](reclaimer, cands)
    assert vote == 1
    assert len(victims) == want
    # what-if work happens on a copy of the tree
    assert (drf.root.attr.share, drf.total_allocated.cpu) == before


def test_missing_weight_is_an_input_error():
    docs = [node("n1", rl("10", "10G")), hqueue("q", "root/a/b", "100/2"), podgroup("ns", "j", 0, "q"),
            pod("ns", "p", req=rl("1", "0"), group="j")]
    with pytest.raises(InputError, match="hierarchy-weights"):
        open_session(docs, drf_conf(True))


def test_queue_without_hierarchy_hangs_jobs_at_root():
    docs = [node("n1", rl("10", "10G")), queue("default"), podgroup("ns", "j", 0),
            running("ns", "r", "n1", rl("1", "0"), "j")]
    ssn = open_session(docs, drf_conf(True))
    root = ssn.plugins["drf"].root
    assert set(root.children) == {"ns/j"}
    assert ssn.fns["queue_order"]["drf"](ssn.queues["default"], ssn.queues["default"]) == 0


def test_conf_rejects_hierarchy_with_proportion():
    from caldera.errors import ConfigError

    from .helpers import conf
    with pytest.raises(ConfigError, match="conflicts"):
        conf("actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion\n")


def test_incremental_tree_matches_full_recompute():
    """The event handler re-derives only the changed job's ancestors while the demanded
    dimensions stay the same; the result must equal Volcano's whole-tree pass."""
    docs = [node("n1", rl("6", "6G"))]
    for q, path, w in (("q1", "root/x/a", "100/2/3"), ("q2", "root/x/b", "100/2/1"), ("q3", "root/y", "100/5")):
        docs.append(hqueue(q, path, w))
        for j in range(2):
            g = f"{q}j{j}"
            docs.append(podgroup("ns", g, 0, q))
            docs += [pod("ns", f"{g}-p{k}", req=rl("1" if j else "0", "0" if j else "1G"), group=g) for k in range(3)]
    ssn = open_session(docs, drf_conf(True))
    drf = ssn.plugins["drf"]

    def snapshot(n):
        kids = {} if n.children is None else {k: snapshot(c) for k, c in n.children.items()}
        return (n.attr.share, n.attr.allocated.cpu, n.attr.allocated.memory, n.saturated, kids)

    stmt = ssn.statement()
    # round robin over the jobs, so that jobs off the changed path hold part of a dimension
    # when it runs out (they turn saturated without an event of their own)
    pending = sorted((t for j in ssn.jobs.values() for t in j.tasks.values()), key=lambda t: (t.name[-1], t.name))
    checked = 0
    for t in pending:
        if not ssn.nodes.fits(t, ssn.nodes.idle)[0]:
            continue
        stmt.allocate(t, 0)
        got = snapshot(drf.root)
        full = drf.root.clone()
        drf._tree._full(full, drf._tree.demanding(drf.total_allocated))
        assert snapshot(full) == got
        checked += 1
    assert checked == 12   # all 6 cpus and 6G handed out, so the demanded set changed on the way
    assert drf.root.children["x"].children["a"].children["ns/q1j1"].saturated
