"""Timing of extension points and plugins for the live scheduler's metrics
(scheduler_framework_extension_point_duration_seconds, scheduler_plugin_execution_duration_seconds).

The engine itself carries no timing code: `instrument(framework, metrics)` wraps the framework's
run_* methods and the plugins' extension-point methods on those instances only, so `caldera
schedule` and the benchmarks pay nothing. As kube does, plugin durations are recorded for a
sample of scheduling cycles (metrics.sample_plugins()); extension points for every cycle.
"""
from __future__ import annotations

import functools
import time

from ..framework.status import Status

EXTENSION_POINTS = {"run_pre_filter": "PreFilter", "run_filters": "Filter", "run_post_filter": "PostFilter",
                    "run_scores": "Score", "run_reserve": "Reserve", "run_permit": "Permit",
                    "run_pre_bind": "PreBind", "run_bind": "Bind", "run_post_bind": "PostBind"}
PLUGIN_METHODS = {"pre_filter": "PreFilter", "filter": "Filter", "post_filter": "PostFilter",
                  "pre_score": "PreScore", "score": "Score", "normalize_score": "NormalizeScore",
                  "reserve": "Reserve", "permit": "Permit", "pre_bind": "PreBind", "bind": "Bind"}


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


def instrument(fw, metrics) -> None:
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

            @functools.wraps(orig)
            def timed_plugin(*a, __orig=orig, __ep=ep, __name=name, **k):
                if not sampling.on:
                    return __orig(*a, **k)
                t = clock()
                r = __orig(*a, **k)
                metrics.plugin(__name, __ep, _status_of(r), clock() - t)
                return r
            setattr(plugin, meth, timed_plugin)
