"""`caldera simulate` with numa-aware: the Numatopologies of the --cluster files reach every
session, and the CPUs a pod was given come back to its node when it leaves (free CPUs = the
Numatopology's less those of the pods running there, as Volcano's resource exporter would rewrite
it). On the kept snapshot and the rebuilt one alike. Small cases, checked by hand."""
from __future__ import annotations

import csv
import dataclasses
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.errors import InputError
from caldera.sim.traces import read_cluster, read_workload
from caldera.sim.volcano import VolcanoSim

ROOT = Path(__file__).resolve().parents[2]
CALDERA = str(Path(sys.executable).parent / "caldera")
CONF = (ROOT / "examples" / "batch" / "numa" / "volcano-scheduler.conf").read_text()
NO_NUMA_CONF = "\n".join(line for line in CONF.splitlines()
                         if "numa-aware" not in line and "weight: 10" not in line and line.strip() != "arguments:")


def _conf(text: str):
    return parse_volcano_conf(yaml.safe_load(text), "test.conf", ACTIONS, PLUGINS)


def numatopology(name: str, allocatable: str = "0-7", policy: str = "single-numa-node") -> str:
    """8 CPUs on 2 NUMA nodes (0-3 on NUMA 0 / socket 0, 4-7 on NUMA 1 / socket 1), two per core."""
    detail = "\n".join(f'    "{c}": {{numa: {c // 4}, socket: {c // 4}, core: {c // 2}}}' for c in range(8))
    return f"""apiVersion: nodeinfo.volcano.sh/v1alpha1
kind: Numatopology
metadata: {{name: {name}}}
spec:
  policies: {{CPUManagerPolicy: static, TopologyManagerPolicy: {policy}}}
  numares:
    cpu: {{allocatable: "{allocatable}", capacity: 8}}
  cpuDetail:
{detail}
"""


def node(name: str, cpu: int = 12) -> str:
    return f"""apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status:
  allocatable: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}
  capacity: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}
"""


def pod(name: str, cpu: int, arrival: float, duration: float | None, policy: str | None = "single-numa-node",
        guaranteed: bool = True) -> str:
    ann = {"simulation.caldera/arrival": str(arrival)}
    if duration is not None:
        ann["simulation.caldera/duration"] = str(duration)
    if policy:
        ann["volcano.sh/numa-topology-policy"] = policy
    res = {"limits": {"cpu": str(cpu), "memory": "1Gi"}} if guaranteed else {"requests": {"cpu": str(cpu)}}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": "t", "annotations": ann},
                           "spec": {"schedulerName": "volcano",
                                    "containers": [{"name": "c", "image": "x", "resources": res}]}})


def _run(tmp_path: Path, cluster: str, workload: str, conf: str, rebuild: bool):
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "work.yaml").write_text(workload)
    c = read_cluster([str(tmp_path / "cluster.yaml")])
    w = read_workload([str(tmp_path / "work.yaml")], priority_classes=c.priority_classes)
    sim = VolcanoSim("v", c, w, _conf(conf), rebuild_every_tick=rebuild, until=1000.0)
    r = sim.run()
    return {x.pod: x for x in r.records}, sim


def _both(tmp_path: Path, cluster: str, workload: str, conf: str = CONF):
    """The kept-snapshot replay, after checking that the rebuilt one decides the same."""
    ref, _ = _run(tmp_path, cluster, workload, conf, rebuild=True)
    got, sim = _run(tmp_path, cluster, workload, conf, rebuild=False)
    assert [dataclasses.astuple(x) for x in got.values()] == [dataclasses.astuple(x) for x in ref.values()]
    return got, sim


# ---- two pods come and go, a third fits only once one has gone ------------------------------------
# n1: 12 CPUs for kube's resources, but a Numatopology of 8 CPUs on 2 NUMA nodes of 4 (single-numa-node).
# a (3 CPUs, ends at 50) takes NUMA 0: a whole core (0-1), then CPU 2; b (3 CPUs, ends at 100) finds
# one CPU on NUMA 0 and takes NUMA 1 (4-6). c (3 CPUs, arrives at 10) has 6 CPUs by resources but one
# free CPU per NUMA node: "container c cannot be assigned by numa" until a leaves at 50 and gives
# back 0-2, which c then takes (starting at 50, ending at 50 + 30).
TRIO = "---\n".join([pod("a", 3, 0, 50), pod("b", 3, 0, 100), pod("c", 3, 10, 30)])


def test_a_pod_fits_its_numa_node_only_after_another_leaves(tmp_path):
    got, _ = _both(tmp_path, node("n1") + "---\n" + numatopology("n1"), TRIO)
    assert [(k, r.start, r.end, r.node, r.cpuset) for k, r in got.items()] == [
        ("t/a", 0, 50, "n1", "0-2"), ("t/b", 0, 100, "n1", "4-6"), ("t/c", 50, 80, "n1", "0-2")]


def test_without_numa_aware_the_third_pod_starts_at_once(tmp_path):
    """The control: by kube's resources alone (12 CPUs) c fits at its arrival; no CPUs are recorded."""
    got, _ = _both(tmp_path, node("n1") + "---\n" + numatopology("n1"), TRIO, NO_NUMA_CONF)
    assert [(k, r.start, r.cpuset) for k, r in got.items()] == [("t/a", 0, ""), ("t/b", 0, ""), ("t/c", 10, "")]


def test_the_numatopology_written_at_t0_is_what_is_free_then(tmp_path):
    """CPUs 0-1 (NUMA 0) pinned at t = 0 by something the replay does not know: a takes NUMA 1 (a
    whole core 4-5, then 6); b cannot fit 3 CPUs on either NUMA node until a leaves (50)."""
    got, _ = _both(tmp_path, node("n1") + "---\n" + numatopology("n1", "2-7"),
                   "---\n".join([pod("a", 3, 0, 50), pod("b", 3, 5, 10)]))
    assert [(k, r.start, r.end, r.cpuset) for k, r in got.items()] == [("t/a", 0, 50, "4-6"), ("t/b", 50, 60, "4-6")]


def test_only_nodes_with_a_numatopology_take_policy_pods(tmp_path):
    """n0 has no Numatopology ("numa info is empty"): a policy pod waits for n1 even though n0 is free."""
    cluster = "---\n".join([node("n0"), node("n1"), numatopology("n1")])
    got, _ = _both(tmp_path, cluster, "---\n".join([pod("a", 4, 0, 20), pod("b", 4, 0, 20), pod("c", 4, 0, 20),
                                                    pod("d", 4, 0, 20, policy=None)]))
    placed = {k: (r.start, r.node) for k, r in got.items()}
    assert placed["t/a"] == (0, "n1") and placed["t/b"] == (0, "n1")
    assert placed["t/c"] == (20, "n1")          # after a and b gave back their NUMA nodes
    # d has no policy: a node without a Numatopology passes it
    assert placed["t/d"][1] == "n0" and placed["t/d"][0] == 0


def test_a_numatopology_of_an_unknown_node_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as e:
        _run(tmp_path, node("n1") + "---\n" + numatopology("ghost"), pod("a", 2, 0, 5), CONF, rebuild=False)
    assert "Numatopology ghost" in str(e.value) and "not in the input" in str(e.value)


def test_a_bad_numatopology_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as e:
        _run(tmp_path, node("n1") + "---\n" + numatopology("n1", "7-0"), pod("a", 2, 0, 5), CONF, rebuild=False)
    assert "cluster.yaml" in str(e.value) and "Numatopology n1" in str(e.value) and "reversed" in str(e.value)


def test_kept_and_rebuilt_agree_on_a_random_numa_trace(tmp_path):
    """Arrivals, completions, pods with and without a policy, Burstable ones, three nodes with
    different free CPUs (one without a Numatopology): the kept snapshot decides what the rebuilt one
    does, record for record (cpusets included)."""
    rng = random.Random(7)
    cluster = "---\n".join([node("n0", 16), node("n1", 16), node("n2", 16), numatopology("n0"),
                            numatopology("n1", "1-7", "best-effort"), numatopology("n1b", "0-7")])
    cluster = cluster.replace("name: n1b", "name: n2")
    pods = []
    for k in range(40):
        policy = rng.choice(("single-numa-node", "single-numa-node", "best-effort", None))
        duration = rng.choice((None, rng.randint(5, 60)))
        pods.append(pod(f"p{k}", rng.randint(1, 5), round(rng.uniform(0, 100), 1), duration, policy,
                        guaranteed=rng.random() < 0.85))
    got, _ = _both(tmp_path, cluster, "---\n".join(pods))
    assert sum(1 for r in got.values() if r.cpuset) >= 10
    assert any(r.start is not None and r.start > 0 and r.cpuset for r in got.values())


def test_cli_pods_csv_has_the_cpuset_column(tmp_path):
    (tmp_path / "cluster.yaml").write_text(node("n1") + "---\n" + numatopology("n1"))
    (tmp_path / "work.yaml").write_text(TRIO)
    (tmp_path / "numa.conf").write_text(CONF)
    out = tmp_path / "out"
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload",
                        str(tmp_path / "work.yaml"), "--config", str(tmp_path / "numa.conf"), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (csv_path,) = out.glob("**/pods.csv")
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    assert [(r["pod"], r["start"], r["end"], r["cpuset"]) for r in rows] == [
        ("t/a", "0", "50", "0-2"), ("t/b", "0", "100", "4-6"), ("t/c", "50", "80", "0-2")]
