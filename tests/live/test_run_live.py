"""`caldera run` against a real etcd + kube-apiserver: binds, conditions, events, preemption."""
from __future__ import annotations

from .kube import (
    create_node,
    create_pod,
    delete_nodes,
    events_for,
    get_pod,
    kube_profile,
    live_scheduler,
    namespace,
    tag,
    wait_until,
)


def test_binds_its_pods_and_only_its_pods(api, tmp_path):
    t = tag()
    sched = f"caldera-{t}"
    ns = namespace(api, f"bind-{t}")
    nodes = [f"bind-{t}-{i}" for i in range(3)]
    for n in nodes:
        create_node(api, n, cpu="2")
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            for i in range(6):
                create_pod(api, ns, f"p{i}", sched, cpu="500m")
            create_pod(api, ns, "other", "some-other-scheduler")
            bound = wait_until(lambda: all((get_pod(api, ns, f"p{i}")["spec"].get("nodeName") or "") in nodes
                                           for i in range(6)), timeout=30, what="6 pods bound")
            assert bound
            assert get_pod(api, ns, "other")["spec"].get("nodeName") is None
            scheduled = wait_until(lambda: [e for e in events_for(api, ns, "p0") if e["reason"] == "Scheduled"],
                                   what="a Scheduled event")
            assert scheduled[0]["note"].startswith(f"Successfully assigned {ns}/p0 to ")
            assert scheduled[0]["reportingController"] == sched
            assert app.loop.binder.bound == 6 and app.loop.binder.failed == 0
    finally:
        delete_nodes(api, nodes)


def test_unschedulable_pod_gets_condition_and_event(api, tmp_path):
    t = tag()
    sched = f"caldera-{t}"
    ns = namespace(api, f"unsched-{t}")
    nodes = [f"unsched-{t}-0"]
    create_node(api, nodes[0], cpu="1")
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)):
            create_pod(api, ns, "huge", sched, cpu="3")
            cond = wait_until(lambda: [c for c in (get_pod(api, ns, "huge").get("status") or {}).get("conditions", [])
                                       if c["type"] == "PodScheduled"], what="PodScheduled condition")
            assert cond[0]["status"] == "False" and cond[0]["reason"] == "Unschedulable"
            assert "Insufficient cpu" in cond[0]["message"]
            assert cond[0]["message"].startswith("0/")
            ev = wait_until(lambda: [e for e in events_for(api, ns, "huge") if e["reason"] == "FailedScheduling"],
                            what="FailedScheduling event")
            assert ev[0]["type"] == "Warning" and "Insufficient cpu" in ev[0]["note"]
            # a bigger node arrives: the pod is retried (Node/Add event) and bound
            nodes.append(f"unsched-{t}-1")
            create_node(api, nodes[1], cpu="4")
            wait_until(lambda: get_pod(api, ns, "huge")["spec"].get("nodeName") == nodes[1], timeout=30,
                       what="bound after the node was added")
    finally:
        delete_nodes(api, nodes)


def test_preemption_evicts_lower_priority_and_nominates(api, tmp_path):
    t = tag()
    sched = f"caldera-{t}"
    ns = namespace(api, f"preempt-{t}")
    for name, value in ((f"low-{t}", 10), (f"high-{t}", 1000)):
        api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": name}, "value": value})
    nodes = [f"preempt-{t}-0"]
    create_node(api, nodes[0], cpu="2")
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            # the victim has a grace period: with no kubelet it stays Terminating until we force it
            create_pod(api, ns, "low", sched, cpu="1500m", priority_class=f"low-{t}", grace=30)
            wait_until(lambda: get_pod(api, ns, "low")["spec"].get("nodeName") == nodes[0], what="low bound")
            create_pod(api, ns, "high", sched, cpu="1500m", priority_class=f"high-{t}")
            wait_until(lambda: get_pod(api, ns, "low")["metadata"].get("deletionTimestamp"), timeout=30,
                       what="victim deleted with its grace period")
            assert get_pod(api, ns, "low")["metadata"].get("deletionGracePeriodSeconds") == 30
            high = wait_until(lambda: (get_pod(api, ns, "high").get("status") or {}).get("nominatedNodeName"),
                              timeout=30, what="preemptor nominated")
            assert high == nodes[0]
            assert not get_pod(api, ns, "high")["spec"].get("nodeName")     # not bound while the victim terminates
            assert any(e["reason"] == "Preempted" and e["note"].startswith("Preempted by pod ")
                       for e in events_for(api, ns, "low"))
            api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/low", {"gracePeriodSeconds": 0})
            wait_until(lambda: get_pod(api, ns, "high")["spec"].get("nodeName") == nodes[0], timeout=30,
                       what="preemptor bound once the victim is gone")
            assert_every_scheduler_family_moved(app)
    finally:
        delete_nodes(api, nodes)


# Every scheduler_* family `caldera run` exports, with a sample that a run with binds, an
# unschedulable attempt and a preemption must have moved off zero.
MOVED = {
    "scheduler_schedule_attempts_total": 'result="unschedulable"',
    "scheduler_scheduling_attempt_duration_seconds_count": 'result="scheduled"',
    "scheduler_scheduling_algorithm_duration_seconds_count": "",
    "scheduler_preemption_attempts_total": "",
    "scheduler_preemption_victims_count": "",
    "scheduler_pod_scheduling_sli_duration_seconds_count": "",
    "scheduler_pod_scheduling_attempts_count": "",
    "scheduler_framework_extension_point_duration_seconds_count": 'extension_point="Filter"',
    "scheduler_queue_incoming_pods_total": 'queue="active"',
    "scheduler_scheduler_cache_size": 'type="nodes"',
    "scheduler_plugin_evaluation_total": 'extension_point="Filter"',
}


def assert_every_scheduler_family_moved(app):
    import urllib.request
    text = urllib.request.urlopen(app.server.url + "/metrics").read().decode()
    families = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE scheduler_")}
    # gauges that are back to zero once everything is bound, and the sampled plugin durations,
    # are checked by tests/live/test_loop_metrics_unit.py
    assert families - {"scheduler_pending_pods", "scheduler_unschedulable_pods",
                       "scheduler_plugin_execution_duration_seconds"} \
        <= {name.removesuffix("_count").removesuffix("_total") for name in MOVED} | set(MOVED), families
    for name, label in MOVED.items():
        values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith(name) and label in line and not line.startswith("#")]
        assert values and max(values) > 0, f"{name}{{{label}}} did not move: {values}"


def test_metrics_health_and_ready_endpoints(api, tmp_path):
    import urllib.request
    t = tag()
    sched = f"caldera-{t}"
    with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
        url = app.server.url
        assert urllib.request.urlopen(url + "/healthz").read() == b"ok"
        wait_until(lambda: urllib.request.urlopen(url + "/readyz").status == 200, what="ready")
        text = urllib.request.urlopen(url + "/metrics").read().decode()
        assert "scheduler_schedule_attempts_total" in text
        assert "scheduler_pending_pods" in text
        prof = urllib.request.urlopen(url + "/debug/profile?seconds=1").read().decode()
        assert "function calls" in prof


def test_tracing_exports_a_span_per_cycle_to_an_otlp_collector(api, tmp_path):
    """`caldera run --otlp-endpoint`: real binds, spans received by a loopback OTLP/HTTP collector."""
    import threading
    from http.server import ThreadingHTTPServer

    from caldera.live.tracing import setup_tracing

    from .test_tracing import _Collector
    _Collector.bodies = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    t = tag()
    sched = f"caldera-{t}"
    ns = namespace(api, f"trace-{t}")
    nodes = [f"trace-{t}-0"]
    create_node(api, nodes[0], cpu="4")
    try:
        tracing = setup_tracing(f"http://127.0.0.1:{srv.server_address[1]}")
        with live_scheduler(api, kube_profile(tmp_path, sched), tracing=tracing):
            for i in range(3):
                create_pod(api, ns, f"p{i}", sched)
            wait_until(lambda: all(get_pod(api, ns, f"p{i}")["spec"].get("nodeName") for i in range(3)),
                       what="3 pods bound")
        # stop() flushed the spans
        body = b"".join(b for _, _, b in _Collector.bodies)
        assert body.count(b"SchedulingCycle") >= 3 and b"Bind" in body
    finally:
        srv.shutdown()
        delete_nodes(api, nodes)
