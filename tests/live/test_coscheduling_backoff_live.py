"""`caldera run` with Coscheduling's podGroupBackoffSeconds against a real API server: a 4-pod
group of minMember 4 on three nodes is tried, rejected, backed off, and then left alone (the
loop stops retrying it: the pods wait in the unschedulable pool), none bound. The scheduler runs
with the admin credentials: the shipped RBAC is checked by test_coscheduling_live.py."""
from __future__ import annotations

import time

from .kube import admin_api, delete_nodes, get_pod, kube_profile, live_scheduler, namespace, tag, wait_until
from .test_coscheduling_live import EXTRA, _condition, _gang, _pods

ARGS = """  pluginConfig:
  - name: Coscheduling
    args: {podGroupBackoffSeconds: 60}
"""


def test_backed_off_gang_is_not_retried(control_plane, tmp_path):
    admin = admin_api(control_plane)
    t = tag()
    sched, ns = f"cosb-{t}", namespace(admin, f"cosb-{t}")
    nodes = [f"cosb-{t}-{i}" for i in range(3)]
    _gang(admin, ns, sched, nodes, t)
    try:
        with live_scheduler(admin, kube_profile(tmp_path, sched, EXTRA + ARGS)) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced")
            wait_until(lambda: f"{ns}/gang" in app.loop.scheduler.pod_groups, what="the PodGroup informed")
            _pods(admin, ns, sched)
            wait_until(lambda: any("failed recently" in m for m in [
                (_condition(admin, ns, f"w{i}") or {}).get("message", "") for i in range(4)]),
                what="the group backed off")
            time.sleep(1)
            cycles = app.loop.cycles
            time.sleep(3)
            # pods arriving one by one may each be tried once before the group is whole: a round
            # (3 waits, a failure, its retry refused by PreFilter) plus those, then nothing
            assert app.loop.cycles == cycles and cycles <= 4 + 5, cycles
            msgs = [_condition(admin, ns, f"w{i}")["message"] for i in range(4)]
            assert sum(m == "0/1 nodes are available: 1 optimistic rejection in PostFilter." for m in msgs) >= 2
            assert all(not get_pod(admin, ns, f"w{i}")["spec"].get("nodeName") for i in range(4))
    finally:
        delete_nodes(admin, nodes)
