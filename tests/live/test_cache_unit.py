"""ClusterCache: informer events become NodeTable rows/pods and SchedulingQueue entries, with
assumed pods kept on their node until the watch confirms the bind (no API server needed)."""
from __future__ import annotations

import time
from typing import ClassVar

from caldera.api.objects import Node
from caldera.config.defaults import default_config
from caldera.framework.queue import node_update_events
from caldera.live.cache import ClusterCache
from caldera.plugins.registry import build_registry


def node(name, cpu="4", labels=None, taints=None, unschedulable=False):
    spec = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name, node_name="", cpu="1", scheduler="caldera", phase="Pending", ns="default"):
    spec = {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x",
                                                        "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"}, "spec": spec,
            "status": {"phase": phase}}


def make_cache():
    from caldera.live.loop import KubeLoop

    class FakeBinder:
        in_flight: ClassVar[set] = set()

        def __init__(self, **kw):
            self.kw = kw

        def submit(self, pod, node):
            cache.assume(pod, node)
            return True

        def shutdown(self, timeout=0):
            pass

    cfg = default_config(build_registry())
    cfg.profiles[0].scheduler_name = "caldera"
    cache = ClusterCache(["caldera"])
    loop = KubeLoop(cfg, cache, binder_factory=lambda **kw: FakeBinder(**kw), status=None)
    return cache, loop


def test_nodes_and_assigned_pods_go_into_the_table():
    cache, _ = make_cache()
    cache.on_node_add(node("n1"))
    cache.on_pod_add(pod("running", "n1"))
    t = cache.table
    assert t.index == {"n1": 0}
    assert t.node_of("default/running") == 0
    assert t.req[0, t.res_index["cpu"]] == 1000
    # a pod delivered before its node lands when the node arrives
    cache.on_pod_add(pod("early", "n2"))
    cache.on_node_add(node("n2"))
    assert t.node_of("default/early") == t.index["n2"]
    # a node that goes away and comes back gets its pods back
    cache.on_node_delete(node("n2"))
    assert t.node_of("default/early") is None
    cache.on_node_add(node("n2"))
    assert t.node_of("default/early") == t.index["n2"]
    cache.on_pod_delete(pod("running", "n1"))
    assert t.node_of("default/running") is None and t.req[0, t.res_index["cpu"]] == 0


def test_pending_pods_of_our_scheduler_are_queued_others_are_not():
    cache, loop = make_cache()
    cache.on_node_add(node("n1"))
    cache.on_pod_add(pod("mine"))
    cache.on_pod_add(pod("theirs", scheduler="default-scheduler"))
    assert loop.queue.where("default/mine") == "active"
    assert loop.queue.where("default/theirs") is None


def test_scheduling_assumes_then_the_watch_confirms():
    cache, loop = make_cache()
    cache.on_node_add(node("n1"))
    cache.on_pod_add(pod("p"))
    qpi = loop.queue.pop()
    loop.schedule(qpi)
    assert cache.assumed == {"default/p": "n1"}
    assert cache.table.node_of("default/p") == 0
    # a stale update (still unbound) does not requeue an assumed pod
    cache.on_pod_update(None, pod("p"))
    assert loop.queue.where("default/p") is None
    # the watch shows it bound: confirmed, still on n1 once
    cache.on_pod_update(None, pod("p", "n1"))
    assert cache.assumed == {}
    assert cache.table.node_of("default/p") == 0
    assert len(cache.table.pods[0]) == 1


def test_forget_takes_the_pod_off_its_node():
    cache, loop = make_cache()
    cache.on_node_add(node("n1"))
    cache.on_pod_add(pod("p"))
    loop.schedule(loop.queue.pop())
    p = cache.pods["default/p"]
    cache.forget(p)
    assert cache.table.node_of("default/p") is None and cache.assumed == {}
    loop._requeue(p)
    assert loop.queue.where("default/p") == "active"


def test_unschedulable_pod_waits_for_a_node_event():
    cache, loop = make_cache()
    cache.on_node_add(node("n1", cpu="1"))
    cache.on_pod_add(pod("big", cpu="2"))

    class Status:
        calls: ClassVar[list] = []

        def unschedulable(self, p, msg, nominated=""):
            self.calls.append((p.key, msg))

    loop.status = Status()
    loop.schedule(loop.queue.pop())
    loop.writer.shutdown(wait=True)
    assert Status.calls == [("default/big", "0/1 nodes are available: 1 Insufficient cpu. "
                             "no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not "
                             "helpful for scheduling.")]
    assert loop.queue.where("default/big") in ("unschedulable", "backoff")
    cache.on_node_update(None, node("n1", cpu="4"))      # allocatable grew
    time.sleep(0.01)
    assert loop.queue.where("default/big") in ("active", "backoff")


def test_node_update_events_name_what_changed():
    a = Node(node("n", labels={"a": "1"}))
    b = Node(node("n", labels={"a": "2"}, cpu="8"))
    assert set(node_update_events(a, b)) == {"Node/UpdateNodeAllocatable", "Node/UpdateNodeLabel"}
    c = Node(node("n", labels={"a": "1"}, unschedulable=True))
    assert node_update_events(a, c) == ["Node/UpdateNodeTaint"]


def test_extension_point_and_plugin_metrics_are_recorded():
    from prometheus_client import generate_latest

    from caldera.live.instrument import instrument
    from caldera.live.metrics import SchedulerMetrics

    cache, loop = make_cache()
    m = SchedulerMetrics(sample_percent=100)
    for fw in loop.scheduler.frameworks.values():
        instrument(fw, m)
    cache.on_node_add(node("n1"))
    cache.on_pod_add(pod("p"))
    loop.schedule(loop.queue.pop())
    text = generate_latest(m.registry).decode()
    assert ('scheduler_framework_extension_point_duration_seconds_count'
            '{extension_point="Filter",profile="caldera",status="Success"} 1.0') in text
    assert ('scheduler_plugin_execution_duration_seconds_count'
            '{extension_point="Filter",plugin="NodeResourcesFit",status="Success"}') in text
    assert 'extension_point="Bind"' in text


def test_loop_queue_takes_the_config_backoffs_and_every_profiles_hints():
    from caldera.config.types import Profile
    from caldera.live.loop import KubeLoop

    reg = build_registry()
    cfg = default_config(reg)
    cfg.profiles[0].scheduler_name = "caldera"
    cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds = 3.0, 40.0
    # a second profile with NodePorts, which the first one does not run at any point
    second = Profile(scheduler_name="other", plugins={k: list(v) for k, v in cfg.profiles[0].plugins.items()})
    cfg.profiles[0].plugins = {k: [r for r in v if r.name != "NodePorts"] for k, v in cfg.profiles[0].plugins.items()}
    assert any(r.name == "NodePorts" for r in second.plugins["filter"])
    cfg.profiles.append(second)
    cache = ClusterCache(["caldera", "other"])

    class Binder:
        in_flight: ClassVar[set] = set()

        def __init__(self, **kw):
            pass

    loop = KubeLoop(cfg, cache, binder_factory=lambda **kw: Binder(**kw), status=None)
    q = loop.queue
    assert (q.initial_backoff, q.max_backoff) == (3.0, 40.0)
    assert "NodePorts" not in loop.scheduler.default_framework.instances
    assert q.hints.queues("NodePorts", "Pod/Delete")


def test_pods_waiting_for_their_node_are_forgotten_when_deleted_or_moved():
    cache, _ = make_cache()
    cache.on_pod_add(pod("early", "ghost"))
    cache.on_pod_add(pod("moved", "ghost"))
    assert cache.unplaced == {"ghost": {"default/early", "default/moved"}}
    cache.on_pod_delete(pod("early", "ghost"))
    cache.on_pod_update(None, pod("moved", "ghost", phase="Succeeded"))
    assert cache.unplaced == {}


def test_batch_loop_forgets_memos_of_pods_and_podgroups_that_are_gone():
    import yaml

    from caldera.batch.actions import ACTIONS
    from caldera.batch.conf import parse_volcano_conf
    from caldera.batch.plugins import PLUGINS
    from caldera.live.loop import BatchLoop

    conf = parse_volcano_conf(yaml.safe_load('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n'),
                              "t.conf", ACTIONS, PLUGINS)
    cache = ClusterCache(["volcano"])
    loop = BatchLoop(conf, cache, binder_factory=lambda **kw: None, status=None)
    cache.on_pod_add(pod("p", scheduler="volcano"))
    loop._pod_msgs = {"default/p": "m", "default/gone": "m"}
    loop._pg_status = {"default/gone-pg": ()}
    loop._prune_memos()
    assert loop._pod_msgs == {"default/p": "m"} and loop._pg_status == {}
