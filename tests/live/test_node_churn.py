"""Node churn in the live cache (no API server): the informer's initial LIST reaches the table
in one bulk call, heartbeats change nothing, real changes still reach the queue."""
from __future__ import annotations

from caldera.live.cache import ClusterCache
from caldera.live.informer import Informer

from .test_cache_unit import make_cache, node, pod


class NoApi:
    pass


def test_a_list_delivers_its_additions_in_one_call_and_watch_events_one_by_one():
    calls = []
    inf = Informer(NoApi(), "nodes", on_add=lambda o: calls.append(("add", o["metadata"]["name"])),
                   on_update=lambda a, b: calls.append(("update", b["metadata"]["name"])),
                   on_delete=lambda o: calls.append(("delete", o["metadata"]["name"])),
                   on_add_many=lambda objs: calls.append(("many", [o["metadata"]["name"] for o in objs])))
    plain = []
    inf.add_handlers(on_add=lambda o: plain.append(o["metadata"]["name"]))      # a set without bulk
    items = [{"metadata": {"name": n, "resourceVersion": "1"}} for n in ("a", "b", "c")]
    inf._replace(items, "1")
    assert calls == [("many", ["a", "b", "c"])] and plain == ["a", "b", "c"]
    calls.clear()
    # re-list: one new object, one changed, one gone -> adds (in bulk), updates, deletes
    inf._replace([{"metadata": {"name": n, "resourceVersion": rv}} for n, rv in (("a", "2"), ("b", "1"), ("d", "2"))],
                 "2")
    assert calls == [("many", ["d"]), ("update", "a"), ("delete", "c")]
    calls.clear()
    inf._apply("ADDED", {"metadata": {"name": "e", "resourceVersion": "3"}})
    assert calls == [("add", "e")]


def test_bulk_add_places_waiting_pods_and_moves_the_queue_once_per_node():
    cache, _ = make_cache()
    cache.on_pod_add(pod("early", "n2"))                 # the pod informer was faster
    assert cache.unplaced == {"n2": {"default/early"}}
    cache.on_node_add_many([node("n1"), node("n2", labels={"zone": "a"}), node("n1", cpu="8")])
    t = cache.table
    assert [n.name for n in t.nodes] == ["n1", "n2"] and t.layout_generation == 1
    assert t.alloc[0, 0] == 8000                          # listed twice: the later object
    assert t.node_of("default/early") == 1 and cache.unplaced == {}
    cache.on_node_add_many([node("n2", labels={"zone": "b"})])      # already there: an update
    assert t.nodes[1].labels == {"zone": "b"} and t.layout_generation == 1


def with_heartbeat(raw, second):
    raw["status"]["conditions"] = [{"type": "Ready", "status": "True",
                                    "lastHeartbeatTime": f"2025-01-01T00:00:{second:02d}Z"}]
    return raw


def test_heartbeat_changes_nothing_but_a_label_change_reaches_the_queue():
    cache, loop = make_cache()
    cache.on_node_add(with_heartbeat(node("n1", labels={"disk": "hdd"}), 0))
    p = pod("wants-ssd")
    p["spec"]["nodeSelector"] = {"disk": "ssd"}
    cache.on_pod_add(p)

    class Status:
        def unschedulable(self, p, msg, nominated=""):
            pass

    loop.status = Status()
    loop.schedule(loop.queue.pop())
    loop.writer.shutdown(wait=True)
    where = loop.queue.where("default/wants-ssd")
    assert where in ("unschedulable", "backoff")
    t = cache.table
    gens = (t.node_generation, t.node_log_end)
    cache.changed.clear()
    beat = with_heartbeat(node("n1", labels={"disk": "hdd"}), 10)
    cache.on_node_update(None, beat)
    assert (t.node_generation, t.node_log_end) == gens and not cache.changed.is_set()
    assert t.nodes[0].raw is beat and loop.queue.where("default/wants-ssd") == where
    cache.on_node_update(None, with_heartbeat(node("n1", labels={"disk": "ssd"}), 20))
    assert t.node_generation == gens[0] + 1 and cache.changed.is_set()
    assert t.label_values("disk").tolist() == ["ssd"]
    assert loop.queue.where("default/wants-ssd") in ("active", "backoff")


def test_cache_without_queue_accepts_updates():
    cache = ClusterCache(["caldera"])
    cache.on_node_add_many([node("n1"), node("n2")])
    cache.on_node_update(None, node("n2", cpu="2", taints=[{"key": "k", "effect": "NoSchedule"}]))
    assert cache.table.alloc[1, 0] == 2000 and cache.table.free[0, 1] == 2000
    assert cache.table.node_log[-1][0] == 1
