"""DRA in `caldera simulate` (kube configurations): ResourceClaims allocated at bind, released by
kube's resourceclaim controller (syncClaim) when their pods are gone; docs/simulate.md "DRA and
volumes"."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.config.defaults import default_config
from caldera.plugins.registry import build_registry
from caldera.sim.kube import KubeSim
from caldera.sim.summary import summarize
from caldera.sim.traces import read_cluster, read_workload

CALDERA = str(Path(sys.executable).parent / "caldera")
DRIVER = "gpu.example.com"


def node(name: str, cpu: int = 8) -> str:
    return (f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
            f"status: {{allocatable: {{cpu: '{cpu}', memory: 64Gi, pods: '110'}}}}\n")


def gpus(node_name: str, n: int) -> str:
    devs = "".join(f"\n  - {{name: gpu-{i}, attributes: {{model: {{string: T4}}}}}}" for i in range(n))
    return (f"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {node_name}-gpus}}\n"
            f"spec:\n  driver: {DRIVER}\n  pool: {{name: {node_name}, generation: 1, resourceSliceCount: 1}}\n"
            f"  nodeName: {node_name}\n  devices:{devs}\n")


GPU_CLASS = (f"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {{name: gpu}}\n"
             f"spec:\n  selectors:\n  - cel: {{expression: 'device.driver == \"{DRIVER}\"'}}\n")


def template(name: str = "one-gpu", count: int = 1) -> str:
    return (f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {{name: {name}, namespace: t}}\n"
            f"spec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n"
            f"          deviceClassName: gpu\n          count: {count}\n")


def claim(name: str, count: int = 1) -> str:
    return (f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: t}}\n"
            f"spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu\n"
            f"        count: {count}\n")


def pod(name: str, arrival: float, duration: float | None = None, *, cpu: str = "1", templates=(), claims=(),
        priority: int | None = None, grace: int = 0) -> str:
    ann = {"simulation.caldera/arrival": str(arrival)}
    if duration is not None:
        ann["simulation.caldera/duration"] = str(duration)
    rc = [{"name": f"t{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)] + \
         [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    spec: dict = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                  "terminationGracePeriodSeconds": grace}
    if rc:
        spec["resourceClaims"] = rc
    if priority is not None:
        spec["priority"] = priority
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": "t", "annotations": ann}, "spec": spec})


def run(tmp_path, cluster: list[str], workload: list[str], sim_cls=KubeSim):
    c, w = tmp_path / "cluster.yaml", tmp_path / "workload.yaml"
    c.write_text("\n---\n".join(cluster))
    w.write_text("\n---\n".join(workload))
    cl = read_cluster([str(c)])
    reg = build_registry()
    sim = sim_cls("default", cl, read_workload([str(w)], priority_classes=cl.priority_classes),
                  default_config(reg), registry=reg)
    r = sim.run()
    return {rec.pod: rec for rec in r.records}, r, sim


def test_two_pods_share_the_one_gpu_in_sequence(tmp_path):
    # One GPU on n1. a (0..10) takes it through its template claim. b arrives at 1: DynamicResources'
    # Filter finds no free device ("cannot allocate all claims") and b waits in the unschedulable
    # pool. At 10 a completes: the resourceclaim controller drops a from reservedFor, deallocates
    # the claim (a ResourceClaim update, which DynamicResources registers) and deletes it (it was
    # generated for a); b binds at 10 on gpu-0.
    recs, r, sim = run(tmp_path, [node("n1"), gpus("n1", 1), GPU_CLASS],
                       [template(), pod("a", 0, 10, templates=["one-gpu"]), pod("b", 1, 5, templates=["one-gpu"])])
    a, b = recs["t/a"], recs["t/b"]
    assert (a.start, a.end, b.start, b.end) == (0, 10, 10, 15)
    assert b.attempts == 2
    assert a.claims.endswith(f"={DRIVER}/n1/gpu-0") and a.claims.startswith("a-t0-")
    assert b.claims.endswith(f"={DRIVER}/n1/gpu-0") and b.claims.startswith("b-t0-")
    assert r.controllers == {"claims_allocated": 2, "claims_deallocated": 2, "claims_deleted": 2,
                             "volumes_bound": 0, "volumes_provisioned": 0, "volumes_released": 0,
                             "volumes_deleted": 0}
    assert sim.ctl.dra is not None and not sim.ctl.dra.objs.claims     # both generated claims are gone
    assert not sim.ctl.dra.used.any()
    assert summarize(r)["controllers"]["claims_deleted"] == 2


def test_a_second_gpu_lets_both_run_at_once(tmp_path):
    recs, _, _ = run(tmp_path, [node("n1"), gpus("n1", 2), GPU_CLASS],
                     [template(), pod("a", 0, 10, templates=["one-gpu"]), pod("b", 1, 5, templates=["one-gpu"])])
    assert (recs["t/a"].start, recs["t/b"].start) == (0, 1)
    assert {recs["t/a"].claims.split("/")[-1], recs["t/b"].claims.split("/")[-1]} == {"gpu-0", "gpu-1"}


def test_shared_claim_is_deallocated_when_its_last_pod_is_gone(tmp_path):
    # The claim "shared" (resourceClaimName) is allocated when a binds (0) and reserved for a and
    # then b (1). a ends at 10: the claim only loses a from reservedFor, b still holds it. b ends at
    # 20: no consumer left, the claim is deallocated (not deleted: no pod owns it) and c, whose
    # template claim wanted the one GPU since 2, binds at 20.
    recs, r, sim = run(tmp_path, [node("n1"), gpus("n1", 1), GPU_CLASS],
                       [claim("shared"), template(), pod("a", 0, 10, claims=["shared"]),
                        pod("b", 1, 19, claims=["shared"]), pod("c", 2, 5, templates=["one-gpu"])])
    assert (recs["t/a"].start, recs["t/b"].start, recs["t/c"].start) == (0, 1, 20)
    assert recs["t/a"].claims == recs["t/b"].claims == f"shared={DRIVER}/n1/gpu-0"
    shared = sim.ctl.dra.objs.claims["t/shared"]
    assert shared.allocation is None and shared.reserved_for == []
    assert r.controllers["claims_allocated"] == 2          # shared (once) and c's
    assert r.controllers["claims_deallocated"] == 2 and r.controllers["claims_deleted"] == 1


def test_shared_claim_keeps_its_node(tmp_path):
    # a (2 CPU) binds at 0 and allocates "shared" on its node's GPU, filling that node's CPU. b
    # (1 CPU) uses "shared" too: the claim is allocated, so only a's node is possible (Filter:
    # "resourceclaim not available on the node" elsewhere) and that node is full: b waits, though
    # the other node is empty. At 10 a ends, the claim is deallocated, and b binds (allocating again).
    recs, r, _ = run(tmp_path, [node("n1", cpu=2), gpus("n1", 1), node("n2", cpu=2), gpus("n2", 1), GPU_CLASS],
                     [claim("shared"), pod("a", 0, 10, cpu="2", claims=["shared"]),
                      pod("b", 1, 5, cpu="1", claims=["shared"])])
    a, b = recs["t/a"], recs["t/b"]
    assert a.start == 0 and a.claims == f"shared={DRIVER}/{a.node}/gpu-0"
    assert b.start == 10 and b.claims == f"shared={DRIVER}/{b.node}/gpu-0"
    assert r.controllers["claims_allocated"] == 2 and r.controllers["claims_deallocated"] == 2


def test_preemption_victim_gives_its_devices_back(tmp_path):
    # n1: 3 CPU, 1 GPU. low (2 CPU + the GPU, priority 0, grace 3) runs from 0. high (2 CPU,
    # priority 100) arrives at 5 and preempts low; low terminates until 8, then is deleted: its
    # claim is deallocated and deleted. gpu (1 CPU + a GPU claim, arriving at 6) binds at 8 with
    # gpu-0; high binds at 8 too; low, resubmitted at 8, no longer fits (CPU).
    recs, r, _ = run(tmp_path, [node("n1", cpu=3), gpus("n1", 1), GPU_CLASS],
                     [template(), pod("low", 0, cpu="2", templates=["one-gpu"], priority=0, grace=3),
                      pod("high", 5, cpu="2", priority=100), pod("gpu", 6, 50, cpu="1", templates=["one-gpu"])])
    assert recs["t/low"].evictions == 1 and recs["t/low"].start is not None
    assert recs["t/high"].start == 8
    assert recs["t/gpu"].start == 8 and recs["t/gpu"].claims.endswith("/n1/gpu-0")
    assert recs["t/low"].outcome == "pending"
    # low's claim at 8, gpu's when it completes at 58 (low, resubmitted, still does not fit then)
    assert r.controllers["claims_deallocated"] == 2 and r.controllers["claims_deleted"] == 2
    assert recs["t/gpu"].end == 58


def test_pods_csv_and_summary_carry_claims(tmp_path):
    (tmp_path / "cluster.yaml").write_text("\n---\n".join([node("n1"), gpus("n1", 1), GPU_CLASS]))
    (tmp_path / "workload.yaml").write_text("\n---\n".join(
        [template(), pod("a", 0, 10, templates=["one-gpu"]), pod("b", 1, 5, templates=["one-gpu"]), pod("c", 2, 1)]))
    out = tmp_path / "out"
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload",
                        str(tmp_path / "workload.yaml"), "--out", str(out), "--jobs", "1"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "ResourceClaimTemplate" not in p.stderr and "ResourceSlice" not in p.stderr   # read, not skipped
    with open(out / "default" / "pods.csv") as f:
        rows = {r["pod"]: r for r in csv.DictReader(f)}
    assert rows["t/b"]["start"] == "10" and rows["t/b"]["claims"].endswith(f"={DRIVER}/n1/gpu-0")
    assert rows["t/c"]["claims"] == ""
    s = json.loads((out / "default" / "summary.json").read_text())
    assert s["controllers"]["claims_allocated"] == 2


def test_bad_dra_object_in_the_workload_is_a_one_line_error(tmp_path):
    (tmp_path / "cluster.yaml").write_text(node("n1"))
    bad = claim("x").replace("deviceClassName: gpu", "deviceClassName: gpu\n        allocationMode: Some")
    (tmp_path / "workload.yaml").write_text(bad)
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload",
                        str(tmp_path / "workload.yaml"), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert "workload.yaml" in line and "ResourceClaim t/x" in line and "must be ExactCount or All" in line


# ---- property: no device is ever allocated twice --------------------------------------------------
class CheckedSim(KubeSim):
    """Checks, at every instant of the run, that the allocated claims hold disjoint devices and that
    the allocator's `used` column is exactly their union."""

    def _sample(self) -> None:
        super()._sample()
        dra = self.ctl.dra
        assert dra is not None
        held: dict[tuple[str, str, str], str] = {}
        for c in dra.objs.claims.values():
            for d in c.allocation or []:
                k = (d.driver, d.pool, d.device)
                assert k not in held, f"t={self.now}: {k} in {held[k]} and {c.key}"
                held[k] = c.key
        used = {k for k, j in dra.index.items() if dra.used[j]}
        assert used == set(held), f"t={self.now}: used {sorted(used)} != allocated {sorted(held)}"
        for key, pod in self.live.items():       # a running pod's claims are allocated and reserved for it
            for c in self.ctl.claims_of(pod):
                assert c.allocation is not None and key in c.reserved_for


pods_strategy = st.lists(st.tuples(st.integers(0, 30), st.one_of(st.none(), st.integers(1, 20)),
                                   st.sampled_from(["none", "one", "two", "shared"]), st.integers(0, 2)),
                         min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pods_strategy)
def test_devices_never_double_allocated(tmp_path, spec):
    workload = [template(), template("two-gpus", 2), claim("shared")]
    for i, (arrival, duration, kind, prio) in enumerate(spec):
        kw: dict = {"templates": {"one": ["one-gpu"], "two": ["two-gpus"]}.get(kind, []),
                    "claims": ["shared"] if kind == "shared" else [], "priority": prio * 10, "grace": prio}
        workload.append(pod(f"p{i}", arrival, duration, cpu=str(1 + i % 3), **kw))
    recs, _, sim = run(tmp_path, [node("n1", 4), gpus("n1", 2), node("n2", 4), gpus("n2", 1), GPU_CLASS],
                       workload, CheckedSim)
    dra = sim.ctl.dra
    # at the end only the claims of running pods (and "shared" while one holds it) are allocated
    running = {k for k, rec in recs.items() if rec.outcome == "running"}
    for c in dra.objs.claims.values():
        assert set(c.reserved_for) <= running
        assert (c.allocation is not None) == bool(c.reserved_for)


@pytest.mark.parametrize("count", [1, 2])
def test_claim_larger_than_any_node_stays_pending(tmp_path, count):
    # two-gpus needs 2 devices on one node; n1 has one: the pod never starts, nothing is allocated
    recs, _, sim = run(tmp_path, [node("n1"), gpus("n1", 1), GPU_CLASS],
                       [template("big", count + 1), pod("a", 0, 5, templates=["big"])])
    assert recs["t/a"].start is None and recs["t/a"].claims == ""
    assert not sim.ctl.dra.used.any()
