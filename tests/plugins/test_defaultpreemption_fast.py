"""The arithmetic victim selection (defaultpreemption/fast.py) must agree with the reference path
(re-running PreFilter and Filter after every change) on candidates, victims, PDB violations and
node statuses. Random clusters with taints, unschedulable nodes, nominated pods and PDBs."""
from __future__ import annotations

import random

import pytest

from caldera.plugins.defaultpreemption.candidates import dry_run_preemption, fit_error_message
from caldera.plugins.defaultpreemption.fast import build as build_fast

from ..builders import make_node
from .defaultpreemption_helpers import build, pdb, pod

FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit")


def _cluster(rng: random.Random):
    nodes, pods = [], []
    for k in range(rng.randint(3, 12)):
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if rng.random() < 0.15 else None
        nodes.append(make_node(f"n{k}", cpu=f"{rng.choice([1, 2, 4])}", memory=f"{rng.choice([2, 4])}Gi",
                               pods=str(rng.choice([3, 5, 110])), taints=taints,
                               unschedulable=rng.random() < 0.1, labels={"zone": rng.choice("ab")}))
        for j in range(rng.randint(0, 5)):
            pods.append(pod(f"r{k}-{j}", node=f"n{k}", prio=rng.choice([-5, 0, 0, 10, 100, 1000]),
                            req={"cpu": f"{rng.choice([100, 250, 500])}m", "memory": f"{rng.choice([128, 512])}Mi"},
                            labels={"app": rng.choice(["db", "web", "batch"])},
                            start=f"2024-01-01T00:00:{rng.randint(0, 59):02d}Z" if rng.random() < 0.8 else None))
    return nodes, pods


@pytest.mark.parametrize("seed", range(60))
def test_fast_path_matches_reference(seed):
    rng = random.Random(seed)
    nodes, pods = _cluster(rng)
    pdbs = [pdb({"app": a}, allowed=rng.randint(0, 2), name=f"pdb-{a}") for a in ("db", "web") if rng.random() < 0.6]
    sched, pl = build(nodes, pods, filters=FILTERS, pdbs=pdbs)
    for j in range(rng.randint(0, 3)):   # nominated pods of various priorities
        nom = pod(f"nom{j}", prio=rng.choice([0, 100, 2000]), req={"cpu": "300m"})
        sched.nominator.add(nom, f"n{rng.randrange(len(nodes))}")
    for t in range(4):
        sel = {"zone": "a"} if rng.random() < 0.2 else None
        tol = [{"key": "dedicated", "operator": "Exists"}] if rng.random() < 0.3 else None
        preemptor = pod(f"p{t}", prio=rng.choice([0, 50, 500, 5000]), node_selector=sel, tolerations=tol,
                        req={"cpu": f"{rng.choice([200, 700, 1500, 5000])}m", "memory": "256Mi"})
        idx = list(range(len(nodes)))
        fast = build_fast(pl, preemptor, idx)
        assert fast is not None
        offset = rng.randrange(len(idx))
        num = rng.choice([1, 2, len(idx)])
        a = dry_run_preemption(pl, preemptor, idx, pdbs, offset, num, fast)
        b = dry_run_preemption(pl, preemptor, idx, pdbs, offset, num, None)
        assert [(c.name, [v.key for v in c.victims], c.num_pdb_violations) for c in a[0]] == \
               [(c.name, [v.key for v in c.victims], c.num_pdb_violations) for c in b[0]]
        if not a[0]:
            assert fit_error_message(len(nodes), a[1]) == fit_error_message(len(nodes), b[1])
            assert ({i: (s.code, s.reasons) for i, s in a[1].items()}
                    == {i: (s.code, s.reasons) for i, s in b[1].items()})


def test_fast_path_not_used_with_pod_dependent_filters():
    nodes = [make_node("n0")]
    _, pl = build(nodes, [pod("r", node="n0", prio=0, req={"cpu": "1"})],
                  filters=("NodeResourcesFit", "NodePorts"))
    ports = [{"containerPort": 80, "hostPort": 80}]
    assert build_fast(pl, pod("p", prio=10, req={"cpu": "1"}, ports=ports), [0]) is None
    assert build_fast(pl, pod("p", prio=10, req={"cpu": "1"}), [0]) is not None   # NodePorts skipped
    _, pl = build(nodes, [], filters=("TaintToleration",))
    assert build_fast(pl, pod("p", prio=10), [0]) is None                            # no NodeResourcesFit
