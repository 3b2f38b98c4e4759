"""The CLI contract: output shapes, exit codes, and one-line errors for bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CALDERA = str(Path(sys.executable).parent / "caldera")

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
"""


def run(*args, stdin=None):
    return subprocess.run([CALDERA, *args], capture_output=True, text=True, input=stdin, timeout=60)


def write(tmp_path, text, name="m.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def assert_one_line_error(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    err = p.stderr.strip()
    assert "Traceback" not in p.stderr
    assert len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def test_json_shape_and_binding(tmp_path):
    pod = """---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]}
"""
    p = run("schedule", "-f", write(tmp_path, NODE + pod), "-o", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) >= {"bindings", "unschedulable", "evictions", "nominations", "podGroups"}
    assert out["bindings"] == [{"pod": "ns/p", "node": "n1"}]
    assert "explain" not in out


def test_unschedulable_message_kube_format(tmp_path):
    pod = """---
apiVersion: v1
kind: Pod
metadata: {name: big}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "3"}}}]}
"""
    p = run("schedule", "-f", write(tmp_path, NODE + pod), "-o", "json")
    assert p.returncode == 0
    u = json.loads(p.stdout)["unschedulable"]
    assert u[0]["pod"] == "default/big"
    assert u[0]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_stdin_and_list(tmp_path):
    lst = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "5"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": [{"name": "c", "image": "x"}]}}]})
    p = run("schedule", "-f", "-", "-o", "json", stdin=lst)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["bindings"] == [{"pod": "default/p", "node": "n1"}]


def test_unknown_kind_warns(tmp_path):
    svc = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n"
    p = run("schedule", "-f", write(tmp_path, NODE + svc), "-o", "json")
    assert p.returncode == 0
    assert "ignored 1 object: 1 ConfigMap (kind not used by the scheduler)" in p.stderr
    assert json.loads(p.stdout)["ignored"][0]["reason"] == "kind ConfigMap is not used by the scheduler"


@pytest.mark.parametrize("text,needles", [
    ("kind: Node\nmetadata: {name: [\n", ["m.yaml", "malformed YAML", "line"]),
    (NODE.replace('cpu: "2"', "cpu: 2x"), ["m.yaml", "Node n1", "status.allocatable.cpu", "invalid quantity"]),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
     "spec: {containers: [{name: c, resources: {requests: {memory: lots}}}]}\n",
     ["Pod p", "spec.containers[0].resources.requests.memory", "invalid quantity"]),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: high, containers: []}\n",
     ["Pod p", "spec.priority"]),
    ("- just\n- a list\n", ["m.yaml", "document 0"]),
    ("apiVersion: v1\nkind: Node\nmetadata: {}\n", ["m.yaml", "document 0", "name"]),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
     "spec:\n  containers: []\n  tolerations: [{key: k, operator: Maybe}]\n",
     ["Pod p", "spec.tolerations[0].operator"]),
])
def test_bad_input_is_one_line_exit_2(tmp_path, text, needles):
    assert_one_line_error(run("schedule", "-f", write(tmp_path, text)), *needles)


def test_missing_file():
    assert_one_line_error(run("schedule", "-f", "/nonexistent/x.yaml"), "/nonexistent/x.yaml", "no such file")


def test_explain_has_scores_and_reasons():
    p = run("schedule", "-f", str(ROOT / "examples" / "cluster"), "-o", "json", "--explain")
    assert p.returncode == 0, p.stderr
    ex = json.loads(p.stdout)["explain"]
    web = ex["shop/web-0"]
    assert web["filtered"]["node-c"] == "node(s) were unschedulable"
    assert web["filtered"]["gpu-1"] == "node(s) had untolerated taint(s)"
    for row in web["scores"].values():
        assert 0 <= row["TaintToleration"] <= 100 and "total" in row


def test_table_output_renders():
    p = run("schedule", "-f", str(ROOT / "examples" / "cluster"), "--explain")
    assert p.returncode == 0, p.stderr
    assert "shop/web-0" in p.stdout and "Explain" in p.stdout


def test_example_cluster_outcome():
    """The README's demo: what the pass decides for examples/cluster."""
    p = run("schedule", "-f", str(ROOT / "examples" / "cluster"), "-o", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert {b["pod"]: b["node"] for b in out["bindings"]} == {"shop/web-0": "node-a", "ml/trainer-0": "gpu-1"}
    assert out["nominations"] == [{"pod": "shop/api-0", "node": "node-b"}]
    assert out["evictions"] == [{"pod": "shop/cache-0", "reason": "preempted by shop/api-0 on node-b"}]
    msgs = {u["pod"]: u["message"] for u in out["unschedulable"]}
    assert msgs["shop/report-0"] == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were "
        "unschedulable, 2 Insufficient cpu. no new claims to deallocate, preemption: 0/4 nodes are available: "
        "1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling.")


def test_gated_pod_is_reported_not_scheduled(tmp_path):
    pod = """---
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: example.com/wait}]
  containers: [{name: c, image: x}]
"""
    p = run("schedule", "-f", write(tmp_path, NODE + pod), "-o", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["bindings"] == []
    assert out["unschedulable"] == [{"pod": "default/gated", "reason": "SchedulingGated",
                                     "message": "Scheduling is blocked due to non-empty scheduling gates"}]


def test_queue_order_priority_then_creation(tmp_path):
    """Two pods want the last slot: the higher priority wins, then the older one."""
    node = NODE.replace('pods: "10"', 'pods: "1"')
    pods = ""
    for name, prio, ts in (("late-low", 0, "2026-01-01T00:00:09Z"), ("early-low", 0, "2026-01-01T00:00:01Z")):
        pods += f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, creationTimestamp: "{ts}"}}
spec: {{priority: {prio}, preemptionPolicy: Never, containers: [{{name: c, image: x}}]}}
"""
    out = json.loads(run("schedule", "-f", write(tmp_path, node + pods), "-o", "json").stdout)
    assert out["bindings"] == [{"pod": "default/early-low", "node": "n1"}]
    hi = pods + """---
apiVersion: v1
kind: Pod
metadata: {name: newest-high, creationTimestamp: "2026-01-01T00:00:30Z"}
spec: {priority: 5, preemptionPolicy: Never, containers: [{name: c, image: x}]}
"""
    out = json.loads(run("schedule", "-f", write(tmp_path, node + hi), "-o", "json").stdout)
    assert out["bindings"] == [{"pod": "default/newest-high", "node": "n1"}]


PODGROUP = """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg1, namespace: team}
spec: {minMember: %s}
"""


def test_volcano_objects_without_volcano_conf_warn(tmp_path):
    f = write(tmp_path, NODE + "---\n" + PODGROUP % 2)
    p = run("schedule", "-f", f, "-o", "json")
    assert p.returncode == 0, p.stderr
    assert "ignored 1 object: 1 PodGroup (Volcano object without a volcano-scheduler.conf)" in p.stderr
    out = json.loads(p.stdout)
    assert out["podGroups"] == []
    assert out["ignored"] == [{"kind": "PodGroup", "name": "team/pg1", "source": f, "reason": (
        "Volcano objects are scheduled only with a volcano-scheduler.conf as --config (no --config was given)")}]


def test_volcano_objects_without_volcano_conf_are_validated(tmp_path):
    f = write(tmp_path, NODE + "---\n" + PODGROUP % -2)
    assert_one_line_error(run("schedule", "-f", f), "PodGroup team/pg1", "spec.minMember")
