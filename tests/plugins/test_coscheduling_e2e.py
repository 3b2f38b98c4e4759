"""Coscheduling end to end: `caldera schedule` (CliRunner) on manifests with a 4-pod PodGroup of
minMember 4 (all bind when they fit, none when only 3 fit, with the messages kube-scheduler plus
Coscheduling gives), pods left waiting on Permit in the output (valid against the schema), a bad
PodGroup as a one-line input error, and `caldera simulate` waiting and timing out in virtual time."""
from __future__ import annotations

import json

import yaml

from caldera.config.decode import decode_kube_config
from caldera.plugins.registry import build_registry
from caldera.sim.kube import KubeSim
from caldera.sim.traces import read_cluster, read_workload
from tests.fuzz.harness import invoke, schema_errors, strict_json

from ..builders import node_dict, pod_dict

CONF = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
      disabled: [{name: PrioritySort}]
  pluginConfig:
  - name: Coscheduling
    args: {podGroupRejectPercentage: %d}
"""


def podgroup(min_member=4, timeout=None):
    spec = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": "ml"}, "spec": spec}


def workers(n=4, annotations=None):
    return [pod_dict(f"worker-{i}", "ml", cpu="3", labels={"scheduling.x-k8s.io/pod-group": "gang"},
                     annotations=annotations) for i in range(n)]


def write(tmp_path, nodes, objs, reject_pct=10):
    m = tmp_path / "in.json"
    m.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                             "items": [node_dict(f"node-{i}", cpu="4") for i in range(nodes)] + objs}))
    c = tmp_path / "conf.yaml"
    c.write_text(CONF % reject_pct)
    return str(m), str(c)


def schedule(tmp_path, nodes, objs, reject_pct=10):
    m, c = write(tmp_path, nodes, objs, reject_pct)
    r = invoke(["schedule", "-f", m, "--config", c, "-o", "json"], timeout=120)
    assert r.exit_code == 0, r.stderr + r.traceback
    out = strict_json(r.stdout)
    assert schema_errors(out, "kube") == []
    return out


def test_gang_of_four_binds_when_all_fit(tmp_path):
    out = schedule(tmp_path, 4, [*workers(), podgroup()])
    assert sorted(b["pod"] for b in out["bindings"]) == [f"ml/worker-{i}" for i in range(4)]
    assert len({b["node"] for b in out["bindings"]}) == 4
    assert out["unschedulable"] == [] and "waiting" not in out
    assert out["ignored"] == []          # the PodGroup is used


def test_gang_of_four_binds_none_when_three_fit(tmp_path):
    out = schedule(tmp_path, 3, [*workers(), podgroup()])
    assert out["bindings"] == []
    msgs = {u["pod"]: u["message"] for u in out["unschedulable"]}
    # the pods pop by name (same priority, same group): worker-0..2 wait on Permit, worker-3 fits
    # nowhere and Coscheduling's PostFilter rejects the group's waiting pods
    assert msgs["ml/worker-3"].startswith("0/3 nodes are available: 3 Insufficient cpu. ")
    assert msgs["ml/worker-3"].endswith(
        ", PodGroup ml/gang gets rejected due to Pod worker-3 is unschedulable even after PostFilter")
    assert "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod." \
        in msgs["ml/worker-3"]
    for i in range(3):
        assert msgs[f"ml/worker-{i}"] == "0/1 nodes are available: 1 optimistic rejection in PostFilter."


def test_pods_still_waiting_after_the_pass(tmp_path):
    """With podGroupRejectPercentage 30, one missing pod of 4 (25%) does not reject the group:
    the three assumed pods are still waiting on Permit when the pass ends."""
    out = schedule(tmp_path, 3, [*workers(), podgroup(timeout=25)], reject_pct=30)
    assert out["bindings"] == []
    assert [u["pod"] for u in out["unschedulable"]] == ["ml/worker-3"]
    assert not out["unschedulable"][0]["message"].endswith("PostFilter")
    assert [(w["pod"], w["plugins"], w["timeoutSeconds"]) for w in out["waiting"]] == \
        [(f"ml/worker-{i}", ["Coscheduling"], 25) for i in range(3)]
    r = invoke(["schedule", "-f", str(tmp_path / "in.json"), "--config", str(tmp_path / "conf.yaml")], timeout=120)
    assert r.exit_code == 0 and "waiting" in r.stdout and "(Permit: Coscheduling; timeout 25s)" in r.stdout


def test_not_enough_pods(tmp_path):
    out = schedule(tmp_path, 4, [*workers(3), podgroup()])
    # PreFilter rejects; PostFilter still runs (the default profile's, then Coscheduling's)
    for i, u in enumerate(sorted(out["unschedulable"], key=lambda u: u["pod"])):
        m = u["message"]
        assert m.startswith(f"0/4 nodes are available: pre-filter pod worker-{i} cannot find enough sibling pods, "
                            "current pods number: 3, minMember of group: 4. "), m
        assert "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling." in m
        assert m.endswith(f", PodGroup ml/gang gets rejected due to Pod worker-{i} is unschedulable even after "
                          "PostFilter")
    assert len(out["unschedulable"]) == 3 and out["bindings"] == []
    assert all("cannot find enough sibling pods, current pods number: 3, minMember of group: 4" in u["message"]
               for u in out["unschedulable"])


def test_podgroup_ignored_without_coscheduling(tmp_path):
    m, _ = write(tmp_path, 4, [*workers(), podgroup()])
    r = invoke(["schedule", "-f", m, "-o", "json"], timeout=120)
    out = strict_json(r.stdout)
    assert len(out["bindings"]) == 4
    assert [i["kind"] for i in out["ignored"]] == ["PodGroup"]


def test_bad_podgroup_is_a_one_line_input_error(tmp_path):
    m, c = write(tmp_path, 1, [podgroup(min_member=0)])
    r = invoke(["schedule", "-f", m, "--config", c, "-o", "json"], timeout=60)
    assert r.exit_code == 2
    assert "PodGroup ml/gang: spec.minMember: must be between 1 and 2147483647, got 0" in r.stderr
    assert "Traceback" not in r.stderr


def _sim(tmp_path, nodes, objs, reject_pct=10):
    _, c = write(tmp_path, nodes, objs, reject_pct)
    n = tmp_path / "nodes.json"
    n.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                             "items": [node_dict(f"node-{i}", cpu="4") for i in range(nodes)]}))
    w = tmp_path / "wl.json"
    w.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    cluster = read_cluster([str(n)])
    with open(c) as f:
        config = decode_kube_config(yaml.safe_load(f.read()), c, build_registry())
    sim = KubeSim("cos", cluster, read_workload([str(w)], priority_classes=cluster.priority_classes), config,
                  until=100)
    sim.run()
    return sim


def test_simulate_gang_binds_together(tmp_path):
    ann = {"simulation.caldera/arrival": "0", "simulation.caldera/duration": "50"}
    sim = _sim(tmp_path, 4, [*workers(annotations=ann), podgroup()])
    assert {(r.start, r.end) for r in sim.records.values()} == {(0, 50)}


def test_simulate_waiting_pods_time_out_in_virtual_time(tmp_path):
    """Three of four fit; with podGroupRejectPercentage 30 nothing rejects the waiting pods, so the
    group's 25 s timeout fires at t = 25: they are unreserved and back in the queue, none ran."""
    ann = {"simulation.caldera/arrival": "0", "simulation.caldera/duration": "50"}
    sim = _sim(tmp_path, 3, [*workers(annotations=ann), podgroup(timeout=25)], reject_pct=30)
    assert all(r.start is None for r in sim.records.values())
    # each wait ends by its timeout (every 25 s of virtual time), then the group is tried again
    # (the next first waiter activates its siblings): waits begin at t = 0, 25, 50, 75 and 100
    assert sim.records["ml/worker-0"].attempts == 5
    assert sim.scheduler.waiting_pods and all(wp.started == 100 for wp in sim.scheduler.waiting_pods)
