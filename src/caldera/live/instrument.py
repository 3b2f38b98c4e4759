"""Timing of extension points and plugins for the live scheduler's metrics
(scheduler_framework_extension_point_duration_seconds, scheduler_plugin_execution_duration_seconds).

The engine itself carries no timing code: `instrument(framework, metrics)` wraps the framework's
run_* methods and the plugins' extension-point methods on those instances only, so `caldera
schedule` and the benchmarks pay nothing. As kube does, plugin durations are recorded for a
sample of scheduling cycles (metrics.sample_plugins()); extension points for every cycle; and
scheduler_plugin_evaluation_total on every call, as kube's instrumented plugins count it: PreFilter
and PreScore once per pod unless the plugin returns Skip, Filter and Score once per node (a
vectorised call over k nodes counts k).
"""
from __future__ import annotations

import functools
import time

from ..framework.status import Status

EXTENSION_POINTS = {"run_pre_filter": "PreFilter", "run_filters": "Filter", "run_post_filter": "PostFilter",
                    "run_scores": "Score", "run_reserve": "Reserve", "run_permit": "Permit",
                    "run_pre_bind": "PreBind", "run_bind": "Bind", "run_post_bind": "PostBind"}
PLUGIN_METHODS = {"pre_filter": "PreFilter", "filter": "Filter", "filter_node": "Filter",
                  "post_filter": "PostFilter", "pre_score": "PreScore", "score": "Score",
                  "normalize_score": "NormalizeScore", "reserve": "Reserve", "permit": "Permit",
                  "pre_bind": "PreBind", "bind": "Bind"}
_PER_POD = {"pre_filter", "pre_score"}          # evaluated once per pod unless Skip
_PER_NODE = {"filter", "score"}                 # vectorised: args (state, pod, table, rows)


def _status_of(result):
    if isinstance(result, Status):
        return result
    if isinstance(result, tuple):
        for x in result:
            if isinstance(x, Status):
                return x
    return None


class _Sampling:
    """Whether the current cycle records plugin durations (decided once per PreFilter)."""
    __slots__ = ("on",)

    def __init__(self):
        self.on = False


def instrument(fw, metrics, tracer=None) -> None:
    """Wrap fw's extension points (metrics, and a child span each when `tracer` is given: see
    tracing.py) and, with metrics, its plugins' methods."""
    if tracer is not None:
        _trace_extension_points(fw, tracer)
    if metrics is None:
        return
    sampling = _Sampling()
    profile = fw.profile_name
    clock = time.perf_counter

    for meth, ep in EXTENSION_POINTS.items():
        orig = getattr(fw, meth, None)
        if orig is None:
            continue

        @functools.wraps(orig)
        def timed(*a, __orig=orig, __ep=ep, **k):
            if __ep == "PreFilter":
                sampling.on = metrics.sample_plugins()
            t = clock()
            r = __orig(*a, **k)
            metrics.extension_point(__ep, _status_of(r), profile, clock() - t)
            return r
        setattr(fw, meth, timed)

    from ..framework.interface import Plugin
    for name, plugin in fw.instances.items():
        for meth, ep in PLUGIN_METHODS.items():
            base = getattr(Plugin, meth, None)
            own = getattr(type(plugin), meth, None)
            if own is None or own is base:
                continue
            orig = getattr(plugin, meth)
            evaluated = None
            if meth in _PER_POD or meth in _PER_NODE or meth == "filter_node":
                evaluated = metrics.plugin_evaluation.labels(plugin=name, extension_point=ep, profile=profile)

            @functools.wraps(orig)
            def timed_plugin(*a, __orig=orig, __ep=ep, __name=name, __meth=meth, __eval=evaluated, **k):
                if __eval is not None and __meth in _PER_NODE:
                    rows = a[3] if len(a) > 3 else k.get("idx")
                    __eval.inc(getattr(rows, "size", 1))
                elif __eval is not None and __meth == "filter_node":
                    __eval.inc()
                if not sampling.on:
                    r = __orig(*a, **k)
                else:
                    t = clock()
                    r = __orig(*a, **k)
                    metrics.plugin(__name, __ep, _status_of(r), clock() - t)
                if __eval is not None and __meth in _PER_POD:
                    s = _status_of(r)
                    if s is None or not s.is_skip():
                        __eval.inc()
                return r
            setattr(plugin, meth, timed_plugin)


def _trace_extension_points(fw, tracer) -> None:
    """One span per extension point run, a child of the current (SchedulingCycle) span; a status
    other than Success is recorded as the span's `caldera.status` attribute."""
    for meth, ep in EXTENSION_POINTS.items():
        orig = getattr(fw, meth, None)
        if orig is None:
            continue

        @functools.wraps(orig)
        def traced(*a, __orig=orig, __ep=ep, **k):
            with tracer.start_as_current_span(__ep) as span:
                r = __orig(*a, **k)
                s = _status_of(r)
                if s is not None and not s.is_success():
                    span.set_attribute("caldera.status", str(s.code))
                return r
        setattr(fw, meth, traced)
