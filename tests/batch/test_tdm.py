"""tdm plugin: port of volcano pkg/scheduler/plugins/tdm/tdm_test.go (Test_parseRevocableZone,
Test_TDM, Test_TDM_victimsFn), plus hand-checked allocate / preempt sessions, the evict period,
argument errors and a `caldera schedule --now` run.

The Go tests read the wall clock and assume it is not between 00:00 and 00:01 (a window
"0:00-0:01" is taken to be closed); here the session's time is fixed at 12:00 UTC (NOW).

Hand check of the allocate scenario (nodes `rev` labelled volcano.sh/revocable-zone=rz1 and `std`,
both 4 CPU; window rz1 "10:00-21:00"; nodeorder and binpack off, so tdm's score decides and ties
go to the first node): at 12:00 the window is open, the preemptable pod scores 100 on `rev` and 0
on `std` and goes to `rev`; the non-preemptable pod fails `rev` ("not allow to dispatch to
revocable node") and goes to `std`. At 22:00 the window is closed: `rev` fails both ("current
time beyond revocable zone rz1:10:00-21:00") and both go to `std`.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest
from click.testing import CliRunner

from caldera.batch.conf import FLAGS
from caldera.batch.plugins import PLUGINS, argument_warnings
from caldera.batch.plugins.tdm import ZoneError, parse_int_or_percent, task_revocable_zone, window_at
from caldera.cli.main import cli
from caldera.errors import ConfigError

from .helpers import conf, node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
RZ = "volcano.sh/revocable-zone"
PREEMPTABLE = "volcano.sh/preemptable"
MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
MIN_AVAILABLE = "volcano.sh/jdb-min-available"


def at(hhmm: str, day: str = "2026-01-01") -> float:
    return datetime.fromisoformat(f"{day}T{hhmm}:00+00:00").timestamp()


NOW = at("12:00")


def tdm_conf(args: dict, actions="allocate", **flags) -> dict:
    return {"actions": actions, "tiers": [{"plugins": [{**ALL_OFF, "name": "tdm", **flags, "arguments": args}]}]}


# ---- Test_parseRevocableZone ---------------------------------------------------------------------
@pytest.mark.parametrize("rz,delta,err", [
    ("00:00_01:00", 0, True),
    ("00:00-01:00", 60 * 60, False),
    ("0:00-23:59", 23 * 60 * 60 + 59 * 60, False),
    ("0:00", 0, True),
    ("1:00-0:00", 23 * 60 * 60, False),
    ("1:0-0:0", 0, True),
    ("   1:00-0:00    ", 23 * 60 * 60, False),
    ("23:59-23:59", 24 * 60 * 60, False),
    ("63:59-23:59", 0, True),
])
def test_parse_revocable_zone(rz, delta, err):
    """Test_parseRevocableZone: the window's length, or an error (Go's zero times: delta 0)."""
    try:
        start, end = window_at(rz, NOW)
    except ZoneError:
        assert err
        return
    assert not err
    assert end - start == delta


def test_window_is_the_one_starting_today():
    """Volcano's window starts on today's date: an overnight window is closed after midnight."""
    start, end = window_at("22:00-06:00", at("01:00"))
    assert (start, end) == (at("22:00"), at("06:00", "2026-01-02"))
    start, end = window_at("10:00-21:00", at("23:30"))
    assert (start, end) == (at("10:00"), at("21:00"))


# ---- Test_TDM --------------------------------------------------------------------------------------
def _tdm_docs(pods):
    big = rl("16", "64Gi", {"pods": "10"})
    return [*pods, podgroup("c1", "pg1", 0, queue="c1"), queue("c1", 1),
            node("n1", big, {RZ: "rz1"}), node("n2", big, {RZ: "rz1"}), node("n3", big), node("n4", big),
            node("n5", big, {RZ: "rz2"})]


P1 = pod("c1", "p1", "", "Pending", rl("1", "1Gi"), "pg1", annotations={RZ: "*"})
P2 = pod("c1", "p2", "", "Pending", rl("1", "1Gi"), "pg1")
P3 = pod("c1", "p3", "", "Pending", rl("1", "1Gi"), "pg1", annotations={RZ: "*"})


@pytest.mark.parametrize("p,predicated,scores", [
    (P1, {"n1", "n2", "n3", "n4"}, {"n1": 100, "n2": 100, "n3": 0, "n4": 0}),
    (P2, {"n3", "n4"}, {"n3": 0, "n4": 0}),
    (P3, {"n1", "n2", "n3", "n4"}, {"n1": 100, "n2": 100, "n3": 0, "n4": 0}),
], ids=["preemptable task rz available", "not preemptable task", "preemptable task and multiple rz"])
def test_tdm_predicate_and_node_order(p, predicated, scores):
    """Test_TDM: rz1 "0:00-0:00" (all day), rz2 "0:00-0:01" (closed at 12:00)."""
    ssn = open_session(_tdm_docs([p]), tdm_conf({"tdm.revocable-zone.rz1": "0:00-0:00",
                                                 "tdm.revocable-zone.rz2": "0:00-0:01"},
                                                enablePredicate=True, enableNodeOrder=True), now=NOW)
    (task,) = [t for j in ssn.jobs.values() for t in j.tasks.values()]
    idx = np.arange(len(ssn.nodes))
    ok, _ = ssn.predicate(task, idx)
    passed = idx[ok]
    assert {ssn.nodes.names[i] for i in passed} == predicated
    got = ssn.node_scores(task, passed)
    assert {ssn.nodes.names[i]: s for i, s in zip(passed, got, strict=True)} == scores


def test_predicate_reasons():
    ssn = open_session(_tdm_docs([P1, P2]) + [node("n6", rl("16", "64Gi"), {RZ: "rz9"})],
                       tdm_conf({"tdm.revocable-zone.rz1": "0:00-0:00", "tdm.revocable-zone.rz2": "0:00-0:01"},
                                enablePredicate=True), now=NOW)
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}

    def reasons(task):
        _, failures = ssn.predicate(task, np.arange(len(ssn.nodes)))
        return {ssn.nodes.names[i]: fn.reason(task, int(i)) for fn, idx in failures for i in idx}

    u = "UnschedulableAndUnresolvable"
    closed = [(u, "current time beyond revocable zone rz2:0:00-0:01")]
    unknown = [(u, "revocable zone rz9 not support")]
    assert reasons(tasks["p1"]) == {"n5": closed, "n6": unknown}
    no = [(u, "not allow to dispatch to revocable node")]
    assert reasons(tasks["p2"]) == {"n1": no, "n2": no, "n5": closed, "n6": unknown}


def test_task_revocable_zone():
    """GetPodRevocableZone: the revocable-zone annotation ("*" only), else preemptable=true;
    labels are not read."""
    ssn = open_session([
        pod("c1", "a", annotations={RZ: "*"}), pod("c1", "b", annotations={RZ: "rz1"}),
        pod("c1", "c", annotations={PREEMPTABLE: "true"}), pod("c1", "d", annotations={PREEMPTABLE: "1"}),
        pod("c1", "e", annotations={PREEMPTABLE: "false"}), pod("c1", "f", labels={PREEMPTABLE: "true"}),
        pod("c1", "g", annotations={RZ: "x", PREEMPTABLE: "true"}), pod("c1", "h"),
        node("n1", rl("4", "4G"))], tdm_conf({}))
    got = {t.name: task_revocable_zone(t.pod) for j in ssn.jobs.values() for t in j.tasks.values()}
    assert got == {"a": "*", "b": "", "c": "*", "d": "*", "e": "", "f": "", "g": "", "h": ""}


# ---- Test_TDM_victimsFn ------------------------------------------------------------------------------
def _victim_pods():
    out = []
    for i in range(1, 6):
        out.append(pod("c1", f"p{i}", "n1", "Running", rl("1", "1Gi"), "pg1",
                       annotations={PREEMPTABLE: "true" if i <= 3 else "false"}))
    for i in range(6, 11):
        out.append(pod("c2", f"p{i}", "n2", "Running", rl("1", "1Gi"), "pg2", annotations={PREEMPTABLE: "true"}))
    return out


def _pg(name, ns, ann):
    return podgroup(ns, name, 0, queue=ns, phase="Running", annotations=ann)


VP = _victim_pods()
BIG = rl("16", "64Gi", {"pods": "10"})
N1 = node("n1", BIG, {RZ: "rz1"})
N2 = node("n2", BIG, {RZ: "rz1"})
OPEN_ALL_DAY = {"tdm.revocable-zone.rz1": "0:00-0:00", "tdm.evict.period": "100ms"}
CLOSED_AT_NOON = {"tdm.revocable-zone.rz1": "0:00-0:01", "tdm.evict.period": "1s"}


@pytest.mark.parametrize("docs,args,want", [
    ([_pg("pg1", "c1", {MAX_UNAVAILABLE: "30%"}), queue("c1"), *VP[:5], N1],
     {"tdm.revocable-zone.rz1": "0:00-0:01", "tdm.evict.period": "100ms"}, 2),
    ([_pg("pg1", "c1", {MAX_UNAVAILABLE: "30%"}), queue("c1"), *VP[:5], N1], OPEN_ALL_DAY, 0),
    ([_pg("pg1", "c1", {MAX_UNAVAILABLE: "99%"}), queue("c1"), *VP[:5], N1], CLOSED_AT_NOON, 3),
    ([_pg("pg2", "c2", {MAX_UNAVAILABLE: "50%"}), queue("c2"), *VP[5:], N2], CLOSED_AT_NOON, 3),
    ([_pg("pg2", "c2", {MAX_UNAVAILABLE: "50%"}), _pg("pg1", "c1", {MAX_UNAVAILABLE: "90%"}), queue("c1"),
      queue("c2"), *VP, N1, N2], CLOSED_AT_NOON, 6),
    ([_pg("pg2", "c2", {MAX_UNAVAILABLE: "3"}), queue("c2"), *VP[5:], N2], CLOSED_AT_NOON, 3),
    ([_pg("pg2", "c2", {MIN_AVAILABLE: "3"}), queue("c2"), *VP[5:], N2], CLOSED_AT_NOON, 2),
    ([_pg("pg2", "c2", {MIN_AVAILABLE: "30%"}), queue("c2"), *VP[5:], N2], CLOSED_AT_NOON, 3),
    ([_pg("pg2", "c2", {MIN_AVAILABLE: "2"}), _pg("pg1", "c1", {MAX_UNAVAILABLE: "3"}), queue("c1"),
      queue("c2"), *VP, N1, N2], CLOSED_AT_NOON, 6),
], ids=[f"case {i}" for i in range(9)])
def test_tdm_victims_fn(docs, args, want):
    """Test_TDM_victimsFn: how many preemptable Running tasks leave a closed zone, per job budget."""
    ssn = open_session(docs, tdm_conf(args, enabledVictim=True), now=NOW)
    victims = ssn.victim_tasks([])
    assert len(victims) == want
    assert all(t.preemptable and ssn.nodes.by_name[t.node_name].node.labels[RZ] == "rz1" for t in victims)


def test_victims_fn_evict_period():
    """lastEvictAt: within one evict period of the last call there are no victims; after it there are."""
    docs = [_pg("pg2", "c2", {MAX_UNAVAILABLE: "3"}), queue("c2"), *VP[5:], N2]
    ssn = open_session(docs, tdm_conf({"tdm.revocable-zone.rz1": "0:00-0:01", "tdm.evict.period": "10s"},
                                      enabledVictim=True), now=NOW)
    (fn,) = [fn for _, _, fn in ssn._each("victim_tasks")]
    assert [t.name for t in fn([])] == ["p6", "p7", "p8"]
    ssn.now = NOW + 9.999
    assert fn([]) == []
    ssn.now = NOW + 10
    assert len(fn([])) == 3
    # the call's own list is not used
    assert fn(list(next(iter(ssn.jobs.values())).tasks.values())) == []


@pytest.mark.parametrize("ann,want", [
    ({MAX_UNAVAILABLE: "2"}, 2),            # nothing unavailable yet
    ({MAX_UNAVAILABLE: "0"}, 0),
    ({MAX_UNAVAILABLE: "bad"}, 0),          # does not parse: 0 (and a warning)
    ({MAX_UNAVAILABLE: "-10%"}, 0),
    ({MIN_AVAILABLE: "5"}, 0),              # 5 running >= min 5: 5 - 5
    ({MIN_AVAILABLE: "6"}, 1),              # fewer running than min: Volcano's default 1
    ({MIN_AVAILABLE: "40%"}, 3),            # ceil(2.0) = 2 -> 5 - 2
    ({MIN_AVAILABLE: "", MAX_UNAVAILABLE: "3"}, 1),   # min-available wins even empty: no budget
    ({}, 1),
])
def test_budget(ann, want):
    """getMaxPodEvictNum over five Running preemptable tasks on a closed zone."""
    docs = [_pg("pg2", "c2", ann), queue("c2"), *VP[5:], N2]
    ssn = open_session(docs, tdm_conf(CLOSED_AT_NOON, enabledVictim=True), now=NOW)
    (fn,) = [fn for _, _, fn in ssn._each("victim_tasks")]
    assert len(fn([])) == want


def test_parse_int_or_percent():
    assert parse_int_or_percent("3", 10) == (3, None)
    assert parse_int_or_percent("+3", 10) == (3, None)
    assert parse_int_or_percent("25%", 5) == (2, None)         # ceil(1.25)
    assert parse_int_or_percent("2147483648", 5)[0] == 0       # beyond int32: a string, not a percentage
    assert parse_int_or_percent("x%", 5)[0] == 0
    assert parse_int_or_percent("1.5", 5) == (0, "invalid type: string is not a percentage")


def test_bad_budget_annotation_warns():
    docs = [_pg("pg2", "c2", {MAX_UNAVAILABLE: "half"}), queue("c2"), *VP[5:], N2]
    res = run(docs, tdm_conf(CLOSED_AT_NOON), now=NOW)
    assert any("PodGroup c2/pg2: annotation volcano.sh/jdb-max-unavailable" in w for w in res.warnings)


# ---- orders and votes ------------------------------------------------------------------------------
def test_job_order_pipelined_starving():
    docs = [podgroup("c1", "keep", 2, queue="c1"),
            podgroup("c1", "spot", 1, queue="c1", annotations={PREEMPTABLE: "true"}),
            pod("c1", "k-0", "", "Pending", rl("1", "1G"), "keep"),
            pod("c1", "k-1", "n1", "Running", rl("1", "1G"), "keep"),
            pod("c1", "s-0", "", "Pending", rl("1", "1G"), "spot"),
            queue("c1"), node("n1", rl("4", "4G"))]
    ssn = open_session(docs, tdm_conf({}, enableJobOrder=True, enableJobPipelined=True, enableJobStarving=True))
    jobs = {j.name: j for j in ssn.jobs.values()}
    keep, spot = jobs["keep"], jobs["spot"]
    (order,) = [fn for _, _, fn in ssn._each("job_order")]
    assert (order(keep, spot), order(spot, keep), order(keep, keep)) == (-1, 1, 0)
    # pipelined: keep has 1 of minMember 2 ready -> Reject; spot minMember 1, none ready -> Reject
    assert not ssn.job_pipelined(keep) and not ssn.job_pipelined(spot)
    # starving: a preemptable job never; keep has a Pending task
    assert ssn.job_starving(keep) and not ssn.job_starving(spot)


# ---- arguments ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,msg", [
    ({"tdm.revocable-zone.rz1": "10:00"}, "revocable zone 10:00 format error"),
    ({"tdm.revocable-zone.rz1": "10:00-25:00"}, "'25:00' is not a time of day"),
    ({"tdm.revocable-zone.rz1": 600}, "must be a daily window"),
    ({"tdm.evict.period": "1 minute"}, "tdm.arguments.tdm.evict.period: time: "),
    ({"tdm.evict.period": 60}, "must be a Go duration"),
])
def test_bad_arguments(args, msg):
    with pytest.raises(ConfigError, match=msg.replace(".", r"\.").replace("(", r"\(")):
        open_session([node("n1", rl("1", "1G"))], tdm_conf(args))


def test_argument_warnings():
    c = conf(tdm_conf({"tdm.revocable-zone.rz1": "1:00-2:00", "tdm.evict-period": "1m",
                       "x.tdm.revocable-zone.b": "1:00-2:00"}))
    assert argument_warnings(c) == ['test.conf: plugin "tdm" argument "tdm.evict-period" is not read '
                                    '(did you mean "tdm.evict.period"?); ignored']
    assert "tdm" in PLUGINS and "cdp" in PLUGINS
    # a key containing the prefix names a zone: the text after it ("x.b" here), as Volcano reads it
    ssn = open_session([node("n1", rl("1", "1G"), {RZ: "x.b"})],
                       tdm_conf({"x.tdm.revocable-zone.b": "0:00-0:00"}, enablePredicate=True), now=NOW)
    assert ssn.plugins["tdm"].zones == {"x.b": "0:00-0:00"}


# ---- sessions -------------------------------------------------------------------------------------
ALLOC_TIER = [
    {"name": "gang", "enableJobReady": True, "enableJobPipelined": True},
    {"name": "predicates", "enablePredicate": True},
]


def alloc_conf(window="10:00-21:00", tdm_flags=None) -> dict:
    plugins = [{**ALL_OFF, **p} for p in ALLOC_TIER]
    plugins.append({**ALL_OFF, "name": "tdm", "enablePredicate": True, "enableNodeOrder": True,
                    **(tdm_flags or {}), "arguments": {"tdm.revocable-zone.rz1": window}})
    return {"actions": "allocate", "tiers": [{"plugins": plugins}]}


ALLOC_DOCS = [podgroup("c1", "spot", 1, queue="c1"), podgroup("c1", "keep", 1, queue="c1"),
              pod("c1", "spot-0", "", "Pending", rl("1", "1G"), "spot", annotations={PREEMPTABLE: "true"}),
              pod("c1", "keep-0", "", "Pending", rl("1", "1G"), "keep"),
              queue("c1"), node("rev", rl("4", "4G"), {RZ: "rz1"}), node("std", rl("4", "4G"))]


@pytest.mark.parametrize("hhmm,spot_node", [("12:00", "rev"), ("10:00", "rev"), ("21:00", "rev"),
                                            ("21:01", "std"), ("22:00", "std"), ("09:59", "std")])
def test_allocate_follows_the_window(hhmm, spot_node):
    out = outcome(run(ALLOC_DOCS, alloc_conf(), now=at(hhmm)))
    assert out["bind"] == {"c1/spot-0": spot_node, "c1/keep-0": "std"}


def test_allocate_with_only_a_revocable_node():
    """Control: with the revocable node alone, both pods bind to it without tdm; with tdm only
    the preemptable one, and only while the window is open."""
    docs = ALLOC_DOCS[:-1]
    c = alloc_conf()
    c["tiers"][0]["plugins"] = c["tiers"][0]["plugins"][:-1]
    assert outcome(run(docs, c, now=NOW))["bind"] == {"c1/spot-0": "rev", "c1/keep-0": "rev"}
    assert outcome(run(docs, alloc_conf(), now=NOW))["bind"] == {"c1/spot-0": "rev"}
    assert outcome(run(docs, alloc_conf(), now=at("22:00")))["bind"] == {}


def test_overnight_window_is_closed_after_midnight():
    """As Volcano: "22:00-06:00" at 01:00 is measured against today's 22:00, so it is closed."""
    assert outcome(run(ALLOC_DOCS, alloc_conf("22:00-06:00"), now=at("23:00")))["bind"]["c1/spot-0"] == "rev"
    assert outcome(run(ALLOC_DOCS, alloc_conf("22:00-06:00"), now=at("01:00")))["bind"]["c1/spot-0"] == "std"


PREEMPT_TIER = [
    {"name": "conformance", "enablePreemptable": True},
    {"name": "gang", "enablePreemptable": True, "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "priority", "enableTaskOrder": True, "enableJobOrder": True, "enablePreemptable": True,
     "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "predicates", "enablePredicate": True},
]


def preempt_conf(with_tdm=True) -> dict:
    plugins = [{**ALL_OFF, **p} for p in PREEMPT_TIER]
    if with_tdm:
        plugins.append({**ALL_OFF, "name": "tdm", "enablePreemptable": True, "enablePredicate": True,
                        "arguments": {"tdm.revocable-zone.rz1": "0:00-0:00"}})
    return {"actions": "preempt", "tiers": [{"plugins": plugins}]}


def preempt_docs(preemptor_ann=None, budget=None):
    return [priority_class("low", 100), priority_class("high", 1000),
            podgroup("c1", "low", 0, queue="c1", phase="Running", priority_class="low", annotations=budget),
            podgroup("c1", "high", 1, queue="c1", phase="Inqueue", priority_class="high"),
            pod("c1", "a", "std", "Running", rl("1", "1G"), "low", annotations={PREEMPTABLE: "true"},
                creation="2026-01-01T00:00:00Z"),
            pod("c1", "b", "std", "Running", rl("1", "1G"), "low", annotations={PREEMPTABLE: "false"},
                creation="2026-01-01T00:00:01Z"),
            pod("c1", "urgent", "", "Pending", rl("2", "1G"), "high", annotations=preemptor_ann),
            queue("c1"), node("std", rl("2", "2G"))]


def test_preempt_within_the_job_budget():
    """Node std (2 CPU) runs a and b (1 CPU each, both preemptable, job `low`); urgent (not
    preemptable, priority 1000) needs 2 CPU. Without tdm both are victims and evicted. With tdm
    a job without a budget annotation loses at most 1 task: 1 CPU is not enough, nothing is
    evicted and urgent stays pending. With volcano.sh/jdb-max-unavailable "2" both go again."""
    def docs(budget=None):
        d = preempt_docs({PREEMPTABLE: "false"}, budget)
        d[5] = pod("c1", "b", "std", "Running", rl("1", "1G"), "low", annotations={PREEMPTABLE: "true"},
                   creation="2026-01-01T00:00:01Z")
        return d
    base = outcome(run(docs(), preempt_conf(False)))
    assert base["evict"] == ["c1/a", "c1/b"] and base["pipeline"] == {"c1/urgent": "std"}
    out = outcome(run(docs(), preempt_conf(True)))
    assert out["evict"] == [] and out["pipeline"] == {}
    out = outcome(run(docs({MAX_UNAVAILABLE: "2"}), preempt_conf(True)))
    assert out["evict"] == ["c1/a", "c1/b"] and out["pipeline"] == {"c1/urgent": "std"}


def test_preempt_a_preemptable_preemptor_evicts_nothing():
    """urgent needs 1 CPU (a suffices) when b does not need to go."""
    docs = preempt_docs({PREEMPTABLE: "false"})
    docs[6] = pod("c1", "urgent", "", "Pending", rl("1", "1G"), "high", annotations={PREEMPTABLE: "false"})
    out = outcome(run(docs, preempt_conf(True)))
    assert out["evict"] == ["c1/a"] and out["pipeline"] == {"c1/urgent": "std"}
    # the same preemptor, preemptable (the default without the annotation): tdm rejects, no victim
    docs[6] = pod("c1", "urgent", "", "Pending", rl("1", "1G"), "high")
    out = outcome(run(docs, preempt_conf(True)))
    assert out["evict"] == [] and out["pipeline"] == {}
    # a budget of 0: min-available 2 with 2 running (2 - 2)
    docs = preempt_docs({PREEMPTABLE: "false"}, budget={MIN_AVAILABLE: "2"})
    docs[6] = pod("c1", "urgent", "", "Pending", rl("1", "1G"), "high", annotations={PREEMPTABLE: "false"})
    out = outcome(run(docs, preempt_conf(True)))
    assert out["evict"] == []


def test_preemptable_fn():
    """preemptableFn directly: candidates on revocable nodes, not Running or not preemptable are
    left out; per job at most its budget (1 by default), the first in the order given; a
    preemptor that is preemptable or may use revocable nodes gets Reject and no victims."""
    docs = [podgroup("c1", "j1", 0, queue="c1", phase="Running"), podgroup("c1", "j2", 0, queue="c1", phase="Running"),
            pod("c1", "r1", "rev", "Running", rl("1", "1G"), "j1", annotations={PREEMPTABLE: "true"}),
            pod("c1", "s1", "std", "Running", rl("1", "1G"), "j1", annotations={PREEMPTABLE: "true"}),
            pod("c1", "s2", "std", "Running", rl("1", "1G"), "j1", annotations={PREEMPTABLE: "true"}),
            pod("c1", "s3", "std", "Running", rl("1", "1G"), "j2", annotations={PREEMPTABLE: "true"}),
            pod("c1", "s4", "std", "Running", rl("1", "1G"), "j2", annotations={PREEMPTABLE: "false"}),
            pod("c1", "s5", "std", "Pending", rl("1", "1G"), "j2", annotations={PREEMPTABLE: "true"}),
            pod("c1", "keep", "", "Pending", rl("1", "1G"), annotations={PREEMPTABLE: "false"}),
            pod("c1", "spot", "", "Pending", rl("1", "1G")),
            pod("c1", "star", "", "Pending", rl("1", "1G"), annotations={PREEMPTABLE: "false", RZ: "*"}),
            queue("c1"), node("rev", rl("8", "8G"), {RZ: "rz1"}), node("std", rl("8", "8G"))]
    ssn = open_session(docs, tdm_conf({"tdm.revocable-zone.rz1": "0:00-0:00"}, enablePreemptable=True), now=NOW)
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    (fn,) = [fn for _, _, fn in ssn._each("preemptable")]
    cands = [tasks[n] for n in ("r1", "s2", "s1", "s3", "s4", "s5")]
    victims, vote = fn(tasks["keep"], cands)
    assert [t.name for t in victims] == ["s2", "s3"] and vote == 1
    assert fn(tasks["spot"], cands) == (None, -1)
    assert fn(tasks["star"], cands) == (None, -1)


def test_shuffle_evicts_from_closed_zones():
    """The shuffle action evicts what tdm's VictimTasks returns: at 12:00 rz1 ("10:00-21:00") is
    open and nothing goes; at 22:00 it is closed and each job loses its budget (1 by default,
    jdb-max-unavailable "2" for `big`) of Running preemptable tasks on rz1's node, the first ones
    placed on it; the task on the standard node and the non-preemptable one stay."""
    docs = [podgroup("c1", "small", 0, queue="c1", phase="Running"),
            podgroup("c1", "big", 0, queue="c1", phase="Running", annotations={MAX_UNAVAILABLE: "2"}),
            *[pod("c1", f"s{i}", "rev", "Running", rl("1", "1G"), "small", annotations={PREEMPTABLE: "true"})
              for i in range(3)],
            *[pod("c1", f"b{i}", "rev", "Running", rl("1", "1G"), "big", annotations={PREEMPTABLE: "true"})
              for i in range(3)],
            pod("c1", "b-std", "std", "Running", rl("1", "1G"), "big", annotations={PREEMPTABLE: "true"}),
            pod("c1", "b-keep", "rev", "Running", rl("1", "1G"), "big", annotations={PREEMPTABLE: "false"}),
            queue("c1"), node("rev", rl("16", "16G"), {RZ: "rz1"}), node("std", rl("4", "4G"))]
    c = tdm_conf({"tdm.revocable-zone.rz1": "10:00-21:00"}, actions="shuffle", enabledVictim=True)
    assert outcome(run(docs, c, now=NOW))["evict"] == []
    assert outcome(run(docs, c, now=at("22:00")))["evict"] == ["c1/b0", "c1/b1", "c1/s0"]
    # enabledVictim off: nothing
    c = tdm_conf({"tdm.revocable-zone.rz1": "10:00-21:00"}, actions="shuffle")
    assert outcome(run(docs, c, now=at("22:00")))["evict"] == []


# ---- caldera schedule --now ---------------------------------------------------------------------------
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: rev, labels: {volcano.sh/revocable-zone: rz1}}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "10"}, capacity: {cpu: "4", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: std}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "10"}, capacity: {cpu: "4", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata:
  name: spot
  namespace: default
  annotations: {volcano.sh/preemptable: "true"}
  creationTimestamp: "2026-01-01T08:00:00Z"
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Pending}
"""

CONF = """\
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: 10:00-21:00
      tdm.evict.period: 1m
- plugins:
  - name: predicates
"""


@pytest.mark.parametrize("now,where", [(None, "std"), ("2026-01-01T12:00:00Z", "rev"),
                                       ("2026-01-01T13:00:00+01:00", "rev"), ("2026-01-01T22:00:00Z", "std")])
def test_caldera_schedule(tmp_path, now, where):
    """Without --now the session's time is the pod's creation (08:00, window closed)."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF)
    args = ["schedule", "-f", str(tmp_path / "cluster.yaml"), "--config", str(tmp_path / "volcano-scheduler.conf"),
            "-o", "json"]
    r = CliRunner().invoke(cli, args + (["--now", now] if now else []))
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["bindings"] == [{"pod": "default/spot", "node": where}]


def test_caldera_schedule_shuffle(tmp_path):
    """A running preemptable pod on rz1's node is evicted by shuffle once the window has closed."""
    running = CLUSTER.replace("  schedulerName: volcano\n", "  schedulerName: volcano\n  nodeName: rev\n").replace(
        "status: {phase: Pending}", "status: {phase: Running}")
    (tmp_path / "cluster.yaml").write_text(running)
    conf_text = CONF.replace('actions: "allocate"', 'actions: "allocate, shuffle"')
    (tmp_path / "volcano-scheduler.conf").write_text(conf_text)
    args = ["schedule", "-f", str(tmp_path / "cluster.yaml"), "--config", str(tmp_path / "volcano-scheduler.conf"),
            "-o", "json", "--now"]
    r = CliRunner().invoke(cli, args + ["2026-01-01T12:00:00Z"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["evictions"] == []
    r = CliRunner().invoke(cli, args + ["2026-01-01T21:00:01Z"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["evictions"] == [{"pod": "default/spot", "node": "rev", "reason": "shuffle"}]


@pytest.mark.parametrize("bad", ["noon", "2026-01-01T12:00:00", "2026-01-01"])
def test_caldera_schedule_bad_now(tmp_path, bad):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"), "--config",
                                 str(tmp_path / "volcano-scheduler.conf"), "--now", bad])
    assert r.exit_code == 2
    assert "--now" in r.stderr and "RFC 3339" in r.stderr


def test_caldera_schedule_now_needs_a_volcano_conf(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"), "--now", "2026-01-01T12:00:00Z"])
    assert r.exit_code == 2
    assert "--now applies only to a Volcano session" in r.stderr


def test_caldera_schedule_bad_window_is_a_config_error(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF.replace("10:00-21:00", "10:00-21"))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"), "--config",
                                 str(tmp_path / "volcano-scheduler.conf")])
    assert r.exit_code == 2, r.stderr
    assert "tdm.arguments.tdm.revocable-zone.rz1" in r.stderr and "Traceback" not in r.stderr


def test_now_is_utc():
    assert datetime(2026, 1, 1, 12, tzinfo=UTC).timestamp() == NOW
