"""A long churn run through `caldera run`'s cache and scheduling loop: pods created, scheduled,
bound and deleted, N of them, with a share that cannot fit (they wait in the unschedulable pool
with a FailedScheduling message, then are deleted). Prints the process's resident memory at the
start, after a warm-up and at the end, and what the cache, queue and loop still hold: a run that
leaks grows with N.

    python -m benchmarks.churn_memory                  # 100,000 pods over 1,000 nodes
    python -m benchmarks.churn_memory --pods 20000

The loop is driven in-process (the informer's event handlers, the loop's schedule step, a binder
that answers at once), without an API server: what is measured is Caldera's own state. Not a
test: tests/live/test_churn_memory_unit.py runs a smaller one and asserts that everything is
released.
"""
from __future__ import annotations

import argparse
import gc
import os
import time
from typing import Any, ClassVar

from caldera.config.defaults import default_config
from caldera.live.cache import ClusterCache
from caldera.live.loop import KubeLoop
from caldera.plugins.registry import build_registry

SCHEDULER = "caldera"


def node_doc(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod_doc(i: int, cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": f"p{i}", "namespace": "churn", "uid": f"uid-{i:08d}-0000-0000-0000-000000000000"},
            "spec": {"schedulerName": SCHEDULER, "containers": [{"name": "c", "image": "x",
                                                                  "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Pending"}}


class _Status:
    """The status writer's interface, counting instead of writing."""
    def __init__(self) -> None:
        self.writes = 0

    def __getattr__(self, name: str):
        def write(*a: Any) -> None:
            self.writes += 1
        return write


def build(nodes: int) -> tuple[ClusterCache, KubeLoop]:
    cache: ClusterCache

    class Binder:
        in_flight: ClassVar[set] = set()

        def __init__(self, requeue, on_bound):
            self.on_bound = on_bound

        def submit(self, p, n, devices=None):
            cache.assume(p, n)
            self.on_bound(p, n)
            return True

        def shutdown(self, timeout: float = 0) -> None:
            pass

    cfg = default_config(build_registry())
    cfg.profiles[0].scheduler_name = SCHEDULER
    cache = ClusterCache([SCHEDULER])
    loop = KubeLoop(cfg, cache, binder_factory=lambda **kw: Binder(**kw), status=_Status())
    cache.on_node_add_many([node_doc(i) for i in range(nodes)])
    return cache, loop


def step(cache: ClusterCache, loop: KubeLoop) -> None:
    """Schedule whatever the queue pops now."""
    while True:
        with cache.lock:
            qpi = loop.queue.pop()
        if qpi is None:
            return
        loop.schedule(qpi)


def churn(cache: ClusterCache, loop: KubeLoop, start: int, count: int, unfit_every: int = 10) -> None:
    """Pods start .. start+count: created, scheduled, bound (the API's update seen), deleted; one
    in `unfit_every` asks for more than any node has and is deleted while unschedulable."""
    for i in range(start, start + count):
        unfit = unfit_every and i % unfit_every == 0
        raw = pod_doc(i, "64" if unfit else "100m")
        cache.on_pod_add(raw)
        step(cache, loop)
        key = f"churn/p{i}"
        node = cache.assumed.get(key)
        if node is not None:                # the informer sees the binding
            bound = {**raw, "spec": {**raw["spec"], "nodeName": node}}
            cache.on_pod_update(raw, bound)
            raw = bound
        cache.on_pod_delete(raw)


def held(cache: ClusterCache, loop: KubeLoop) -> dict[str, int]:
    """What the cache, queue and loop hold per pod (all 0 once every pod is gone)."""
    return {"cache.pods": len(cache.pods), "cache.assumed": len(cache.assumed),
            "cache.unplaced": sum(len(v) for v in cache.unplaced.values()),
            "table.pods": sum(len(p) for p in cache.table.pods), "queue": len(loop.queue),
            "queue.in_flight": len(loop.queue.in_flight()),
            "loop.scheduled": len(loop._scheduled),
            "nominator": len(loop.scheduler.nominator._node_of)}


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=100_000)
    ap.add_argument("--nodes", type=int, default=1000)
    a = ap.parse_args(argv)
    cache, loop = build(a.nodes)
    gc.collect()
    print(f"start: RSS {rss_mib():.1f} MiB ({a.nodes} nodes)", flush=True)
    warm = min(5000, a.pods // 10)
    t0 = time.perf_counter()
    churn(cache, loop, 0, warm)
    gc.collect()
    base = rss_mib()
    print(f"after {warm:,} pods (warm-up): RSS {base:.1f} MiB", flush=True)
    done, chunk = warm, max(1, (a.pods - warm) // 5)
    while done < a.pods:
        n = min(chunk, a.pods - done)
        churn(cache, loop, done, n)
        done += n
        gc.collect()
        print(f"after {done:,} pods: RSS {rss_mib():.1f} MiB ({time.perf_counter() - t0:.0f} s)", flush=True)
    end = rss_mib()
    print(f"held at the end: {held(cache, loop)}")
    print(f"RSS growth after the warm-up: {end - base:+.1f} MiB over {a.pods - warm:,} pods")


if __name__ == "__main__":
    main()
