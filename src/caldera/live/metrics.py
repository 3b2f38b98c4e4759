"""Prometheus metrics with kube-scheduler's (and Volcano's) names, labels, buckets and help.

Each SchedulerMetrics has its own CollectorRegistry, so tests (and several schedulers in one
process) do not collide. Help strings carry component-base's stability prefix ("[STABLE] ",
"[ALPHA] ", "[BETA] ") as kube-scheduler's /metrics shows them; Volcano's (plain
client_golang) have none. Plugin execution durations are sampled as kube does: a scheduling
cycle records them with probability 10% (`sample_plugins()` decides per cycle).
"""
from __future__ import annotations

import random
from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

try:  # kube's exposition has no *_created series
    from prometheus_client import disable_created_metrics
    disable_created_metrics()
except ImportError:  # pragma: no cover - older prometheus-client
    pass

CONTENT_TYPE = CONTENT_TYPE_LATEST
PLUGIN_METRICS_SAMPLE_PERCENT = 10
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")
RESULTS = ("scheduled", "unschedulable", "error")
GC_PAUSE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """prometheus ExponentialBuckets."""
    return [start * factor ** i for i in range(count)]


def exponential_buckets_range(lo: float, hi: float, count: int) -> list[float]:
    """prometheus ExponentialBucketsRange: `count` buckets from lo to hi, equal ratios."""
    factor = (hi / lo) ** (1.0 / (count - 1))
    return [lo * factor ** i for i in range(count)]


def status_label(status) -> str:
    """The status label kube writes: the Code's name ("Success", "Unschedulable", ...)."""
    if status is None:
        return "Success"
    if isinstance(status, str):
        return status
    code = getattr(status, "code", status)
    return str(code)


def _kube(level: str, text: str) -> str:
    return f"[{level}] {text}"


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None, *, rng: random.Random | None = None,
                 sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT):
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.rng = rng or random.Random()
        self.sample_percent = sample_percent
        r = self.registry
        # ---- kube-scheduler (pkg/scheduler/metrics/metrics.go) --------------------------
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            _kube("STABLE", "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
                            "could not be scheduled, while 'error' means an internal scheduler problem."),
            ["result", "profile"], registry=r)
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            _kube("STABLE", "Scheduling attempt latency in seconds (scheduling algorithm + binding)"),
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.scheduling_algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            _kube("ALPHA", "Scheduling algorithm latency in seconds"),
            buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims", _kube("STABLE", "Number of selected preemption victims"),
            buckets=exponential_buckets(1, 2, 7), registry=r)
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            _kube("STABLE", "Total preemption attempts in the cluster till now"), registry=r)
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            _kube("STABLE", "Number of pending pods, by the queue type. 'active' means number of pods in "
                            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
                            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
                            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
                            "schedule because they are gated."),
            ["queue"], registry=r)
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            _kube("BETA", "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
                          "queue and might involve multiple scheduling attempts."),
            ["attempts"], buckets=exponential_buckets(0.01, 2, 20), registry=r)
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            _kube("STABLE", "Number of attempts to successfully schedule a pod."),
            buckets=exponential_buckets(1, 2, 5), registry=r)
        self.extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            _kube("STABLE", "Latency for running all plugins of a specific extension point."),
            ["extension_point", "status", "profile"], buckets=exponential_buckets(0.0001, 2, 12), registry=r)
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            _kube("ALPHA", "Duration for running a plugin at a specific extension point."),
            ["plugin", "extension_point", "status"], buckets=exponential_buckets(0.00001, 1.5, 20), registry=r)
        self.queue_incoming_pods = Counter(
            "scheduler_queue_incoming_pods_total",
            _kube("STABLE", "Number of pods added to scheduling queues by event and queue type."),
            ["queue", "event"], registry=r)
        self.cache_size = Gauge(
            "scheduler_scheduler_cache_size",
            _kube("ALPHA", "Number of nodes, pods, and assumed (bound) pods in the scheduler cache."),
            ["type"], registry=r)
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            _kube("ALPHA", "The number of unschedulable pods broken down by plugin name. A pod will increment "
                           "the gauge for all plugins that caused it to not schedule and so this metric have "
                           "meaning only when broken down by plugin."),
            ["plugin", "profile"], registry=r)
        self.plugin_evaluation = Counter(
            "scheduler_plugin_evaluation_total",
            _kube("ALPHA", "Number of attempts to schedule pods by each plugin and the extension point "
                           "(available only in PreFilter, Filter, PreScore, and Score)."),
            ["plugin", "extension_point", "profile"], registry=r)
        for q in PENDING_QUEUES:
            self.pending_pods.labels(queue=q).set(0)
        # ---- Caldera's own (no kube counterpart) ------------------------------------------
        # A Python process's cyclic GC stops every thread while it runs; kube-scheduler's Go
        # runtime reports go_gc_duration_seconds, a different measure, so this name is Caldera's.
        self.gc_pauses = Histogram(
            "caldera_gc_pause_seconds",
            "Pauses of the Python cyclic garbage collector (every thread waits), by generation collected.",
            ["generation"], buckets=GC_PAUSE_BUCKETS, registry=r)
        # ---- Volcano (pkg/scheduler/metrics/metrics.go) ----------------------------------
        self.v_e2e = Histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "Duration of a single scheduling session execution in milliseconds. It covers the entire cycle "
            "from session open, action executions to session close.",
            buckets=exponential_buckets_range(1, 5000, 20), registry=r)
        self.v_open_session = Histogram(
            "volcano_open_session_duration_milliseconds",
            "Duration of opening a scheduling session in milliseconds, including cache snapshot and session "
            "initialization.", buckets=exponential_buckets_range(1, 5000, 20), registry=r)
        self.v_action = Histogram(
            "volcano_action_scheduling_latency_milliseconds", "Action scheduling latency in milliseconds",
            ["action"], buckets=exponential_buckets_range(1, 2000, 20), registry=r)
        self.v_plugin = Histogram(
            "volcano_plugin_scheduling_latency_milliseconds", "Plugin scheduling latency in milliseconds",
            ["plugin", "OnSession"], buckets=exponential_buckets_range(0.1, 100, 15), registry=r)
        self.v_attempts = Counter(
            "volcano_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.", ["result"], registry=r)
        self.v_preemption_victims = Gauge(
            "volcano_pod_preemption_victims", "Number of selected preemption victims", registry=r)
        self.v_preemption_attempts = Counter(
            "volcano_total_preemption_attempts", "Total preemption attempts in the cluster till now", registry=r)
        self.v_unschedule_tasks = Gauge(
            "volcano_unschedule_task_count", "Number of tasks could not be scheduled", ["job_id"], registry=r)
        self.v_unschedule_jobs = Gauge(
            "volcano_unschedule_job_count", "Number of jobs could not be scheduled", registry=r)

    # ---- kube-scheduler -------------------------------------------------------------------
    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt: result is scheduled | unschedulable | error."""
        if result not in RESULTS:
            raise ValueError(f"schedule attempt result must be one of {', '.join(RESULTS)}, not {result!r}")
        self.schedule_attempts.labels(result=result, profile=profile).inc()
        self.scheduling_attempt_duration.labels(result=result, profile=profile).observe(seconds)

    def algorithm(self, seconds: float) -> None:
        self.scheduling_algorithm_duration.observe(seconds)

    def pending(self, counts: Mapping[str, int]) -> None:
        """Set scheduler_pending_pods from {queue: count} (queues absent keep their value)."""
        for q, n in counts.items():
            if q in PENDING_QUEUES:
                self.pending_pods.labels(queue=q).set(n)

    def extension_point(self, ep: str, status, profile: str, seconds: float) -> None:
        self.extension_point_duration.labels(extension_point=ep, status=status_label(status),
                                             profile=profile).observe(seconds)

    def sample_plugins(self) -> bool:
        """Whether this scheduling cycle records plugin durations (kube: 10% of cycles)."""
        return self.rng.randrange(100) < self.sample_percent

    def plugin(self, plugin: str, ep: str, status, seconds: float) -> None:
        self.plugin_execution_duration.labels(plugin=plugin, extension_point=ep,
                                              status=status_label(status)).observe(seconds)

    def plugin_evaluated(self, plugin: str, ep: str, profile: str) -> None:
        self.plugin_evaluation.labels(plugin=plugin, extension_point=ep, profile=profile).inc()

    def preemption(self, victims: int) -> None:
        """A preemption attempt and the number of victims it selected."""
        self.preemption_attempts.inc()
        if victims > 0:
            self.preemption_victims.observe(victims)

    def pod_scheduled(self, attempts: int, sli_seconds: float) -> None:
        """A pod bound after `attempts` attempts, `sli_seconds` after it entered the queue."""
        self.pod_scheduling_attempts.observe(attempts)
        label = "15+" if attempts >= 15 else str(attempts)      # kube's getAttemptsLabel
        self.pod_scheduling_sli_duration.labels(attempts=label).observe(sli_seconds)

    def queue_incoming(self, queue: str, event: str, n: int = 1) -> None:
        self.queue_incoming_pods.labels(queue=queue, event=event).inc(n)

    def cache(self, nodes: int, pods: int, assumed_pods: int) -> None:
        self.cache_size.labels(type="nodes").set(nodes)
        self.cache_size.labels(type="pods").set(pods)
        self.cache_size.labels(type="assumed_pods").set(assumed_pods)

    def unschedulable(self, plugin: str, profile: str, delta: int) -> None:
        self.unschedulable_pods.labels(plugin=plugin, profile=profile).inc(delta)

    def gc_pause(self, seconds: float, generation: int) -> None:
        """One collection of the Python GC (gcpolicy.GcPauses feeds this)."""
        self.gc_pauses.labels(generation=str(generation)).observe(seconds)

    # ---- Volcano ---------------------------------------------------------------------------
    def session(self, e2e_ms: float) -> None:
        self.v_e2e.observe(e2e_ms)

    def open_session(self, ms: float) -> None:
        self.v_open_session.observe(ms)

    def action(self, name: str, ms: float) -> None:
        self.v_action.labels(action=name).observe(ms)

    def session_plugin(self, plugin: str, on_session: str, ms: float) -> None:
        """on_session: OnSessionOpen | OnSessionClose."""
        self.v_plugin.labels(plugin=plugin, OnSession=on_session).observe(ms)

    def volcano_attempt(self, result: str, n: int = 1) -> None:
        """Volcano's pod schedule decisions (its labels: Success | Failure | Error)."""
        self.v_attempts.labels(result=result).inc(n)

    def volcano_preemption(self, victims: int) -> None:
        self.v_preemption_attempts.inc()
        self.v_preemption_victims.set(victims)

    def unschedule_tasks(self, job_id: str, n: int) -> None:
        """Unready tasks of one job (gang's OnSessionClose: minAvailable - ready, 0 once ready)."""
        self.v_unschedule_tasks.labels(job_id=job_id).set(n)

    def forget_jobs(self, job_ids) -> None:
        """Drop the series of jobs that are gone (Volcano's DeleteJobMetrics when a job is deleted)."""
        for job_id in job_ids:
            try:
                self.v_unschedule_tasks.remove(job_id)
            except KeyError:
                pass

    def unschedule_jobs(self, n: int) -> None:
        self.v_unschedule_jobs.set(n)

    # ---- exposition ------------------------------------------------------------------------
    def exposition(self) -> bytes:
        return generate_latest(self.registry)


__all__ = [
    "CONTENT_TYPE",
    "GC_PAUSE_BUCKETS",
    "PENDING_QUEUES",
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "SchedulerMetrics",
    "exponential_buckets",
    "exponential_buckets_range",
    "status_label",
]
