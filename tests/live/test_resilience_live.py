"""`caldera run` when things go wrong: the API server restarts mid-run, watches drop, binds get
409/500/429, and the leader is killed (two replicas, failover)."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from caldera.live.client import Api

from .faultproxy import FaultProxy
from .kube import (
    create_node,
    create_pod,
    delete_nodes,
    kube_profile,
    list_pods,
    live_scheduler,
    namespace,
    tag,
    wait_until,
)


def _bound(api, ns):
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in list_pods(api, ns)}


def test_api_server_restart_mid_run(api, control_plane, tmp_path):
    t = tag()
    sched = f"restart-{t}"
    ns = namespace(api, f"restart-{t}")
    nodes = [f"restart-{t}-{i}" for i in range(2)]
    for n in nodes:
        create_node(api, n, cpu="8")
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            for i in range(5):
                create_pod(api, ns, f"before-{i}", sched)
            wait_until(lambda: all(_bound(api, ns).values()), what="first pods bound")
            control_plane.restart_apiserver()            # watches break; informers must recover
            for i in range(5):
                create_pod(api, ns, f"after-{i}", sched)
            wait_until(lambda: len(_bound(api, ns)) == 10 and all(_bound(api, ns).values()), timeout=60,
                       what="pods created after the restart bound")
            assert app.loop.binder.failed == 0
            informers = app.informers
            assert sum(i.lists for i in informers) > len(informers) or all(i.has_synced() for i in informers)
    finally:
        delete_nodes(api, nodes)


def test_binds_through_faults_none_lost_none_twice(api, control_plane, tmp_path):
    """1,000 pods through a proxy that adds latency spikes, drops connections (watches too) and
    answers binds and status writes with 409/500/429: every pod ends bound exactly once (one
    Binding accepted by the API server) or reported unschedulable."""
    t = tag()
    sched = f"faults-{t}"
    ns = namespace(api, f"faults-{t}")
    nodes = [f"faults-{t}-{i}" for i in range(40)]
    for n in nodes:
        create_node(api, n, cpu="32", memory="64Gi", pods="40")   # 1,600 pod slots: all fit
    proxy = FaultProxy(control_plane.server, ca_file=control_plane.ca_file, token=control_plane.admin_token,
                       latency_spike_rate=0.02, latency_seconds=0.5, drop_rate=0.02,
                       stream_drop_after_chunks=400, error_rates={409: 0.05, 500: 0.05, 429: 0.05},
                       errors_on="mutating", seed=7).start()
    kc = proxy.write_kubeconfig(str(tmp_path / "proxy.kubeconfig"), control_plane.admin_token)
    sapi = Api.from_kubeconfig(kc)
    try:
        with live_scheduler(sapi, kube_profile(tmp_path, sched)):
            for i in range(1000):
                create_pod(api, ns, f"p{i:04d}", sched, cpu="10m", memory="16Mi")
            wait_until(lambda: sum(1 for v in _bound(api, ns).values() if v) == 1000, timeout=300, interval=1,
                       what="all 1,000 pods bound")
            stats = dict(proxy.stats)
            injected = list(proxy.injections)
            upstream = list(proxy.upstream)
        # faults really happened
        assert stats.get("error_409", 0) + stats.get("error_500", 0) + stats.get("error_429", 0) > 10, stats
        assert stats.get("drop", 0) > 0, stats
        # binds among them: 409 Conflict, 500 and 429 answered to pods/binding, and dropped binds
        on_bind = {k for m, path, k in injected if path.endswith("/binding")}
        assert {"error_409", "error_500", "error_429"} <= on_bind, on_bind
        # exactly once: the API server accepted one Binding per pod (a second would have been a
        # 409 from the server itself, and the pod's node would not change)
        bound = _bound(api, ns)
        assert len(bound) == 1000 and all(bound.values())
        per_node = {}
        for n in bound.values():
            per_node[n] = per_node.get(n, 0) + 1
        assert max(per_node.values()) <= 40
        # ... and counted on Caldera's side: of the Binding POSTs that reached the API server, one
        # per pod was accepted, and a pod's Binding was sent again only when Caldera could not
        # know the first one had landed (the proxy dropped the answer)
        accepted: dict[str, int] = {}
        unseen: set[str] = set()
        for method, path, status, dropped in upstream:
            if method != "POST" or not path.endswith("/binding"):
                continue
            pod = path.split("/")[-2]
            if status == 201:
                accepted[pod] = accepted.get(pod, 0) + 1
            else:
                assert status == 409 and pod in unseen, (pod, status, "a second bind Caldera should not have sent")
            if dropped:
                unseen.add(pod)
        assert len(accepted) == 1000 and set(accepted.values()) == {1}
    finally:
        sapi.close()
        proxy.stop()
        delete_nodes(api, nodes)


def _start_replica(control_plane, cfg: Path, log: Path):
    cmd = [str(Path(sys.executable).with_name("caldera")), "run", "--kubeconfig", control_plane.admin_kubeconfig,
           "--config", str(cfg), "--metrics-addr", "127.0.0.1:0", "-v"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"))


def _endpoint(log: Path) -> str:
    def url():
        m = re.search(r"endpoints on (http://\S+)", log.read_text())
        return m.group(1) if m else None
    return wait_until(url, timeout=60, what=f"endpoint line in {log.name}")


def _attempts(url: str) -> float:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("scheduler_schedule_attempts_total{"))


def test_two_replicas_one_leader_and_failover(api, control_plane, tmp_path):
    t = tag()
    sched = f"ha-{t}"
    lease = f"caldera-ha-{t}"
    ns = namespace(api, f"ha-{t}")
    nodes = [f"ha-{t}-0"]
    create_node(api, nodes[0], cpu="16")
    cfg = tmp_path / "config.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "leaderElection:\n  leaderElect: true\n  leaseDuration: 4s\n  renewDeadline: 3s\n"
                   f"  retryPeriod: 1s\n  resourceName: {lease}\n  resourceNamespace: kube-system\n"
                   f"profiles:\n- schedulerName: {sched}\n")
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = [_start_replica(control_plane, cfg, logs[0]), _start_replica(control_plane, cfg, logs[1])]
    try:
        urls = [_endpoint(logs[0]), _endpoint(logs[1])]

        def holder():
            try:
                return api.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}")[1][
                    "spec"].get("holderIdentity")
            except Exception:
                return None
        first = wait_until(holder, timeout=30, what="a leader")
        def who():        # 1-based, so that replica 0 is not "falsy"
            for i in (0, 1):
                if f"became leader ({first})" in logs[i].read_text():
                    return i + 1
            return None
        leader = wait_until(who, timeout=10, what="the leader's log line") - 1
        standby = 1 - leader
        for i in range(3):
            create_pod(api, ns, f"a{i}", sched)
        wait_until(lambda: all(_bound(api, ns).values()) and len(_bound(api, ns)) == 3, timeout=30,
                   what="pods bound by the leader")
        assert _attempts(urls[leader]) >= 3
        assert _attempts(urls[standby]) == 0               # a standby never schedules
        procs[leader].send_signal(signal.SIGKILL)          # no release: the Lease must expire
        procs[leader].wait(10)
        killed_at = time.monotonic()
        for i in range(3):
            create_pod(api, ns, f"b{i}", sched)
        wait_until(lambda: len(_bound(api, ns)) == 6 and all(_bound(api, ns).values()), timeout=60,
                   what="pods bound after failover")
        assert time.monotonic() - killed_at >= 2.0         # not before the old lease could expire
        new = holder()
        assert new and new != first
        assert _attempts(urls[standby]) >= 3
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        delete_nodes(api, nodes)


def test_sigterm_releases_the_lease_and_exits_zero(api, control_plane, tmp_path):
    t = tag()
    lease = f"caldera-term-{t}"
    cfg = tmp_path / "config.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "leaderElection:\n  leaderElect: true\n  leaseDuration: 4s\n  renewDeadline: 3s\n"
                   f"  retryPeriod: 1s\n  resourceName: {lease}\n  resourceNamespace: kube-system\n"
                   f"profiles:\n- schedulerName: term-{t}\n")
    log = tmp_path / "r.log"
    p = _start_replica(control_plane, cfg, log)
    try:
        _endpoint(log)
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}"
        wait_until(lambda: api.request("GET", path)[1]["spec"].get("holderIdentity")
                   if _exists(api, path) else None, timeout=30, what="leader")
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
        assert not api.request("GET", path)[1]["spec"].get("holderIdentity")
    finally:
        if p.poll() is None:
            p.kill()


def _exists(api, path) -> bool:
    try:
        api.request("GET", path)
        return True
    except Exception:
        return False
