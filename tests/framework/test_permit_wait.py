"""Permit Wait: the framework's RunPermitPlugins / WaitOnPermit and the waiting pods map.

Ported from kube v1.35.4 pkg/scheduler/framework/runtime/framework_test.go TestPermitPlugins and
TestWaitOnPermit (same cases, same statuses), plus the timeout message and cap of
waiting_pods_map.go and the engine's binding cycle around a waiting pod."""
from __future__ import annotations

import pytest

from caldera.config.types import PluginRef, Profile, SchedulerConfig
from caldera.engine.scheduler import Scheduler
from caldera.framework.interface import CycleState, Plugin
from caldera.framework.status import Code, Status
from caldera.framework.waiting import MAX_PERMIT_TIMEOUT, WaitingPod, go_duration
from caldera.plugins.registry import build_registry

from ..builders import make_node, make_pod, make_table

INJECT_REASON = "injected status"


def _permit_plugin(name: str, code: Code | None, timeout: float = 0.0):
    class P(Plugin):
        calls = 0

        def permit(self, state, pod, node):
            type(self).calls += 1
            if code is None:
                return None
            if code == Code.ERROR:
                return Status.error(INJECT_REASON)
            if code == Code.WAIT:
                return Status(Code.WAIT, timeout=timeout)
            return Status(code, INJECT_REASON)
    P.name = name
    return P


def _scheduler(plugins, table=None, extra=None):
    reg = build_registry(third_party=False)
    for p in plugins:
        reg[p.name] = p
    reg.update(extra or {})
    pl = {"queueSort": [PluginRef("PrioritySort")], "bind": [PluginRef("DefaultBinder")],
          "permit": [PluginRef(p.name) for p in plugins], "preFilter": [PluginRef("NodeResourcesFit")],
          "filter": [PluginRef("NodeResourcesFit")]}
    for p in (extra or {}):
        pl.setdefault("reserve", []).append(PluginRef(p))
    cfg = SchedulerConfig(profiles=[Profile(plugins=pl)])
    return Scheduler(cfg, table if table is not None else make_table([make_node("n1")]), reg)


@pytest.mark.parametrize("codes,want,plugin", [
    ([], Status(), ""),
    ([Code.SUCCESS], Status(), ""),
    ([Code.UNSCHEDULABLE], Status(Code.UNSCHEDULABLE, INJECT_REASON), "TestPlugin"),
    ([Code.ERROR], Status.error(f'running Permit plugin "TestPlugin": {INJECT_REASON}'), "TestPlugin"),
    ([Code.UNSCHEDULABLE_AND_UNRESOLVABLE], Status.unresolvable(INJECT_REASON), "TestPlugin"),
    ([Code.WAIT], Status(Code.WAIT, 'one or more plugins asked to wait and no plugin rejected pod ""'), ""),
    ([Code.SUCCESS, Code.SUCCESS], Status(), ""),
    ([Code.ERROR, Code.ERROR], Status.error(f'running Permit plugin "TestPlugin": {INJECT_REASON}'), "TestPlugin"),
], ids=["NilPermitPlugin", "SuccessPermitPlugin", "UnschedulablePermitPlugin", "ErrorPermitPlugin",
        "UnschedulableAndUnresolvablePermitPlugin", "WaitPermitPlugin", "SuccessSuccessPermitPlugin",
        "ErrorAndErrorPlugins"])
def test_permit_plugins(codes, want, plugin):
    """TestPermitPlugins (the pod of the Go test has no name: "" in the Wait message)."""
    plugins = [_permit_plugin("TestPlugin" + (f" {i}" if i else ""), None if c == Code.SUCCESS else c)
               for i, c in enumerate(codes)]
    sched = _scheduler(plugins)
    pod = make_pod("x")
    pod.name = ""
    got = sched.default_framework.run_permit(CycleState(), pod, "n1")
    assert got == want and got.code == want.code
    assert got.plugin == plugin
    if codes == [Code.ERROR, Code.ERROR]:
        assert plugins[1].calls == 0           # the first error stops


@pytest.mark.parametrize("action,want", [
    (lambda wp: wp.reject("permitPlugin", "reject message"), Status(Code.UNSCHEDULABLE, "reject message")),
    (lambda wp: wp.allow("permitPlugin"), Status()),
], ids=["Reject Waiting Pod", "Allow Waiting Pod"])
def test_wait_on_permit(action, want):
    """TestWaitOnPermit: a waiting pod is rejected / allowed through GetWaitingPod."""
    sched = _scheduler([_permit_plugin("permitPlugin", Code.WAIT, 10)])
    fw = sched.default_framework
    pod = make_pod("pod", uid="pod")
    assert fw.run_permit(CycleState(), pod, "").code == Code.WAIT
    wp = fw.handle.get_waiting_pod("pod")
    assert wp is not None and fw.wait_on_permit(pod) is None       # still waiting
    action(wp)
    got = fw.wait_on_permit(pod)
    assert got == want and got.code == want.code
    assert got.plugin == ("permitPlugin" if want.code != Code.SUCCESS else "")
    assert fw.handle.get_waiting_pod("pod") is None                 # it left the map


def test_allowed_only_when_every_waiting_plugin_allows():
    sched = _scheduler([_permit_plugin("A", Code.WAIT, 5), _permit_plugin("B", Code.WAIT, 20)])
    fw = sched.default_framework
    pod = make_pod("p")
    fw.run_permit(CycleState(), pod, "n1")
    wp = sched.waiting_pods.get(pod.uid)
    assert sorted(wp.get_pending_plugins()) == ["A", "B"]
    wp.allow("A")
    assert wp.outcome is None
    wp.allow("B")
    assert wp.outcome == Status()
    wp.reject("A", "late")               # only the first outcome counts
    assert wp.outcome.is_success()


def test_timeout_is_capped_and_rejects_with_go_duration():
    sched = _scheduler([_permit_plugin("A", Code.WAIT, 3600), _permit_plugin("B", Code.WAIT, 10)])
    now = [100.0]
    sched.clock = lambda: now[0]
    pod = make_pod("p")
    sched.default_framework.run_permit(CycleState(), pod, "n1")
    wp = sched.waiting_pods.get(pod.uid)
    assert wp.pending == {"A": MAX_PERMIT_TIMEOUT, "B": 10.0}
    assert sched.waiting_pods.next_deadline() == 110.0
    now[0] = 109.9
    sched.expire_waiting(now[0])
    assert wp.outcome is None
    sched.expire_waiting(110.0)
    assert wp.outcome == Status.unschedulable("rejected due to timeout after waiting 10s at plugin B")
    assert wp.outcome.plugin == "B"


@pytest.mark.parametrize("seconds,want", [(10, "10s"), (60, "1m0s"), (900, "15m0s"), (1.5, "1.5s"),
                                          (3600, "1h0m0s"), (0.25, "250ms"), (0, "0s")])
def test_go_duration(seconds, want):
    assert go_duration(seconds) == want


def test_engine_keeps_reservation_and_binds_on_allow():
    """A waiting pod stays assumed on its node (its resources are taken) until allowed."""
    sched = _scheduler([_permit_plugin("W", Code.WAIT, 30)], make_table([make_node("n1", cpu="2")]))
    sched.permit_waits = True
    a = make_pod("a", cpu="2")
    att = sched.schedule_one(a)
    assert att.waiting == "n1" and not att.scheduled and att.pending_plugins == ["W"]
    assert sched.table.node_of(a.key) == 0
    b = make_pod("b", cpu="1")
    assert not sched.schedule_one(b).scheduled          # a's reservation holds
    sched.waiting_pods.get(a.uid).allow("W")
    done = sched.resolve_waiting()
    assert [d.pod.key for d in done] == [a.key] and done[0].node == "n1" and a.node_name == "n1"
    assert not sched.waiting_pods


def test_engine_unreserves_on_reject():
    unreserved = []

    class R(Plugin):
        name = "R"

        def reserve(self, state, pod, node):
            return None

        def unreserve(self, state, pod, node):
            unreserved.append((pod.key, node))

    sched = _scheduler([_permit_plugin("W", Code.WAIT, 30)], make_table([make_node("n1", cpu="2")]),
                       extra={"R": R})
    sched.permit_waits = True
    a = make_pod("a", cpu="2")
    sched.schedule_one(a)
    assert sched.default_framework.handle.reject_waiting_pod(a.uid)
    (att,) = sched.resolve_waiting()
    assert not att.scheduled and att.message == "0/1 nodes are available: 1 removed."
    assert unreserved == [(a.key, "n1")] and sched.table.node_of(a.key) is None
    assert not sched.default_framework.handle.reject_waiting_pod(a.uid)


def test_driver_without_waiting_treats_wait_as_approval():
    sched = _scheduler([_permit_plugin("W", Code.WAIT, 30)])
    att = sched.schedule_one(make_pod("a"))
    assert att.scheduled and not sched.waiting_pods


def test_waiting_pod_repr_and_deadline():
    wp = WaitingPod(make_pod("a"), "n", {}, started=5.0)
    assert wp.deadline() == float("inf") and "default/a" in repr(wp)
