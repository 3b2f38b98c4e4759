"""kube's gang scheduling in `caldera schedule` (--feature-gates GenericWorkload=true,GangScheduling=true):
Workloads and spec.workloadRef from manifests, the GangScheduling plugin over one pass, and the
flag's errors in schedule / simulate / run. Plus a property: a gang is bound whole (at least
minCount of its pods) or not at all."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api.loader import load_cluster
from caldera.cli.main import cli
from caldera.config import featuregates
from caldera.config.defaults import default_config
from caldera.engine.oneshot import run_pass
from caldera.plugins.gangscheduling import GangScheduling
from caldera.plugins.registry import build_registry

GATES = "GenericWorkload=true,GangScheduling=true"


def node(name, cpu="2"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def workload(name="job", groups=(("workers", 3),), ns="default"):
    pgs = [{"name": g, "policy": {"basic": {}} if mc is None else {"gang": {"minCount": mc}}} for g, mc in groups]
    return {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns}, "spec": {"podGroups": pgs}}


def pod(name, ref=None, cpu="1", ns="default"):
    spec = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
    if ref is not None:
        spec["workloadRef"] = ref
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def gang(n, name="job", group="workers", key="", prefix="w"):
    ref = {"name": name, "podGroup": group}
    if key:
        ref["podGroupReplicaKey"] = key
    return [pod(f"{prefix}{i}", ref) for i in range(n)]


def schedule(tmp_path, docs, *args):
    p = tmp_path / "in.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(p), "-o", "json", *args])
    return r, (json.loads(r.stdout) if r.exit_code == 0 else None)


def bound(out):
    return sorted(b["pod"] for b in out["bindings"])


def test_gang_of_three_with_room_for_three_binds_all(tmp_path):
    r, out = schedule(tmp_path, [node("n1", "3"), workload(), *gang(3)], "--feature-gates", GATES)
    assert r.exit_code == 0, r.output
    assert bound(out) == ["default/w0", "default/w1", "default/w2"]
    assert out["unschedulable"] == [] and "waiting" not in out
    assert out["ignored"] == []            # the Workload is used


def test_gang_of_three_with_room_for_two_binds_none(tmp_path):
    r, out = schedule(tmp_path, [node("n1", "2"), workload(), *gang(3)], "--feature-gates", GATES)
    assert r.exit_code == 0, r.output
    assert out["bindings"] == []
    assert [(w["pod"], w["plugins"], w["timeoutSeconds"]) for w in out["waiting"]] == [
        ("default/w0", ["GangScheduling"], 300), ("default/w1", ["GangScheduling"], 300)]
    assert [u["pod"] for u in out["unschedulable"]] == ["default/w2"]
    assert out["unschedulable"][0]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_without_the_gates_the_pods_are_scheduled_one_by_one(tmp_path):
    docs = [node("n1", "2"), workload(), *gang(3)]
    r, out = schedule(tmp_path, docs)
    assert r.exit_code == 0, r.output
    assert bound(out) == ["default/w0", "default/w1"]
    assert [i["kind"] for i in out["ignored"]] == ["Workload"]
    # GenericWorkload alone: the refs are kept, but no plugin reads them
    r, out = schedule(tmp_path, docs, "--feature-gates", "GenericWorkload=true")
    assert bound(out) == ["default/w0", "default/w1"]


def test_quorum_not_met_gates_the_pods_at_pre_enqueue(tmp_path):
    _, out = schedule(tmp_path, [node("n1", "8"), workload(), *gang(2)], "--feature-gates", GATES)
    assert out["bindings"] == []
    assert out["unschedulable"] == [
        {"pod": f"default/w{i}", "message": "waiting for minCount pods from a gang to appear in scheduling queue",
         "reason": "Unschedulable"} for i in range(2)]


def test_missing_workload_and_missing_pod_group(tmp_path):
    docs = [node("n1", "8"), workload(groups=(("other", 1),)), *gang(1),
            pod("x", {"name": "nope", "podGroup": "g"})]
    _, out = schedule(tmp_path, docs, "--feature-gates", GATES)
    msgs = {u["pod"]: u["message"] for u in out["unschedulable"]}
    assert msgs == {"default/w0": 'pod group "workers" doesn\'t exist for a workload "job"',
                    "default/x": 'waiting for pods\'s workload "nope" to appear in scheduling queue'}


def test_basic_group_and_replica_keys(tmp_path):
    docs = [node("n1", "4"), workload(groups=(("workers", 2), ("driver", None))),
            *gang(2, key="a", prefix="a"), *gang(1, key="b", prefix="b"),
            pod("d", {"name": "job", "podGroup": "driver"})]
    _, out = schedule(tmp_path, docs, "--feature-gates", GATES)
    # replica a is a full gang of 2; replica b has one pod of 2 (gated); the basic pod is free
    assert bound(out) == ["default/a0", "default/a1", "default/d"]
    assert [u["pod"] for u in out["unschedulable"]] == ["default/b0"]


def test_bad_feature_gates_exit_2_with_one_line(tmp_path):
    p = tmp_path / "in.yaml"
    p.write_text(yaml.safe_dump_all([node("n1")]))
    for cmd in (["schedule", "-f", str(p)], ["simulate", "--cluster", str(p), "--workload", str(p)],
                ["run", "--config", str(p)]):
        r = CliRunner().invoke(cli, [*cmd, "--feature-gates", "GangScheduling=true"])
        assert r.exit_code == 2, (cmd, r.output)
        err = r.stderr.strip().splitlines()
        assert err[-1] == ("caldera: error: --feature-gates: GangScheduling is enabled, but depends on features "
                           "that are disabled: [GenericWorkload]; also set GenericWorkload=true"), (cmd, err)
        r = CliRunner().invoke(cli, [*cmd, "--feature-gates", "Bogus=true"])
        assert r.exit_code == 2 and "unrecognized feature gate: Bogus;" in r.stderr, (cmd, r.output)
    assert not featuregates.enabled("GenericWorkload")       # the CLI put the defaults back


# ---- property: all or nothing ---------------------------------------------------------------
@st.composite
def cases(draw):
    nodes = [node(f"n{i}", str(draw(st.integers(0, 4)))) for i in range(draw(st.integers(1, 4)))]
    docs, groups = list(nodes), []
    for g in range(draw(st.integers(1, 4))):
        mc = draw(st.integers(1, 4))
        n = draw(st.integers(max(1, mc - 1), mc + 1))
        docs.append(workload(f"job{g}", (("workers", mc),)))
        docs += [pod(f"g{g}-{i}", {"name": f"job{g}", "podGroup": "workers"}, cpu=draw(st.sampled_from(["1", "2"])))
                 for i in range(n)]
        groups.append((f"g{g}-", mc, n))
    docs += [pod(f"solo{i}", cpu="1") for i in range(draw(st.integers(0, 3)))]
    return docs, groups


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases())
def test_every_gang_is_bound_whole_or_not_at_all(tmp_path, case):
    docs, groups = case
    p = tmp_path / "in.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    with featuregates.use(featuregates.parse(GATES)):
        cluster = load_cluster([str(p)])
        reg = build_registry()
        reg["GangScheduling"] = GangScheduling.with_workloads(lambda: cluster.gang_workloads)
        res = run_pass(cluster, default_config(reg), registry=reg)
    names = [b["pod"].split("/", 1)[1] for b in res.bindings]
    for prefix, mc, n in groups:
        k = sum(1 for x in names if x.startswith(prefix))
        assert k == 0 or k >= mc, (prefix, mc, n, names)
        if n == mc:
            assert k in (0, n), (prefix, n, names)
