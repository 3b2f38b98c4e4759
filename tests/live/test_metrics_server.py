"""SchedulerMetrics (kube-scheduler / Volcano names, labels, buckets, help) and the HTTP server."""
from __future__ import annotations

import http.client
import random
import socket
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from caldera.errors import ConfigError
from caldera.framework.status import Code, Status
from caldera.live.metrics import SchedulerMetrics, exponential_buckets_range, status_label
from caldera.live.server import MetricsServer, parse_addr


def families(m: SchedulerMetrics) -> dict:
    return {f.name: f for f in text_string_to_metric_families(m.exposition().decode())}


def buckets_of(m: SchedulerMetrics, name: str) -> list[float]:
    fam = families(m)[name]
    les = []
    for s in fam.samples:
        if s.name == name + "_bucket" and s.labels["le"] != "+Inf":
            le = float(s.labels["le"])
            if le not in les:
                les.append(le)
    return les


def exp(start, factor, n):
    return [start * factor ** i for i in range(n)]


# ------------------------------------------------------------------------------ names, help, buckets

KUBE = [
    # (family name as parsed, type, labels, help)
    ("scheduler_schedule_attempts", "counter", {"result", "profile"},
     "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
     "scheduled, while 'error' means an internal scheduler problem."),
    ("scheduler_scheduling_attempt_duration_seconds", "histogram", {"result", "profile"},
     "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)"),
    ("scheduler_pending_pods", "gauge", {"queue"},
     "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
     "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
     "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
     "scheduler never attempted to schedule because they are gated."),
    ("scheduler_framework_extension_point_duration_seconds", "histogram", {"extension_point", "status", "profile"},
     "[STABLE] Latency for running all plugins of a specific extension point."),
    ("scheduler_plugin_execution_duration_seconds", "histogram", {"plugin", "extension_point", "status"},
     "[ALPHA] Duration for running a plugin at a specific extension point."),
]


def exercised() -> SchedulerMetrics:
    m = SchedulerMetrics(rng=random.Random(0))
    m.attempt("scheduled", "default-scheduler", 0.003)
    m.pending({"active": 3, "backoff": 1, "unschedulable": 2, "gated": 0})
    m.extension_point("Filter", Status(), "default-scheduler", 0.0002)
    m.plugin("NodeResourcesFit", "Filter", Status.unschedulable("Insufficient cpu"), 0.00003)
    m.session(12.5)
    m.action("allocate", 3.0)
    m.volcano_attempt("Success", 4)
    m.unschedule_tasks("job-a", 2)
    m.unschedule_jobs(1)
    return m


@pytest.mark.parametrize("name,typ,labels,help_", KUBE)
def test_kube_metric_names_types_labels_and_help(name, typ, labels, help_):
    fam = families(exercised())[name]
    assert fam.type == typ
    assert fam.documentation == help_
    sample_labels = {k for s in fam.samples for k in s.labels if k != "le"}
    assert sample_labels == labels


@pytest.mark.parametrize("name,expected", [
    ("scheduler_scheduling_attempt_duration_seconds", exp(0.001, 2, 15)),
    ("scheduler_framework_extension_point_duration_seconds", exp(0.0001, 2, 12)),
    ("scheduler_plugin_execution_duration_seconds", exp(0.00001, 1.5, 20)),
    ("volcano_e2e_scheduling_latency_milliseconds", exponential_buckets_range(1, 5000, 20)),
    ("volcano_action_scheduling_latency_milliseconds", exponential_buckets_range(1, 2000, 20)),
])
def test_histogram_buckets(name, expected):
    got = buckets_of(exercised(), name)
    assert got == pytest.approx(expected, rel=1e-9)


def test_bucket_edges_match_kube_literally():
    m = exercised()
    assert buckets_of(m, "scheduler_scheduling_attempt_duration_seconds")[-1] == pytest.approx(16.384)
    assert buckets_of(m, "scheduler_framework_extension_point_duration_seconds")[-1] == pytest.approx(0.2048)
    assert buckets_of(m, "volcano_e2e_scheduling_latency_milliseconds")[0] == pytest.approx(1)
    assert buckets_of(m, "volcano_e2e_scheduling_latency_milliseconds")[-1] == pytest.approx(5000)


def test_exposition_text_has_exact_series_names_and_no_created_series():
    text = exercised().exposition().decode()
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in text
    assert 'scheduler_pending_pods{queue="active"} 3.0' in text
    assert 'scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",' \
           'plugin="NodeResourcesFit",status="Unschedulable"} 1.0' in text
    assert 'scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",' \
           'profile="default-scheduler",status="Success"} 1.0' in text
    assert 'volcano_schedule_attempts_total{result="Success"} 4.0' in text
    assert 'volcano_unschedule_task_count{job_id="job-a"} 2.0' in text
    assert 'volcano_unschedule_job_count 1.0' in text
    assert 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"} 1.0' in text
    assert "_created" not in text


def test_attempt_counts_and_observes_per_result_and_profile():
    m = SchedulerMetrics()
    for r in ("scheduled", "scheduled", "unschedulable", "error"):
        m.attempt(r, "p1", 0.01)
    m.attempt("scheduled", "p2", 2.0)
    c = {(s.labels["result"], s.labels["profile"]): s.value
         for s in families(m)["scheduler_schedule_attempts"].samples if s.name.endswith("_total")}
    assert c == {("scheduled", "p1"): 2, ("unschedulable", "p1"): 1, ("error", "p1"): 1, ("scheduled", "p2"): 1}
    h = families(m)["scheduler_scheduling_attempt_duration_seconds"]
    le = {s.labels["le"]: s.value for s in h.samples
          if s.name.endswith("_bucket") and s.labels["profile"] == "p2"}
    assert le["1.024"] == 0 and le["2.048"] == 1
    with pytest.raises(ValueError, match="scheduled, unschedulable, error"):
        m.attempt("Success", "p1", 0.1)


def test_pending_pods_start_at_zero_and_follow_the_queue():
    m = SchedulerMetrics()
    vals = lambda: {s.labels["queue"]: s.value for s in families(m)["scheduler_pending_pods"].samples}  # noqa
    assert vals() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    m.pending({"active": 5, "backoff": 2, "unschedulable": 7, "gated": 1, "other": 9})
    assert vals() == {"active": 5, "backoff": 2, "unschedulable": 7, "gated": 1}
    m.pending({"active": 0})
    assert vals()["active"] == 0 and vals()["unschedulable"] == 7


@pytest.mark.parametrize("status,label", [
    (None, "Success"), (Status(), "Success"), (Status.unschedulable("x"), "Unschedulable"),
    (Status.unresolvable("x"), "UnschedulableAndUnresolvable"), (Status.error("boom"), "Error"),
    (Status.skip(), "Skip"), (Code.WAIT, "Wait"), ("Pending", "Pending"),
])
def test_status_label_is_kubes_code_name(status, label):
    assert status_label(status) == label


def test_plugin_durations_are_sampled_in_ten_percent_of_cycles():
    m = SchedulerMetrics(rng=random.Random(42))
    n = sum(m.sample_plugins() for _ in range(20000))
    assert 1800 <= n <= 2200
    assert not any(SchedulerMetrics(sample_percent=0).sample_plugins() for _ in range(100))


def test_each_instance_has_its_own_registry():
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.attempt("scheduled", "p", 0.1)
    assert 'result="scheduled"' in a.exposition().decode()
    assert 'result="scheduled"' not in b.exposition().decode()


# ------------------------------------------------------------------------------ the server

class FakeProfile:
    def __init__(self):
        self.calls = []
        self.release = threading.Event()
        self.release.set()

    def __call__(self, seconds):
        self.calls.append(seconds)
        self.release.wait(10)
        return f"   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\nprofiled {seconds}s\n"


@pytest.fixture
def served():
    state = {"ready": False}
    prof = FakeProfile()
    m = exercised()
    srv = MetricsServer("127.0.0.1:0", metrics=m, ready=lambda: state["ready"], profile=prof).start()
    yield srv, state, prof
    srv.stop()


def get(srv, path, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request(method, path)
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    return r.status, r.getheader("Content-Type"), body


def test_healthz_metrics_readyz(served):
    srv, state, _ = served
    assert get(srv, "/healthz")[::2] == (200, "ok")
    code, ctype, body = get(srv, "/metrics")
    assert code == 200 and ctype.startswith("text/plain") and "version=" in ctype
    assert "# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts" in body
    assert "# TYPE scheduler_scheduling_attempt_duration_seconds histogram" in body
    code, _, body = get(srv, "/readyz")
    assert code == 503 and body.startswith("not ready")
    state["ready"] = True
    assert get(srv, "/readyz")[::2] == (200, "ok")
    assert get(srv, "/nope")[0] == 404
    assert get(srv, "/metrics", "POST")[0] == 405


def test_readyz_reports_a_reason_and_a_failing_check():
    srv = MetricsServer("127.0.0.1:0", ready=lambda: (False, "informers for pods not synced")).start()
    try:
        code, _, body = get(srv, "/readyz")
        assert code == 503 and "informers for pods not synced" in body
    finally:
        srv.stop()

    def boom():
        raise RuntimeError("cache broken")
    srv = MetricsServer("127.0.0.1:0", ready=boom).start()
    try:
        code, _, body = get(srv, "/readyz")
        assert code == 503 and "cache broken" in body
    finally:
        srv.stop()


@pytest.mark.parametrize("query,seconds", [("", 30), ("?seconds=5", 5), ("?seconds=300", 300),
                                           ("?seconds=0.5", 0.5)])
def test_profile_calls_the_hook_and_returns_text(served, query, seconds):
    srv, _, prof = served
    code, ctype, body = get(srv, "/debug/profile" + query)
    assert code == 200 and ctype.startswith("text/plain")
    assert prof.calls == [seconds] and f"profiled {seconds}s" in body and "ncalls" in body


@pytest.mark.parametrize("query", ["?seconds=abc", "?seconds=0", "?seconds=-3", "?seconds=301",
                                   "?seconds=nan", "?seconds=inf", "?seconds="])
def test_profile_rejects_bad_seconds_with_400(served, query):
    srv, _, prof = served
    code, _, body = get(srv, "/debug/profile" + query)
    assert code == 400 and body.startswith("seconds: must be a number in (0, 300]")
    assert prof.calls == []


def test_a_running_profile_does_not_block_other_endpoints(served):
    srv, _, prof = served
    prof.release.clear()
    t = threading.Thread(target=get, args=(srv, "/debug/profile?seconds=1"))
    t.start()
    try:
        assert get(srv, "/healthz")[0] == 200
        assert get(srv, "/metrics")[0] == 200
    finally:
        prof.release.set()
        t.join(10)


def test_binds_exactly_the_given_port_and_a_taken_port_is_one_line():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        with pytest.raises(ConfigError) as e:
            MetricsServer(f"127.0.0.1:{port}").start()
        msg = str(e.value)
        assert msg.startswith(f"--metrics-addr: 127.0.0.1:{port} is already in use") and "\n" not in msg
    finally:
        holder.close()
    srv = MetricsServer(f"127.0.0.1:{port}").start()
    try:
        assert srv.port == port and get(srv, "/healthz")[0] == 200
    finally:
        srv.stop()


def test_stop_closes_the_socket_and_the_port_can_be_bound_again():
    srv = MetricsServer("127.0.0.1:0").start()
    port = srv.port
    assert get(srv, "/healthz")[0] == 200
    srv.stop()
    assert not srv.thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    again = MetricsServer(f"127.0.0.1:{port}").start()
    again.stop()
    srv.stop()   # idempotent


def test_metrics_endpoint_without_metrics_is_404_and_no_profile_hook_is_404():
    srv = MetricsServer("127.0.0.1:0").start()
    try:
        assert get(srv, "/metrics")[0] == 404
        assert get(srv, "/debug/profile")[0] == 404
    finally:
        srv.stop()


@pytest.mark.parametrize("addr,want", [
    ("127.0.0.1:10259", ("127.0.0.1", 10259)), ("0.0.0.0:80", ("0.0.0.0", 80)),
    ("[::1]:9000", ("::1", 9000)), ("localhost:0", ("localhost", 0)),
])
def test_parse_addr(addr, want):
    assert parse_addr(addr) == want


@pytest.mark.parametrize("addr,err", [
    ("10259", "is not host:port"), ("127.0.0.1:", "is not host:port"), ("host:abc", "is not a number"),
    (":10259", "has no host"), ("127.0.0.1:70000", "out of range"),
])
def test_parse_addr_errors(addr, err):
    with pytest.raises(ConfigError, match=err) as e:
        parse_addr(addr)
    assert str(e.value).startswith("--metrics-addr: ")
