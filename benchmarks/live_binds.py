"""Sustained binds/s of `caldera run` against a real kube-apiserver + etcd on loopback.

Starts the control plane of scripts/control-plane (built once, cached), creates N nodes and M
pending pods first, then starts a LiveScheduler (the same assembly `caldera run` uses: informers,
cache, scheduling loop with the default profile, async binder) and measures from its start until
every pod is bound, as the API server reports them.

    python -m benchmarks.live_binds                    # 1,000 nodes, 5,000 pods
    python -m benchmarks.live_binds --nodes 100 --pods 500

Not a test: the figure depends on the machine, and the API server and etcd share its 2 cores
with the scheduler.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from caldera.config.defaults import default_config
from caldera.live.app import LiveScheduler, RunOptions
from caldera.live.client import Api
from caldera.plugins.registry import build_registry

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "control-plane"


def _cp(*args) -> str:
    p = subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"scripts/control-plane {' '.join(map(str, args))} failed:\n{p.stderr[-3000:]}")
    return p.stdout.strip()


def _bulk(api: Api, bodies: list[tuple[str, dict]], workers: int = 16) -> None:
    def post(item):
        path, body = item
        api.request("POST", path, body)
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(post, bodies))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--bind-workers", type=int, default=16)
    a = ap.parse_args(argv)
    _cp("build")
    d = Path(tempfile.mkdtemp(prefix="caldera-bench-"))
    admin = _cp("start", d).splitlines()[-1]
    api = Api.from_kubeconfig(admin)
    try:
        t0 = time.perf_counter()
        nodes = []
        for i in range(a.nodes):
            n = f"bench-node-{i:05d}"
            nodes.append(("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": n, "labels": {"kubernetes.io/hostname": n}}}))
        _bulk(api, nodes)
        alloc = {"cpu": "32", "memory": "128Gi", "pods": "110"}

        def status(item):
            api.request("PATCH", f"/api/v1/nodes/{item[1]['metadata']['name']}/status",
                        {"status": {"capacity": alloc, "allocatable": alloc}})
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(status, nodes))
        api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "bench"}})
        pods = [("/api/v1/namespaces/bench/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i:05d}", "namespace": "bench"},
            "spec": {"schedulerName": "caldera-bench", "automountServiceAccountToken": False,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}})
            for i in range(a.pods)]
        _bulk(api, pods)
        print(f"setup: {a.nodes} nodes, {a.pods} pending pods created in {time.perf_counter() - t0:.1f} s")

        cfg = default_config(build_registry())
        cfg.profiles[0].scheduler_name = "caldera-bench"
        app = LiveScheduler(api, cfg, RunOptions(leader_elect=False, metrics_addr="127.0.0.1:0",
                                                 bind_workers=a.bind_workers))
        start = time.perf_counter()
        app.start()
        synced = time.perf_counter()
        while True:
            items = api.request("GET", "/api/v1/namespaces/bench/pods",
                                query={"fieldSelector": "spec.nodeName=="})[1].get("items", [])
            if not items:
                break
            time.sleep(0.5)
        end = time.perf_counter()
        app.stop()
        elapsed = end - start
        print(f"informer sync {synced - start:.2f} s; {a.pods} pods bound in {elapsed:.2f} s: "
              f"{a.pods / elapsed:,.0f} binds/s sustained (binder: {app.loop.binder.bound} bound, "
              f"{app.loop.binder.failed} failed)")
    finally:
        api.close()
        _cp("stop", d)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
