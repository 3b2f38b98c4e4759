"""overcommit plugin: port of volcano pkg/scheduler/plugins/overcommit/overcommit_test.go, plus
hand-computed checks of idle (total * factor - used) and the inqueue reservation."""
from __future__ import annotations

import pytest

from caldera.batch.plugins.base import PERMIT, REJECT
from caldera.errors import ConfigError

from .helpers import node, open_session, outcome, pod, podgroup, queue, rl, run

GI = 1024 ** 3


def conf_text(args: dict | None = None, actions: str = "enqueue") -> str:
    lines = [f'actions: "{actions}"', "tiers:", "- plugins:", "  - name: overcommit", "    enableJobEnqueued: true"]
    if args:
        lines.append("    arguments:")
        lines += [f"      {k}: {v!r}" if isinstance(v, str) else f"      {k}: {v}" for k, v in args.items()]
    return "\n".join(lines) + "\n"


NODES = [node("n1", {"cpu": "2", "memory": "4Gi"}), node("n2", {"cpu": "4", "memory": "16Gi"})]
HUGE, NORMAL, SMALL = rl("20000m", "20G"), rl("2000m", "2G"), rl("200m", "0.5G")
PG1 = podgroup("test-namespace", "pg1", 2, "c1", "Inqueue", NORMAL)
PG2 = podgroup("test-namespace", "pg2", 2, "c1", "Inqueue", HUGE)
PG3 = podgroup("test-namespace", "pg2", 2, "c1", "Inqueue")          # named pg2 in the Go test too
QUEUE1 = queue("c1", 1)
QUEUE2 = queue("c1", 1, capability=SMALL)


@pytest.mark.parametrize("name,pg,q,factor,expected", [
    ("overCommitFactor is more than 0", PG1, QUEUE1, 1.2, True),
    ("overCommitFactor is less than 0", PG1, QUEUE1, 0.8, True),
    ("when the required resources of pg are too large", PG2, QUEUE1, 1.2, False),
    ("when pg does not fill MinResources", PG3, QUEUE2, 1.2, True),
])
def test_overcommit_plugin(name, pg, q, factor, expected):
    """As the Go test: for every job, JobEnqueued, then JobEnqueueable."""
    ssn = open_session(NODES + [pg, q], conf_text({"overcommit-factor": factor}))
    assert ssn.jobs
    for job in ssn.jobs.values():
        ssn.job_enqueued(job)
        assert ssn.job_enqueueable(job) is expected, name


# ---- hand-computed semantics (not from the Go test) -------------------------------------------
def test_factor_below_one_falls_back_to_default():
    ssn = open_session(NODES + [PG1, QUEUE1], conf_text({"overcommit-factor": 0.8}))
    p = ssn.plugins["overcommit"]
    assert p.factor == 1.2
    assert p.idle.cpu == pytest.approx(6000 * 1.2) and p.idle.memory == pytest.approx(20 * GI * 1.2)


@pytest.mark.parametrize("factor,want", [(None, 1.2), (1, 1.0), (2.5, 2.5), ("1.5", 1.5)])
def test_factor_argument(factor, want):
    args = None if factor is None else {"overcommit-factor": factor}
    ssn = open_session(NODES + [PG1, QUEUE1], conf_text(args))
    assert ssn.plugins["overcommit"].factor == want


def test_bad_factor_is_a_config_error():
    with pytest.raises(ConfigError, match="overcommit-factor"):
        open_session(NODES + [PG1, QUEUE1], conf_text({"overcommit-factor": "lots"}))


def test_idle_subtracts_used_and_inqueue_counts_running_gangs():
    """Used by pods on the nodes (of any PodGroup, or none) comes off total*factor. A Running
    PodGroup whose gang is complete reserves the part of minResources its tasks do not cover;
    an Inqueue one its whole minResources; a Pending one nothing."""
    docs = NODES + [
        queue("c1"),
        podgroup("ns", "run", 1, "c1", "Running", rl("3", "1Gi")),
        pod("ns", "run-0", "n2", "Running", rl("1", "2Gi"), "run"),
        podgroup("ns", "inq", 1, "c1", "Inqueue", rl("1", "1Gi")),
        podgroup("ns", "pend", 1, "c1", "Pending", rl("1", "1Gi")),
        pod("other", "loose", "n1", "Running", rl("500m", "1Gi"), scheduler="default-scheduler"),
    ]
    ssn = open_session(docs, conf_text({"overcommit-factor": 1.0}))
    p = ssn.plugins["overcommit"]
    assert p.idle.cpu == pytest.approx(6000 - 1000 - 500)
    assert p.idle.memory == pytest.approx(20 * GI - 3 * GI)
    assert p.inqueue.cpu == pytest.approx(2000 + 1000)          # run: 3 - 1; inq: 1
    assert p.inqueue.memory == pytest.approx(GI)                 # run: 1Gi - 2Gi < 0; inq: 1Gi
    # pend: 3 + 1 = 4 CPUs reserved, 1 asked, 4.5 idle -> admitted
    assert p._enqueueable(ssn.jobs["ns/pend"]) == PERMIT
    # only the dimensions minResources names are compared
    big_mem = podgroup("ns", "bigmem", 1, "c1", "Pending", {"memory": "16Gi"})
    ssn = open_session(docs + [big_mem], conf_text({"overcommit-factor": 1.0}))
    p = ssn.plugins["overcommit"]
    assert p._enqueueable(ssn.jobs["ns/bigmem"]) == PERMIT      # 1Gi + 16Gi <= 17Gi
    p._enqueued(ssn.jobs["ns/bigmem"])
    assert p._enqueueable(ssn.jobs["ns/pend"]) == REJECT        # memory now 18Gi > 17Gi
    assert p.events[-1] == ("ns/pend", "Unschedulable", "resource in cluster is overused: overused memory")


@pytest.mark.parametrize("factor,admitted", [
    (1.0, ["ns/a", "ns/b", "ns/c"]),          # 6 CPUs: three jobs of 2
    (1.2, ["ns/a", "ns/b", "ns/c"]),          # 7.2 CPUs: a fourth would need 8
    (1.5, ["ns/a", "ns/b", "ns/c", "ns/d"]),  # 9 CPUs
])
def test_enqueue_action_admits_until_overcommitted_idle_is_used(factor, admitted):
    docs = NODES + [queue("c1")]
    for i, name in enumerate("abcd"):
        docs.append(podgroup("ns", name, 1, "c1", "Pending", rl("2", "1Gi"),
                             creation=f"2024-01-01T00:00:0{i}Z"))
    res = run(docs, conf_text({"overcommit-factor": factor}))
    phases = outcome(res)["phase"]
    assert sorted(k for k, v in phases.items() if v == "Inqueue") == admitted
    assert all(v == "Pending" for k, v in phases.items() if k not in admitted)


def test_session_close_clears_state():
    from .helpers import close_session
    ssn = open_session(NODES + [PG1, QUEUE1], conf_text())
    p = ssn.plugins["overcommit"]
    close_session(ssn)
    assert p.inqueue.is_empty() and p.idle.is_empty()
