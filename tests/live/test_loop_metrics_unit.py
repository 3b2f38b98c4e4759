"""The kube loop records every scheduler_* metric it exports, where kube records it (no API
server: a fake binder and status writer; the live test scrapes /metrics after real binds)."""
from __future__ import annotations

from concurrent.futures import Future
from typing import ClassVar

from caldera.config.defaults import default_config
from caldera.live.cache import ClusterCache
from caldera.live.loop import KubeLoop
from caldera.live.metrics import SchedulerMetrics
from caldera.plugins.registry import build_registry

from .test_cache_unit import node, pod


class FakeStatus:
    def __init__(self):
        self.calls = []

    def unschedulable(self, *a):
        self.calls.append(("unschedulable", a))

    def scheduled(self, *a):
        self.calls.append(("scheduled", a))

    def preempt(self, *a):
        self.calls.append(("preempt", a))

    def evict(self, *a):
        self.calls.append(("evict", a))

    def podgroup_status(self, *a):
        self.calls.append(("podgroup_status", a))


def make_loop(metrics, bind_ok=True):
    class Binder:
        in_flight: ClassVar[set] = set()

        def __init__(self, requeue, on_bound):
            self.requeue, self.on_bound = requeue, on_bound

        def submit(self, p, n):
            cache.assume(p, n)
            if bind_ok:
                self.on_bound(p, n)
            else:
                self.requeue(p)
            return True

        def shutdown(self, timeout=0):
            pass

    cfg = default_config(build_registry())
    cfg.profiles[0].scheduler_name = "caldera"
    cache = ClusterCache(["caldera"])
    loop = KubeLoop(cfg, cache, binder_factory=lambda **kw: Binder(**kw), status=FakeStatus(), metrics=metrics)
    return cache, loop


def value(m, name, labels=None):
    return m.registry.get_sample_value(name, labels or {}) or 0.0


def run_one(loop):
    with loop.cache.lock:
        qpi = loop.queue.pop()
        if loop.metrics is not None:
            loop._cache_metrics()
    loop.schedule(qpi)


def test_a_bound_pod_records_algorithm_sli_attempts_cache_and_evaluations():
    m = SchedulerMetrics()
    cache, loop = make_loop(m)
    for i in range(3):
        cache.on_node_add(node(f"n{i}"))
    cache.on_pod_add(pod("running", "n0"))
    cache.on_pod_add(pod("p"))
    assert value(m, "scheduler_queue_incoming_pods_total", {"queue": "active", "event": "UnschedulablePodAdd"}) == 1
    run_one(loop)
    assert value(m, "scheduler_scheduling_algorithm_duration_seconds_count") == 1
    assert value(m, "scheduler_pod_scheduling_attempts_count") == 1
    assert value(m, "scheduler_pod_scheduling_attempts_sum") == 1
    assert value(m, "scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": "1"}) == 1
    assert value(m, "scheduler_scheduler_cache_size", {"type": "nodes"}) == 3
    assert value(m, "scheduler_scheduler_cache_size", {"type": "pods"}) == 1     # sampled before this bind
    # Filter counts once per node evaluated; PreFilter once per pod
    assert value(m, "scheduler_plugin_evaluation_total",
                 {"plugin": "NodeResourcesFit", "extension_point": "Filter", "profile": "caldera"}) == 3
    assert value(m, "scheduler_plugin_evaluation_total",
                 {"plugin": "NodeResourcesFit", "extension_point": "PreFilter", "profile": "caldera"}) == 1
    assert loop._scheduled == {}


def test_a_failed_bind_records_no_sli_and_leaves_nothing_behind():
    m = SchedulerMetrics()
    cache, loop = make_loop(m, bind_ok=False)
    cache.on_node_add(node("n0"))
    cache.on_pod_add(pod("p"))
    run_one(loop)
    assert value(m, "scheduler_pod_scheduling_attempts_count") == 0
    assert loop._scheduled == {}


def test_an_unschedulable_pod_counts_its_plugin_until_retried():
    m = SchedulerMetrics()
    cache, loop = make_loop(m)
    cache.on_node_add(node("n0", cpu="1"))
    cache.on_pod_add(pod("big", cpu="2"))
    run_one(loop)
    assert value(m, "scheduler_unschedulable_pods", {"plugin": "NodeResourcesFit", "profile": "caldera"}) == 1
    assert value(m, "scheduler_queue_incoming_pods_total",
                 {"queue": "unschedulable", "event": "ScheduleAttemptFailure"}) == 1
    assert value(m, "scheduler_scheduling_algorithm_duration_seconds_count") == 0
    assert value(m, "scheduler_preemption_attempts_total") == 1      # DefaultPreemption ran, found nothing
    assert value(m, "scheduler_preemption_victims_count") == 0
    cache.on_node_add(node("n1", cpu="4"))                           # Node/Add moves it back
    assert value(m, "scheduler_queue_incoming_pods_total", {"queue": "backoff", "event": "NodeAdd"}) + \
        value(m, "scheduler_queue_incoming_pods_total", {"queue": "active", "event": "NodeAdd"}) == 1
    loop.queue.pop()
    assert value(m, "scheduler_unschedulable_pods", {"plugin": "NodeResourcesFit", "profile": "caldera"}) == 0


def test_preemption_records_an_attempt_and_its_victims():
    m = SchedulerMetrics()
    cache, loop = make_loop(m)
    cache.on_node_add(node("n0", cpu="2"))
    low = pod("low", "n0", cpu="2")
    low["status"]["phase"] = "Running"
    cache.on_pod_add(low)
    high = pod("high", cpu="2")
    high["spec"]["priority"] = 1000
    cache.on_pod_add(high)
    run_one(loop)
    assert value(m, "scheduler_preemption_attempts_total") == 1
    assert value(m, "scheduler_preemption_victims_count") == 1
    assert value(m, "scheduler_preemption_victims_sum") == 1


def test_a_stuck_status_write_is_reported_and_the_pod_is_retried():
    warnings = []
    cache, loop = make_loop(None)
    cache.warn = warnings.append
    cache.on_node_add(node("n0"))
    cache.on_pod_add(pod("p"))
    stuck: Future = Future()
    loop.pending_writes["default/p"] = stuck
    loop.status_wait = 0.05
    with cache.lock:
        qpi = loop.queue.pop()
    loop.schedule(qpi)
    assert any("did not finish in 0.05 s" in w for w in warnings)
    assert cache.assumed.get("default/p") == "n0"


def test_a_volcano_session_records_plugin_latencies_and_unready_tasks():
    """volcano_plugin_scheduling_latency_milliseconds per plugin and OnSession, and
    volcano_unschedule_task_count per job (gang's minAvailable - ready), as Volcano records them."""
    import yaml

    from caldera.batch.actions import ACTIONS
    from caldera.batch.conf import parse_volcano_conf
    from caldera.batch.plugins import PLUGINS
    from caldera.live.loop import BatchLoop

    conf = parse_volcano_conf(yaml.safe_load('actions: "enqueue, allocate"\ntiers:\n- plugins:\n'
                                             '  - name: gang\n  - name: predicates\n  - name: proportion\n'),
                              "t.conf", ACTIONS, PLUGINS)
    m = SchedulerMetrics()
    cache = ClusterCache(["volcano"])

    class Binder:
        in_flight: ClassVar[set] = set()

        def __init__(self, **kw):
            pass

        def submit(self, p, n):
            return True

        def shutdown(self, timeout=0):
            pass

    loop = BatchLoop(conf, cache, binder_factory=lambda **kw: Binder(**kw), status=FakeStatus(), metrics=m)
    cache.on_node_add(node("n0", cpu="4"))
    cache.on_podgroup({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": "big", "namespace": "default"},
                       "spec": {"minMember": 3}, "status": {"phase": "Inqueue"}})
    for i in range(3):
        p = pod(f"big-{i}", cpu="2", scheduler="volcano")
        p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "big"}
        cache.on_pod_add(p)
    loop.run_once()
    assert value(m, "volcano_unschedule_task_count", {"job_id": "big"}) == 3
    assert value(m, "volcano_plugin_scheduling_latency_milliseconds_count",
                 {"plugin": "gang", "OnSession": "OnSessionOpen"}) == 1
    assert value(m, "volcano_plugin_scheduling_latency_milliseconds_count",
                 {"plugin": "proportion", "OnSession": "OnSessionClose"}) == 1
    # the job is deleted: its series goes, as Volcano's DeleteJobMetrics drops it
    for i in range(3):
        cache.on_pod_delete(cache.pods[f"default/big-{i}"].raw)
    cache.on_podgroup(cache.podgroups["default/big"], deleted=True)
    loop.run_once()
    assert m.registry.get_sample_value("volcano_unschedule_task_count", {"job_id": "big"}) is None


def test_a_volcano_session_runs_on_the_wall_clock(monkeypatch):
    """`caldera run`'s sessions take Volcano's time.Now(): a PodGroup created a minute before the
    loop runs has waited a minute (sla, tdm, cdp and rescheduling read Session.now). Without it
    the session's time would be the newest creationTimestamp of its objects."""
    import time as _time

    import yaml

    from caldera.batch import runner
    from caldera.batch.actions import ACTIONS
    from caldera.batch.conf import parse_volcano_conf
    from caldera.batch.plugins import PLUGINS
    from caldera.live.loop import BatchLoop

    conf = parse_volcano_conf(yaml.safe_load('actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n'),
                              "t.conf", ACTIONS, PLUGINS)
    cache = ClusterCache(["volcano"])
    seen = []
    real = runner.open_snapshot

    def spy(*a, **kw):
        ssn = real(*a, **kw)
        seen.append(ssn.now)
        return ssn
    monkeypatch.setattr(runner, "open_snapshot", spy)

    class Binder:
        in_flight: ClassVar[set] = set()

        def __init__(self, **kw):
            pass

        def shutdown(self, timeout=0):
            pass

    loop = BatchLoop(conf, cache, binder_factory=lambda **kw: Binder(**kw), status=FakeStatus())
    cache.on_node_add(node("n0", cpu="4"))
    created = _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime(_time.time() - 60))
    cache.on_podgroup({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": "g", "namespace": "default", "creationTimestamp": created},
                       "spec": {"minMember": 1}, "status": {"phase": "Pending"}})
    before = _time.time()
    loop.run_once()
    assert seen and before <= seen[0] <= _time.time()
