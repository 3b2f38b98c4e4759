"""sla plugin: port of volcano pkg/scheduler/plugins/sla/sla_test.go (TestSlaPlugin), Go's
time.ParseDuration cases (time_test.go parseDurationTests, the ones that apply), session-level
checks of the three hooks and hand-checked `caldera schedule` runs.

Hand checks (times are 2026-01-01, UTC; the session's now is the newest creationTimestamp):

ORDER: one 4-CPU node; PodGroups `old` (priority class low = 10, created 08:00) and `young`
(high = 1000, created 10:00), Inqueue, one 4-CPU pod each; action allocate; now = 10:00.
- sla (sla-waiting-time 1h) before priority in tier 1: sla's JobOrder decides first; deadlines
  08:00 + 1h = 09:00 < 10:00 + 1h = 11:00, so `old` is allocated first and takes the node;
  `young` is unschedulable.
- priority before sla: priority decides (1000 > 10): `young` gets the node.
- young annotated `sla-waiting-time: 3h`, old `1h` (sla first): 13:00 vs 09:00: old first.
- old annotated `volcano.sh/sla-waiting-time: 3h` (read before `sla-waiting-time`), young 1h
  (global): 11:00 = 11:00, sla has no opinion, priority decides: young.
- no global time, only young annotated `30m`: a job with a waiting time goes before one without:
  young, though sla is first and old is older.

ENQUEUE: one 8-CPU node; queue `q` with capability cpu 4; Volcano Jobs `big` (1 x 6 CPU,
minAvailable 1, created 08:00) and `fresh` (1 x 1 CPU, created 10:00), both Pending; actions
enqueue, allocate; now = 10:00.
- sla (1h) in tier 1, proportion in tier 2: for `big` (first: deadline 09:00 < 11:00) sla votes
  Permit (waited 2h >= 1h) and nothing in tier 1 rejects, so the vote ends in tier 1 and `big` is
  Inqueue although 6 CPU > the queue's capability 4 (proportion is never asked). Its minResources
  (cpu 6) are then booked as the queue's inqueue (JobEnqueued): `fresh` (waited 0 < 1h: sla
  abstains, proportion decides) needs 1 + 6 = 7 > 4 and is rejected with "queue resource quota
  insufficient: insufficient cpu" -- the queue's room is reserved for the job past its SLA.
  Allocate cannot place `big` (proportion's Allocatable: 6 CPU > the queue's deserved), so nothing
  binds.
- sla in tier 2 beside proportion, or no sla, or sla-waiting-time 3h (waited 2h < 3h): `big` is
  rejected by proportion (6 > 4) and stays Pending with that event; `fresh` (1 <= 4) is enqueued
  and bound to n1.
"""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from caldera.api.goduration import DurationError, parse_go_duration
from caldera.batch.conf import FLAGS
from caldera.batch.plugins import argument_warnings
from caldera.batch.plugins.base import ABSTAIN, PERMIT
from caldera.batch.plugins.sla import job_waiting_time
from caldera.cli.main import cli
from caldera.errors import ConfigError

from .helpers import conf, node, open_session, pod, podgroup, priority_class, queue, rl

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
H = 3600 * 10**9


# ---- time.ParseDuration ---------------------------------------------------------------------------
@pytest.mark.parametrize("text,ns", [
    ("0", 0), ("5s", 5 * 10**9), ("30s", 30 * 10**9), ("1478s", 1478 * 10**9), ("-5s", -5 * 10**9),
    ("+5s", 5 * 10**9), ("-0", 0), ("+0", 0), ("5.0s", 5 * 10**9), ("5.6s", 5_600_000_000), ("5.s", 5 * 10**9),
    (".5s", 500_000_000), ("1.0s", 10**9), ("1.00s", 10**9), ("1.004s", 1_004_000_000), ("1.0040s", 1_004_000_000),
    ("100.00100s", 100_001_000_000), ("10ns", 10), ("11us", 11_000), ("12µs", 12_000), ("12μs", 12_000),
    ("13ms", 13_000_000), ("14s", 14 * 10**9), ("15m", 15 * 60 * 10**9), ("16h", 16 * H),
    ("3h30m", 3 * H + 30 * 60 * 10**9), ("10.5s4m", 4 * 60 * 10**9 + 10_500_000_000),
    ("-2m3.4s", -(2 * 60 * 10**9 + 3_400_000_000)), ("1h2m3s4ms5us6ns", 3_723_004_005_006),
    ("39h9m14.425s", 140_954_425_000_000), ("52763797000ns", 52_763_797_000),
    ("0.3333333333333333333h", 20 * 60 * 10**9), ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1), ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1), ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)), ("9007199254.740993ms", (1 << 53) + 1),
    ("0.100000000000000000000h", 6 * 60 * 10**9), ("0.830103483285477580700h", 49 * 60 * 10**9 + 48_372_539_827),
])
def test_parse_go_duration(text, ns):
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize("text,msg", [
    ("", 'time: invalid duration ""'), ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'), ("s", 'time: invalid duration "s"'), (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'), (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'), ("9223372036854775808ns", 'time: invalid duration'),
    ("9223372036854775.808us", "time: invalid duration"), ("9223372036854ms775us808ns", "time: invalid duration"),
    ("-9223372036854775809ns", "time: invalid duration"), ("1h 30m", 'time: unknown unit "h " in duration'),
])
def test_parse_go_duration_errors(text, msg):
    with pytest.raises(DurationError, match=msg.replace(".", r"\.").replace("+", r"\+")):
        parse_go_duration(text)


def test_job_waiting_time_annotations():
    assert job_waiting_time({}) == (None, [])
    assert job_waiting_time({"sla-waiting-time": "1h"}) == (H, [])
    assert job_waiting_time({"volcano.sh/sla-waiting-time": "2h", "sla-waiting-time": "1h"}) == (2 * H, [])
    # a bad value is skipped: the next source applies (as JobInfo.SetPodGroup does)
    ns, problems = job_waiting_time({"volcano.sh/sla-waiting-time": "2 hours", "sla-waiting-time": "1h"})
    assert ns == H and problems == ['annotation volcano.sh/sla-waiting-time: time: unknown unit " hours" in '
                                    'duration "2 hours"']
    ns, problems = job_waiting_time({"sla-waiting-time": "-1h"})
    assert ns is None and "must be positive" in problems[0]


# ---- Volcano's unit test ------------------------------------------------------------------------
def sla_only(arguments: dict) -> dict:
    return {"actions": "enqueue", "tiers": [{"plugins": [
        {**ALL_OFF, "name": "sla", "enableJobOrder": True, "enableJobEnqueued": True, "arguments": arguments}]}]}


def volcano_jobs() -> list[dict]:
    """job1: three tasks, no waiting time; job2: two tasks, WaitingTime 1h; no creationTimestamps."""
    return [podgroup("default", "job1", 3, "default", "Pending", rl("1")),
            pod("default", "job1-ps-0", req=rl("1"), group="job1"),
            pod("default", "job1-ps-1", req=rl("1"), group="job1"),
            pod("default", "job1-worker-0", req=rl("1"), group="job1"),
            podgroup("default", "job2", 2, "default", "Pending", rl("1"), annotations={"sla-waiting-time": "1h"}),
            pod("default", "job2-ps-0", req=rl("1"), group="job2"),
            pod("default", "job2-ps-1", req=rl("1"), group="job2")]


@pytest.mark.parametrize("arguments,order,enqueueable", [
    ({"sla-waiting-time": "3m"}, True, True),     # sla normal placement: 0+3m before 0+1h
    ({}, False, True),                            # none placement: job1 has no waiting time, job2 does
], ids=["sla normal placement", "none placement"])
def test_sla_plugin(arguments, order, enqueueable):
    ssn = open_session(volcano_jobs(), sla_only(arguments))
    job1, job2 = ssn.jobs["default/job1"], ssn.jobs["default/job2"]
    assert ssn.job_order_less(job1, job2) is order
    assert ssn.job_enqueueable(job1) is enqueueable


def test_sla_error_type_placement_is_a_config_error():
    # Volcano's "sla error type placement" ({"sla-waiting-time": 1}, not a string) logs the error
    # and runs without a global waiting time; Caldera refuses the conf (exit 2), as for every
    # plugin argument that does not parse
    with pytest.raises(ConfigError, match=r"sla\.arguments\.sla-waiting-time: must be a positive Go duration"):
        open_session(volcano_jobs(), sla_only({"sla-waiting-time": 1}))


@pytest.mark.parametrize("value,msg", [("1 hour", 'time: unknown unit " hour"'), ("0s", "must be a positive"),
                                       ("-5m", "must be a positive"), ("90", "missing unit")])
def test_bad_global_waiting_time(value, msg):
    with pytest.raises(ConfigError, match=msg):
        open_session(volcano_jobs(), sla_only({"sla-waiting-time": value}))


# ---- the hooks in a session ---------------------------------------------------------------------
T8, T10 = "2026-01-01T08:00:00Z", "2026-01-01T10:00:00Z"


def jobs_at(old_ann=None, young_ann=None) -> list[dict]:
    return [node("n1", rl("4", "16Gi")), priority_class("low", 10), priority_class("high", 1000),
            podgroup("batch", "old", 1, "default", "Pending", rl("4"), priority_class="low", annotations=old_ann,
                     creation=T8),
            pod("batch", "old-0", req=rl("4", "1Gi"), group="old", priorityClassName="low", creation=T8),
            podgroup("batch", "young", 1, "default", "Pending", rl("4"), priority_class="high",
                     annotations=young_ann, creation=T10),
            pod("batch", "young-0", req=rl("4", "1Gi"), group="young", priorityClassName="high", creation=T10)]


def test_now_is_the_newest_creation_timestamp_unless_given():
    ssn = open_session(jobs_at(), sla_only({"sla-waiting-time": "1h"}))
    assert ssn.now == pytest.approx(1767261600.0)          # 2026-01-01T10:00:00Z
    sla = ssn.plugins["sla"]
    old, young = ssn.jobs["batch/old"], ssn.jobs["batch/young"]
    assert (sla.permitable(old), sla.permitable(young)) == (PERMIT, ABSTAIN)    # waited 2h / 0
    ssn = open_session(jobs_at(), sla_only({"sla-waiting-time": "1h"}), now=1767261600.0 - 3600)
    sla = ssn.plugins["sla"]
    assert sla.permitable(old := ssn.jobs["batch/old"]) == PERMIT                 # waited exactly 1h
    ssn.now = 1767261600.0 - 3600 - 1e-6
    assert sla.permitable(old) == ABSTAIN                                         # 1 µs short


def test_pipelined_vote_decides_before_a_later_tier():
    """JobPipelined: sla's Permit ends the vote in its tier, before gang's Reject in tier 2; in the
    same tier gang's Reject stops it."""
    docs = jobs_at()
    past = {"actions": "allocate", "tiers": [
        {"plugins": [{**ALL_OFF, "name": "sla", "enableJobPipelined": True, "arguments": {"sla-waiting-time": "1h"}}]},
        {"plugins": [{**ALL_OFF, "name": "gang", "enableJobPipelined": True}]}]}
    ssn = open_session(docs, past)
    old, young = ssn.jobs["batch/old"], ssn.jobs["batch/young"]
    assert ssn.job_pipelined(old) is True          # sla permits (waited 2h), gang never asked
    assert ssn.job_pipelined(young) is False       # sla abstains, gang rejects (nothing pipelined)
    same = {"actions": "allocate", "tiers": [{"plugins": [
        {**ALL_OFF, "name": "sla", "enableJobPipelined": True, "arguments": {"sla-waiting-time": "1h"}},
        {**ALL_OFF, "name": "gang", "enableJobPipelined": True}]}]}
    ssn = open_session(docs, same)
    assert ssn.job_pipelined(ssn.jobs["batch/old"]) is False
    # the flag gates it: enableJobPipelined false, sla is not asked
    off = {"actions": "allocate", "tiers": [
        {"plugins": [{**ALL_OFF, "name": "sla", "arguments": {"sla-waiting-time": "1h"}}]},
        {"plugins": [{**ALL_OFF, "name": "gang", "enableJobPipelined": True}]}]}
    ssn = open_session(docs, off)
    assert ssn.job_pipelined(ssn.jobs["batch/old"]) is False


def test_no_timestamps_means_no_job_has_waited():
    ssn = open_session(volcano_jobs(), sla_only({"sla-waiting-time": "3m"}))
    assert ssn.now == 0.0
    assert ssn.plugins["sla"].permitable(ssn.jobs["default/job1"]) == ABSTAIN


def test_bad_annotation_warns_and_falls_back(tmp_path):
    docs = jobs_at(old_ann={"sla-waiting-time": "forever"})
    ssn = open_session(docs, sla_only({"sla-waiting-time": "1h"}))
    sla = ssn.plugins["sla"]
    assert sla.warnings == ['PodGroup batch/old: annotation sla-waiting-time: time: invalid duration "forever"; '
                            'ignored']
    assert sla.waiting_time(ssn.jobs["batch/old"]) == H      # the global one


# ---- caldera schedule -------------------------------------------------------------------------------
def write(tmp_path, docs: list[dict], conf_doc: dict) -> tuple[str, str]:
    m, c = tmp_path / "m.yaml", tmp_path / "volcano-scheduler.conf"
    m.write_text(yaml.safe_dump_all(docs))
    c.write_text(yaml.safe_dump(conf_doc))
    return str(m), str(c)


def schedule(tmp_path, docs, conf_doc):
    m, c = write(tmp_path, docs, conf_doc)
    r = CliRunner().invoke(cli, ["schedule", "-f", m, "--config", c, "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr, r.exception)
    return json.loads(r.stdout), r.stderr


def tiers(first: list, second: list, actions="allocate") -> dict:
    return {"actions": actions, "tiers": [{"plugins": first}, {"plugins": second}]}


SLA_1H = {"name": "sla", "arguments": {"sla-waiting-time": "1h"}}
SLA = {"name": "sla"}
PRIO, GANG = {"name": "priority"}, {"name": "gang"}
REST = [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]


def inqueue(docs):
    for d in docs:
        if d["kind"] == "PodGroup":
            d["status"]["phase"] = "Inqueue"
    return docs


@pytest.mark.parametrize("first,old_ann,young_ann,winner", [
    ([SLA_1H, PRIO, GANG], None, None, "old"),
    ([PRIO, SLA_1H, GANG], None, None, "young"),
    ([PRIO, GANG], None, None, "young"),
    ([SLA_1H, PRIO, GANG], None, {"sla-waiting-time": "3h"}, "old"),
    ([SLA_1H, PRIO, GANG], {"volcano.sh/sla-waiting-time": "3h", "sla-waiting-time": "1m"}, None, "young"),
    ([SLA, PRIO, GANG], None, {"sla-waiting-time": "30m"}, "young"),
], ids=["sla first: earlier deadline", "priority first", "no sla", "young's own 3h", "deadlines tie: priority",
        "only young has a waiting time"])
def test_schedule_job_order(tmp_path, first, old_ann, young_ann, winner):
    out, _ = schedule(tmp_path, inqueue(jobs_at(old_ann, young_ann)), tiers(first, REST))
    loser = "young" if winner == "old" else "old"
    assert out["bindings"] == [{"pod": f"batch/{winner}-0", "node": "n1"}]
    assert [u["pod"] for u in out["unschedulable"]] == [f"batch/{loser}-0"]


def vcjob(name: str, cpu: str, created: str) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "batch", "creationTimestamp": created},
            "spec": {"queue": "q", "schedulerName": "volcano", "minAvailable": 1, "tasks": [
                {"name": "worker", "replicas": 1, "template": {"spec": {"containers": [
                    {"name": "main", "image": "busybox",
                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}]}}


ENQUEUE_DOCS = [node("n1", rl("8", "16Gi")), queue("q", capability=rl("4", "16Gi")),
                vcjob("big", "6", T8), vcjob("fresh", "1", T10)]
INSUFFICIENT = [{"type": "Normal", "reason": "Unschedulable",
                 "message": "queue resource quota insufficient: insufficient cpu"}]


def test_schedule_enqueue_past_sla_over_the_queue_capability(tmp_path):
    out, _ = schedule(tmp_path, ENQUEUE_DOCS, tiers([PRIO, GANG, SLA_1H], REST, "enqueue, allocate"))
    groups = {g["name"]: g for g in out["podGroups"]}
    assert groups["batch/big"]["phase"] == "Inqueue" and "events" not in groups["batch/big"]
    assert groups["batch/fresh"]["phase"] == "Pending"
    assert groups["batch/fresh"]["events"] == INSUFFICIENT
    assert out["bindings"] == []


@pytest.mark.parametrize("conf_doc", [
    tiers([PRIO, GANG], [SLA_1H, *REST], "enqueue, allocate"),                  # sla beside proportion
    tiers([PRIO, GANG], REST, "enqueue, allocate"),                             # no sla
    tiers([PRIO, GANG, {"name": "sla", "arguments": {"sla-waiting-time": "3h"}}], REST, "enqueue, allocate"),
], ids=["same tier as proportion", "no sla", "not waited long enough"])
def test_schedule_enqueue_without_the_sla_permit(tmp_path, conf_doc):
    out, _ = schedule(tmp_path, ENQUEUE_DOCS, conf_doc)
    groups = {g["name"]: g for g in out["podGroups"]}
    assert groups["batch/big"]["phase"] == "Pending"
    assert groups["batch/big"]["events"] == INSUFFICIENT
    assert out["bindings"] == [{"pod": "batch/fresh-worker-0", "node": "n1"}]


def test_volcano_job_annotation_reaches_its_podgroup():
    job = vcjob("big", "6", T8)
    job["metadata"]["annotations"] = {"sla-waiting-time": "30m"}
    ssn = open_session([node("n1", rl("8", "16Gi")), queue("q", capability=rl("4", "16Gi")), job],
                       sla_only({"sla-waiting-time": "1h"}))
    (only,) = ssn.jobs.values()
    assert ssn.plugins["sla"].waiting_time(only) == H // 2


def test_schedule_argument_warnings(tmp_path):
    conf_doc = tiers([{"name": "sla", "arguments": {"sla-waiting-tme": "1h", "SLA-WaitingTime": "1h"}}, PRIO, GANG],
                     REST)
    out, err = schedule(tmp_path, inqueue(jobs_at(old_ann={"sla-waiting-time": "soon"})), conf_doc)
    c = str(tmp_path / "volcano-scheduler.conf")
    assert (f'caldera: warning: {c}: plugin "sla" argument "sla-waiting-tme" is not read (did you mean '
            f'"sla-waiting-time"?); ignored') in err
    assert (f'caldera: warning: {c}: plugin "sla" argument "SLA-WaitingTime" is not read (Volcano renamed it '
            f'"sla-waiting-time"); ignored') in err
    assert 'caldera: warning: PodGroup batch/old: annotation sla-waiting-time: time: invalid duration "soon"; ignored' \
        in err
    # no waiting time anywhere: sla has no opinion, priority decides
    assert out["bindings"] == [{"pod": "batch/young-0", "node": "n1"}]


def test_schedule_bad_argument_is_exit_2(tmp_path):
    m, c = write(tmp_path, inqueue(jobs_at()), tiers([{"name": "sla", "arguments": {"sla-waiting-time": "1 day"}}],
                                                    REST))
    r = CliRunner().invoke(cli, ["schedule", "-f", m, "--config", c, "-o", "json"])
    assert r.exit_code == 2
    assert 'sla.arguments.sla-waiting-time: time: unknown unit " day" in duration "1 day"' in r.stderr


def test_argument_warnings_without_a_session():
    assert argument_warnings(conf(tiers([SLA_1H], REST))) == []
