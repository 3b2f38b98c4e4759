"""The bulk (vectorised) versions of per-node code on the failure and preemption paths must agree
with the per-node reference: NodeResourcesFit.filter_statuses vs filter_status, the per-priority
request sums of defaultpreemption/usage.py vs sums over the table's pods, and the FailedScheduling
message when nodes share one Status object."""
from __future__ import annotations

import random

import numpy as np
import pytest

from caldera.framework.interface import CycleState
from caldera.framework.runtime import Diagnosis
from caldera.framework.status import Status
from caldera.plugins.defaultpreemption.usage import PriorityUsage, priority_usage

from ..builders import make_node, make_pod, make_scheduler, make_table

EXT = "example.com/gpu"


def _random_table(rng: random.Random, n_nodes: int, n_pods: int):
    nodes = [make_node(f"n{k}", cpu=rng.choice(["1", "2", "4"]), memory=rng.choice(["1Gi", "4Gi"]),
                       pods=str(rng.choice([1, 2, 5, 110])), extra={EXT: str(rng.choice([0, 1, 2]))})
             for k in range(n_nodes)]
    table = make_table(nodes)
    for j in range(n_pods):
        p = make_pod(f"r{j}", cpu=f"{rng.choice([100, 500, 900])}m", memory=f"{rng.choice([128, 512])}Mi",
                     priority=rng.choice([-5, 0, 10, 100]))
        i = rng.randrange(n_nodes)
        if table.req[i, 3] < table.alloc[i, 3]:
            table.add_pod(p, i)
    return table


@pytest.mark.parametrize("seed", range(25))
def test_fit_filter_statuses_match_filter_status(seed):
    rng = random.Random(seed)
    table = _random_table(rng, rng.randint(1, 30), rng.randint(0, 60))
    sched = make_scheduler(table, {"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"]})
    fit = sched.default_framework.plugin("NodeResourcesFit")
    for t in range(4):
        req = {"cpu": f"{rng.choice([100, 1500, 3000, 9000])}m", "memory": rng.choice(["256Mi", "8Gi"])}
        if rng.random() < 0.5:
            req[EXT] = str(rng.choice([1, 3]))
        pod = make_pod(f"p{seed}-{t}", requests=req)
        state = CycleState()
        fit.pre_filter(state, pod)
        idx = np.array(sorted(rng.sample(range(len(table)), rng.randint(1, len(table)))), dtype=np.intp)
        bulk = fit.filter_statuses(state, pod, table, idx)
        one = [fit.filter_status(state, pod, table, i) for i in idx.tolist()]
        assert [(s.code, s.reasons) for s in bulk] == [(s.code, s.reasons) for s in one]


def test_fit_filter_statuses_share_status_objects():
    table = make_table([make_node(f"n{k}", cpu="1") for k in range(50)])
    sched = make_scheduler(table, {"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"]})
    fit = sched.default_framework.plugin("NodeResourcesFit")
    pod = make_pod("big", cpu="2")
    state = CycleState()
    fit.pre_filter(state, pod)
    sts = fit.filter_statuses(state, pod, table, np.arange(50, dtype=np.intp))
    assert len({id(s) for s in sts}) == 1
    assert sts[0] == Status.unresolvable("Insufficient cpu")


def test_diagnosis_message_counts_shared_statuses_per_node():
    shared = Status.unschedulable("Insufficient cpu", "Insufficient memory")
    other = Status.unresolvable("node(s) had untolerated taint")
    d = Diagnosis(num_all_nodes=6, node_status={0: shared, 1: shared, 2: shared, 3: other, 4: shared})
    copies = Diagnosis(num_all_nodes=6, node_status={i: Status(s.code, *s.reasons) for i, s in d.node_status.items()})
    want = ("0/6 nodes are available: 1 node(s) had untolerated taint, 4 Insufficient cpu, "
            "4 Insufficient memory.")
    assert d.message() == copies.message() == want


def _direct_lower(table, prio):
    out = np.zeros((len(table.res_names), len(table)), dtype=np.int64)
    for i, ps in enumerate(table.pods):
        for p in ps.values():
            if p.priority < prio:
                cols, vals = table.pod_vector(p)
                out[cols, i] += vals
    return out


@pytest.mark.parametrize("seed", range(10))
def test_priority_usage_follows_pod_changes(seed):
    rng = random.Random(seed)
    table = _random_table(rng, 8, 20)
    usage = priority_usage(table)
    for step in range(40):
        if table.pod_node and rng.random() < 0.4:
            table.remove_pod(rng.choice(sorted(table.pod_node)))
        else:
            p = make_pod(f"s{seed}-{step}", cpu="200m", priority=rng.choice([-5, 0, 10, 100, 7]))
            table.add_pod(p, rng.randrange(len(table)))
        if step % 7 == 0:
            priority_usage(table)            # catch up part of the way
        if step % 9 == 4:                    # node changes: update in place, append, remove
            kind = rng.choice(["update", "add", "remove"])
            if kind == "update":
                table.update_node(make_node(table.nodes[rng.randrange(len(table))].name, cpu="8"))
            elif kind == "add":
                table.add_node(make_node(f"extra{seed}-{step}"))
            elif len(table) > 2:
                table.remove_node(table.nodes[rng.randrange(len(table))].name)
    assert priority_usage(table) is usage
    fresh = PriorityUsage(table).sync()
    for prio in (-10, 0, 5, 10, 11, 1000):
        want = _direct_lower(table, prio)
        assert np.array_equal(usage.lower(prio), want)
        assert np.array_equal(fresh.lower(prio), want)
