"""FailedScheduling messages of kube-scheduler v1.35.4 equal `caldera schedule`'s.

kube v1.35's default profile has DynamicResources (its PostFilter runs before DefaultPreemption's,
so every message carries "no new claims to deallocate, " before "preemption: "; "not found" when
a PreFilter plugin before it rejected the pod as UnschedulableAndUnresolvable). The real
kube-scheduler (scripts/control-plane build-scheduler) schedules a few unschedulable pods on a
real API server; the same objects then go through `caldera schedule` and the messages must be
equal. Skipped when kube-scheduler has not been built.
"""
from __future__ import annotations

import copy
import json
import subprocess

import pytest
import yaml

from benchmarks.live_binds import kube_scheduler_built, read_bin

from .kube import events_for, namespace, tag, wait_until

pytestmark = pytest.mark.skipif(not kube_scheduler_built(), reason="kube-scheduler not built "
                                "(scripts/control-plane build-scheduler)")


def _pod(ns, name, sched, cpu, prio_class=None, extra_spec=None):
    spec = {"schedulerName": sched, "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}
    if prio_class:
        spec["priorityClassName"] = prio_class
    spec.update(extra_spec or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _node(name, labels, taints=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "spec": {"taints": taints or []}}


def test_failed_scheduling_messages_equal_kube_scheduler(api, control_plane, tmp_path):
    from click.testing import CliRunner

    from caldera.cli.main import cli

    t = tag()
    ns = namespace(api, f"dra-msg-{t}")
    sched = f"dra-msg-{t}"
    alloc = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    nodes = [_node(f"{t}-a", {"zone": "a"}),
             _node(f"{t}-b", {"zone": "b"}, [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])]
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"low-{t}"},
                "value": 10},
               {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"high-{t}"},
                "value": 1000},
               {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"never-{t}"},
                "value": 1000, "preemptionPolicy": "Never"}]
    running = _pod(ns, "victim", sched, "1500m", f"low-{t}", {"nodeName": f"{t}-a"})
    conflict = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [f"{t}-a"]},
            {"key": "metadata.name", "operator": "In", "values": [f"{t}-b"]}]}]}}}}
    pending = [
        _pod(ns, "big", sched, "3", f"high-{t}"),                             # preemption not helpful
        _pod(ns, "selector", sched, "100m", None, {"nodeSelector": {"zone": "z"}}),
        _pod(ns, "never", sched, "1", f"never-{t}"),                          # preemptionPolicy Never
        _pod(ns, "same-prio", sched, "1", f"low-{t}"),                        # no victims
        _pod(ns, "conflict", sched, "100m", None, conflict),                  # PreFilter rejects
    ]
    for n in nodes:
        api.request("POST", "/api/v1/nodes", n)
        api.request("PATCH", f"/api/v1/nodes/{n['metadata']['name']}/status",
                    {"status": {"capacity": alloc, "allocatable": alloc,
                                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                "message": "test"}]}})
    for c in classes:
        api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", c)
    created = []
    for p in [running, *pending]:
        created.append(api.request("POST", f"/api/v1/namespaces/{ns}/pods", p)[1])

    cfg = tmp_path / "kube-scheduler.yaml"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": control_plane.admin_kubeconfig},
        "leaderElection": {"leaderElect": False}, "profiles": [{"schedulerName": sched}]}))
    log = open(tmp_path / "kube-scheduler.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([f"{read_bin()}/kube-scheduler", f"--config={cfg}", "--secure-port=0"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def messages():
            got = {}
            for p in pending:
                name = p["metadata"]["name"]
                evs = [e for e in events_for(api, ns, name) if e.get("reason") == "FailedScheduling"]
                if not evs:
                    return None
                evs.sort(key=lambda e: e.get("eventTime") or "")
                got[name] = evs[0].get("note", "")
            return got
        kube = wait_until(messages, timeout=120, interval=0.5, what="FailedScheduling events")
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()

    docs = _cluster_docs(api, ns)
    docs += classes
    for p in created:
        p = copy.deepcopy(p)
        p["metadata"].pop("managedFields", None)
        p["spec"]["schedulerName"] = "default-scheduler"
        docs.append(p)
    m = tmp_path / "m.yaml"
    m.write_text(yaml.safe_dump_all(docs))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(m), "-o", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    ours = {u["pod"].split("/")[-1]: u["message"] for u in out["unschedulable"]}
    print(json.dumps(kube, indent=1))
    assert ours == kube
    assert all("no new claims to deallocate, preemption: " in msg or msg.endswith(". not found")
               for msg in kube.values()), kube


def _cluster_docs(api, skip_ns):
    """Every node, and the bound pods outside `skip_ns`, as the API server has them (what
    kube-scheduler saw besides the test's own objects)."""
    docs = []
    for n in api.request("GET", "/api/v1/nodes")[1]["items"]:
        n["metadata"].pop("managedFields", None)
        docs.append({"apiVersion": "v1", "kind": "Node", **n})
    for p in api.request("GET", "/api/v1/pods")[1]["items"]:
        if p["metadata"]["namespace"] != skip_ns and p["spec"].get("nodeName"):
            p["metadata"].pop("managedFields", None)
            docs.append({"apiVersion": "v1", "kind": "Pod", **p})
    return docs


def _start_kube_scheduler(tmp_path, control_plane, sched):
    cfg = tmp_path / f"kube-scheduler-{sched}.yaml"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": control_plane.admin_kubeconfig},
        "leaderElection": {"leaderElect": False}, "profiles": [{"schedulerName": sched}]}))
    log = open(tmp_path / f"kube-scheduler-{sched}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([f"{read_bin()}/kube-scheduler", f"--config={cfg}", "--secure-port=0"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, log


def _stop(proc, log):
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_dra_allocation_and_messages_equal_kube_scheduler(api, control_plane, tmp_path):
    """Structured parameters: a claim for one A100 lands on the A100 node with the device kube
    allocates; a second claim for another A100 gets kube's FailedScheduling message."""
    from click.testing import CliRunner

    from caldera.cli.main import cli

    t = tag()
    ns = namespace(api, f"dra-{t}")
    sched = f"dra-{t}"
    driver = f"gpu-{t}.example.com"
    alloc = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    nodes = [_node(f"{t}-a100", {}), _node(f"{t}-t4", {})]
    dra_api = "/apis/resource.k8s.io/v1"
    objs = [
        ("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
                           "spec": {"selectors": [{"cel": {"expression":
                                    f'device.driver == "{driver}" && '
                                    f'device.attributes["{driver}"].model == "A100"'}}]}}),
    ]
    for n, model in ((f"{t}-a100", "A100"), (f"{t}-t4", "T4")):
        objs.append(("resourceslices", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{n}-gpus"},
            "spec": {"driver": driver, "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                     "nodeName": n, "devices": [{"name": "gpu-0", "attributes": {"model": {"string": model}}},
                                                {"name": "gpu-1", "attributes": {"model": {"string": model}}}]}}))
    claims = []
    for name, count in (("one", 1), ("two", 2)):
        claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                           "deviceClassName": driver, "allocationMode": "ExactCount", "count": count}}]}}})
    pods = []
    for pname, cname in (("first", "one"), ("second", "two")):
        p = _pod(ns, pname, sched, "100m", None, {"resourceClaims": [{"name": "gpu", "resourceClaimName": cname}]})
        p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        pods.append(p)
    for n in nodes:
        api.request("POST", "/api/v1/nodes", n)
        api.request("PATCH", f"/api/v1/nodes/{n['metadata']['name']}/status",
                    {"status": {"capacity": alloc, "allocatable": alloc,
                                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                "message": "test"}]}})
    for res, o in objs:
        api.request("POST", f"{dra_api}/{res}", o)
    for c in claims:
        api.request("POST", f"{dra_api}/namespaces/{ns}/resourceclaims", c)
    # "first" goes first: its claim is allocated before "second" asks for two of the A100s
    api.request("POST", f"/api/v1/namespaces/{ns}/pods", pods[0])
    proc, log = _start_kube_scheduler(tmp_path, control_plane, sched)
    try:
        wait_until(lambda: api.request("GET", f"/api/v1/namespaces/{ns}/pods/first")[1]["spec"].get("nodeName"),
                   timeout=120, interval=0.5, what="first bound")
        api.request("POST", f"/api/v1/namespaces/{ns}/pods", pods[1])

        def failed():
            evs = [e for e in events_for(api, ns, "second") if e.get("reason") == "FailedScheduling"]
            return evs[0].get("note") if evs else None
        kube_msg = wait_until(failed, timeout=120, interval=0.5, what="FailedScheduling of second")
    finally:
        _stop(proc, log)
    first = api.request("GET", f"/api/v1/namespaces/{ns}/pods/first")[1]
    one = api.request("GET", f"{dra_api}/namespaces/{ns}/resourceclaims/one")[1]
    kube_devices = [{k: r[k] for k in ("driver", "pool", "device", "request")}
                    for r in one["status"]["allocation"]["devices"]["results"]]

    docs = _cluster_docs(api, ns)
    docs += [o for _, o in objs] + claims
    for p in pods:
        p = copy.deepcopy(p)
        p["spec"]["schedulerName"] = "default-scheduler"
        docs.append(p)
    m = tmp_path / "dra.yaml"
    m.write_text(yaml.safe_dump_all(docs))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(m), "-o", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    print(kube_msg, kube_devices)
    assert [(b["pod"], b["node"]) for b in out["bindings"]] == [(f"{ns}/first", first["spec"]["nodeName"])]
    assert out["bindings"][0]["claims"] == [{"claim": f"{ns}/one", "devices": kube_devices}]
    assert {u["pod"]: u["message"] for u in out["unschedulable"]} == {f"{ns}/second": kube_msg}
