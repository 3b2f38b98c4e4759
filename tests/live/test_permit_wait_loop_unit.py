"""`caldera run`'s scheduling loop with Permit Wait and Coscheduling (no API server: a fake binder
and status writer, as test_loop_metrics_unit.py): waiting pods do not block the loop, the pod
completing the quorum releases the others to the binder, a PostFilter rejection / a timeout / a
deletion unreserves and requeues them with their FailedScheduling message; a gang that only
partly fits is retried as kube-scheduler + scheduler-plugins retry it (at once without
podGroupBackoffSeconds; with it, a bounded number of attempts over simulated time)."""
from __future__ import annotations

from typing import ClassVar

import yaml

from caldera.api.podgroup import PodGroup
from caldera.config.decode import decode_kube_config
from caldera.framework.interface import Plugin
from caldera.framework.status import Code, Status
from caldera.live.cache import ClusterCache
from caldera.live.loop import KubeLoop
from caldera.live.xpodgroups import XPodGroups
from caldera.plugins.registry import build_registry

from .test_cache_unit import node, pod
from .test_loop_metrics_unit import FakeStatus

CONF = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: caldera
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
      disabled: [{name: PrioritySort}]
  pluginConfig:
  - name: Coscheduling
    args: {podGroupRejectPercentage: %d, permitWaitingTimeSeconds: 30, podGroupBackoffSeconds: %d}
"""


def make_loop(nodes, reject_pct=10, backoff=0):
    bound = []

    class Binder:
        in_flight: ClassVar[set] = set()

        def __init__(self, requeue, on_bound):
            self.requeue, self.on_bound = requeue, on_bound

        def submit(self, p, n):
            cache.assume(p, n)
            bound.append((p.name, n))
            return True

        def shutdown(self, timeout=0):
            pass

    cfg = decode_kube_config(yaml.safe_load(CONF % (reject_pct, backoff)), "conf.yaml", build_registry())
    cache = ClusterCache(["caldera"])
    status = FakeStatus()
    loop = KubeLoop(cfg, cache, binder_factory=lambda **kw: Binder(**kw), status=status)
    now = [1000.0]
    loop.scheduler.clock = loop.queue.clock = lambda: now[0]
    for i in range(nodes):
        cache.on_node_add(node(f"n{i}"))
    xpg = XPodGroups(loop.scheduler.pod_groups, cache)
    xpg.on_add({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": "gang", "namespace": "default"}, "spec": {"minMember": 4}})
    for i in range(4):
        raw = pod(f"w{i}", cpu="3")
        raw["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "gang"}
        cache.on_pod_add(raw)
    return cache, loop, status, bound, now


def run_all(loop, cycles: int = 200) -> int:
    """Schedule until the queue has nothing to pop now, at most `cycles` attempts (the clock stands
    still); returns the number of attempts."""
    n = 0
    while n < cycles:
        with loop.cache.lock:
            if loop._waiting:
                loop._finish_waiting(expire=True)
            qpi = loop.queue.pop()
        if qpi is None:
            break
        loop.schedule(qpi)
        n += 1
    for f in list(loop.pending_writes.values()):
        f.result(timeout=5)
    return n


def run_for(loop, now, seconds: int, cycles: int = 200) -> int:
    """KubeLoop.run over simulated time: every second, the turn's waiting-pod timeouts and queue
    flushes, then every pod there is to pop now. Returns the number of attempts."""
    n = 0
    for _ in range(seconds):
        with loop.cache.lock:
            loop.queue.flush_backoff_completed()
            loop.queue.flush_unschedulable_leftover()
        n += run_all(loop, cycles)
        now[0] += 1
    return n


def unschedulable(loop, status):
    loop.writer.shutdown(wait=True)
    return {a[0].name: a[1] for c, a in status.calls if c == "unschedulable"}


def test_waiting_pods_bind_when_the_quorum_is_reached():
    _, loop, status, bound, _ = make_loop(4)
    run_all(loop)
    assert sorted(p for p, _ in bound) == ["w0", "w1", "w2", "w3"] and not loop._waiting
    assert not loop.scheduler.waiting_pods and unschedulable(loop, status) == {}


# v1.35's FailedScheduling texts: the PostFilter plugins' reasons joined, DynamicResources' first
INSUFFICIENT = ("0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes "
                "are available: 3 No preemption victims found for incoming pod.")
REJECTED_W3 = "PodGroup default/gang gets rejected due to Pod w3 is unschedulable even after PostFilter"
BACKED_OFF_W3 = ("0/3 nodes are available: podGroup default/gang failed recently. no new claims to deallocate, "
                 "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling., " + REJECTED_W3)


def test_postfilter_rejects_the_waiting_pods():
    """w3 finds no node: Coscheduling's PostFilter rejects the three waiting pods and backs the group
    off (podGroupBackoffSeconds). Forgetting them (an assigned-pod delete) moves w3 to backoffQ and,
    activeQ being empty, it is popped at once (SchedulerPopFromBackoffQ): PreFilter refuses it while
    the group backs off. Everything then waits in the unschedulable pool: no retry at once."""
    cache, loop, status, bound, _ = make_loop(3, backoff=10)
    assert run_all(loop) == 5
    assert bound == [] and not loop._waiting and not cache.assumed and not loop.scheduler.waiting_pods
    msgs = unschedulable(loop, status)
    assert msgs["w0"] == msgs["w1"] == msgs["w2"] == "0/1 nodes are available: 1 optimistic rejection in PostFilter."
    assert msgs["w3"] == BACKED_OFF_W3
    w3 = [m for c, (p, m, *_) in status.calls if c == "unschedulable" and p.name == "w3"]
    assert w3 == [INSUFFICIENT + ", " + REJECTED_W3, BACKED_OFF_W3]
    assert all(cache.table.node_of(f"default/w{i}") is None for i in range(4))
    assert all(loop.queue.where(f"default/w{i}") == "unschedulable" for i in range(4))


def test_without_group_backoff_the_gang_is_retried_at_once():
    """podGroupBackoffSeconds 0 (the default): as in kube-scheduler v1.35 with scheduler-plugins,
    the pod that found no node is back in backoffQ after the waiting pods are forgotten and popped
    at once (activeQ is empty); it waits and, the group's first waiting pod, activates its
    siblings: the group is tried again without the clock moving (what the backoff is for)."""
    _, loop, status, bound, _ = make_loop(3)
    assert run_all(loop, cycles=40) == 40 and bound == []
    tried = [c for c in status.calls if c[0] == "unschedulable"]
    assert {p.name for _, (p, *_) in tried} == {"w0", "w1", "w2", "w3"}


def test_timeout_unreserves_and_requeues():
    """podGroupRejectPercentage 30: w3's PostFilter leaves the three waiting pods be; their 30 s
    timeout rejects them. The forgets move w3 (rejected by NodeResourcesFit) to activeQ: it waits,
    activates its siblings, two of them wait and the last finds no node, until the next timeout."""
    cache, loop, status, bound, now = make_loop(3, reject_pct=30)
    assert run_all(loop) == 4
    assert sorted(loop._waiting) == ["default/w0", "default/w1", "default/w2"]
    assert sorted(cache.assumed) == ["default/w0", "default/w1", "default/w2"]
    now[0] += 29
    assert run_all(loop) == 0 and len(loop._waiting) == 3
    now[0] += 1
    assert run_all(loop) == 4
    assert bound == [] and sorted(loop._waiting) == ["default/w0", "default/w1", "default/w3"]
    assert sorted(cache.assumed) == sorted(loop._waiting)
    msgs = unschedulable(loop, status)
    timeout = "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin Coscheduling."
    assert msgs["w0"] == msgs["w1"] == timeout and msgs["w2"] == msgs["w3"] == INSUFFICIENT
    assert cache.table.node_of("default/w2") is None


def test_partly_fitting_gang_takes_bounded_attempts_and_binds_when_a_node_comes():
    """A gang of 4 where 3 fit, podGroupBackoffSeconds 10: a round is 5 attempts (3 waits, the 4th
    pod's failure, its retry refused by PreFilter while the group backs off); the pods, rejected by
    Coscheduling (which registers Pod/Add and PodGroup events only), wait for the unschedulable
    pool's 5-minute flush. A new node does not move them either: the next flush binds all four."""
    cache, loop, _, bound, now = make_loop(3, backoff=10)
    assert run_for(loop, now, 301) == 5                 # t = 1000 .. 1300
    assert run_for(loop, now, 1) == 5 and bound == []   # t = 1301: the leftover flush, a new round
    assert run_for(loop, now, 298) == 0                 # t = 1302 .. 1599
    cache.on_node_add(node("n3"))
    assert run_for(loop, now, 2) == 0 and bound == []   # t = 1600, 1601
    assert run_for(loop, now, 1) == 4                   # t = 1602: the flush; all four fit
    assert sorted(p for p, _ in bound) == ["w0", "w1", "w2", "w3"] and not loop._waiting
    assert sorted(n for _, n in bound) == ["n0", "n1", "n2", "n3"]


def test_deleting_a_waiting_pod_rejects_it():
    cache, loop, status, bound, _ = make_loop(3, reject_pct=30)
    run_all(loop)
    cache.on_pod_delete(pod("w0"))
    run_all(loop)
    assert "default/w0" not in loop._waiting and loop.scheduler.waiting_pods.get("uid-w0") is None
    # Coscheduling's Unreserve of w0 rejected its siblings
    assert not {"default/w1", "default/w2"} & set(loop._waiting) and bound == []
    assert unschedulable(loop, status)["w1"] == "0/1 nodes are available: 1 rejection in Unreserve."


def test_bad_podgroup_is_skipped_with_a_warning():
    warned = []
    cache = ClusterCache(["caldera"], on_warning=warned.append)
    groups: dict[str, PodGroup] = {}
    XPodGroups(groups, cache).on_add({"metadata": {"name": "g"}, "spec": {"minMember": -1}})
    assert groups == {} and "spec.minMember" in warned[0]


class Hold(Plugin):
    """A Permit plugin that makes every pod wait 10 s and asks to hear of assigned-pod deletes."""
    name = "Hold"

    def permit(self, state, pod, node_name):
        return Status(Code.WAIT, timeout=10)

    def events_to_register(self):
        return ["Pod/Delete"]


class NoBinder:
    in_flight: ClassVar[set] = set()

    def submit(self, p, n):
        raise AssertionError(f"{p.key} was not to be bound")

    def shutdown(self, timeout=0):
        pass


HOLD_CONF = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: caldera
  plugins:
    multiPoint:
      enabled: [{name: Hold}]
"""


def test_a_rejected_pods_own_forget_does_not_requeue_it():
    """handleBindingCycleError: forgetting a pod rejected at WaitOnPermit is an assigned-pod delete
    raised after the pod is handed back, for the other pods only: a rejecting plugin registered for
    that event does not move its own pod to backoffQ (it stays in the unschedulable pool)."""
    reg = build_registry({"Hold": Hold})
    cfg = decode_kube_config(yaml.safe_load(HOLD_CONF), "conf.yaml", reg)
    cache = ClusterCache(["caldera"])
    loop = KubeLoop(cfg, cache, binder_factory=lambda **kw: NoBinder(), status=FakeStatus(), registry=reg)
    now = [1000.0]
    loop.scheduler.clock = loop.queue.clock = lambda: now[0]
    cache.on_node_add(node("n0"))
    cache.on_pod_add(pod("a", cpu="1"))
    assert run_all(loop) == 1 and list(loop._waiting) == ["default/a"]
    now[0] += 10
    assert run_all(loop) == 0
    assert loop.queue.where("default/a") == "unschedulable" and not cache.assumed
    assert loop.queue.get("default/a").unschedulable_plugins == {"Hold"}
