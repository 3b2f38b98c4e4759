"""A Volcano session at training-cluster scale, through Caldera's batch engine.

1,000 nodes (64 CPU, 512 GiB, 8 GPUs each); 200 PodGroups of 50 pods (1 GPU, 4 CPU, 32 GiB
each, gang minMember = 50, minResources set), split over two queues weighted 3:1. Pending
PodGroups, so the session runs enqueue, allocate, backfill with Volcano's default tiers plus
binpack (GPU-weighted). The cluster has 8,000 GPUs for 10,000 requested: 160 gangs fit, the
rest must stay whole and unbound.

    python -m benchmarks.batch_session                # prints session time and pods/s
    python -m benchmarks.batch_session --profile      # cProfile the session
    python -m benchmarks.batch_session --e2e yaml     # and `caldera schedule` end to end beside it

The session runs under `caldera schedule`'s GC policy (caldera/gcpolicy.py), as the command does:
`--gc python` keeps CPython's defaults, for before/after (the session is some 20 % slower so, and
an end-to-end ratio against it flatters the command).

Target (issue 3): one full session in <= 2 s on the 2-core reference machine. Not a test:
figures depend on the machine.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter

from caldera import gcpolicy
from caldera.api.loader import Cluster
from caldera.api.objects import Node, Pod
from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.batch.runner import run_session

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 10
"""
GPU = "nvidia.com/gpu"


def manifests(nodes: int = 1000, groups: int = 200, size: int = 50) -> list[dict]:
    """The cluster as the manifests `caldera schedule -f` reads: Nodes, Queues, PodGroups, Pods."""
    docs: list[dict] = [{"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": f"gpu-{i:04d}", "labels": {"kubernetes.io/hostname": f"gpu-{i:04d}"}},
                         "status": {"allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}}}
                        for i in range(nodes)]
    for q, w in (("research", 3), ("production", 1)):
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                     "metadata": {"name": q}, "spec": {"weight": w}, "status": {"state": "Open"}})
    for g in range(groups):
        q = "research" if g % 2 == 0 else "production"
        name = f"train-{g:03d}"
        docs.append({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml",
                         "creationTimestamp": f"2026-01-01T00:{g // 60:02d}:{g % 60:02d}Z"},
            "spec": {"minMember": size, "queue": q,
                     "minResources": {"cpu": str(4 * size), "memory": f"{32 * size}Gi", GPU: str(size)}},
            "status": {"phase": "Pending"}})
        for k in range(size):
            docs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"{name}-worker-{k}", "namespace": "ml",
                                      "annotations": {"scheduling.k8s.io/group-name": name}},
                         "spec": {"schedulerName": "volcano", "containers": [{
                             "name": "trainer", "image": "trainer:1",
                             "resources": {"requests": {"cpu": "4", "memory": "32Gi", GPU: "1"},
                                           "limits": {GPU: "1"}}}]},
                         "status": {"phase": "Pending"}})
    return docs


def build(nodes: int = 1000, groups: int = 200, size: int = 50) -> Cluster:
    c = Cluster()
    seq = 0
    for d in manifests(nodes, groups, size):
        if d["kind"] == "Node":
            c.nodes.append(Node(d))
        elif d["kind"] == "Pod":
            seq += 1
            c.pods.append(Pod(d, seq))
        else:
            c.other.append(("<bench>", d))
    return c


def end_to_end(nodes: int = 1000, groups: int = 200, size: int = 50, fmt: str = "yaml", floor: bool = False) -> dict:
    """`caldera schedule -f CLUSTER --config volcano-scheduler.conf -o json` in a child process,
    from its start to its exit, on the same cluster written as one List (kubectl's layout); with
    `floor`, also load_dump.floor_cpu of that List (what any Python CLI spends before scheduling)."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    from benchmarks.load_dump import child_env, floor_cpu, write_json_list, write_yaml_list
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"cluster.{fmt}")
        size_b = (write_yaml_list if fmt == "yaml" else write_json_list)(manifests(nodes, groups, size), path)
        conf = os.path.join(tmp, "volcano-scheduler.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        out = os.path.join(tmp, "out.json")
        code = ("import sys; from caldera.cli.main import main; sys.stdout = open(sys.argv[3], 'w'); "
                "main(['schedule', '-f', sys.argv[1], '--config', sys.argv[2], '-o', 'json'])")
        env = child_env()
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", code, path, conf, out], stderr=subprocess.PIPE, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        err = p.stderr.read().decode() if p.stderr else ""
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"caldera schedule failed: {err.strip()[-2000:]}")
        with open(out) as f:
            bound = len(json.load(f)["bindings"])
        least = floor_cpu(path) if floor else None
    return {"seconds": wall, "cpu": ru.ru_utime + ru.ru_stime, "bytes": size_b, "bound": bound, "floor": least}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=200)
    ap.add_argument("--size", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--gc", choices=["caldera", "python"], default="caldera",
                    help="GC policy for the session: caldera schedule's (default) or CPython's defaults")
    ap.add_argument("--e2e", choices=["yaml", "json"], default=None,
                    help="also run `caldera schedule` end to end on the same cluster as one List in this format "
                         "and compare its time with the session's (target <= 1.2x)")
    a = ap.parse_args(argv)
    import yaml
    conf = parse_volcano_conf(yaml.safe_load(CONF), "<bench>", ACTIONS, PLUGINS)
    best = best_cpu = None
    e2e = None
    for _ in range(a.repeat if not a.profile else 1):
        cluster = build(a.nodes, a.groups, a.size)
        if a.gc == "caldera":
            gcpolicy.apply("schedule")
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            if a.profile:
                import cProfile
                import pstats
                prof = cProfile.Profile()
                prof.enable()
                res = run_session(cluster, conf)
                prof.disable()
                pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
            else:
                res = run_session(cluster, conf)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            if a.gc == "caldera":
                gcpolicy.reset()
        best = dt if best is None else min(best, dt)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
        bound = len(res.bindings)
        phases = Counter(g["phase"] for g in res.pod_groups)
        gangs = Counter(b["pod"].rsplit("-worker-", 1)[0] for b in res.bindings)
        whole = sum(1 for n in gangs.values() if n == a.size)
        print(f"{a.nodes} nodes x 8 GPUs, {a.groups} PodGroups x {a.size} pods: session {dt:.3f} s, "
              f"{bound} pods bound ({bound / dt:,.0f} pods/s); gangs bound whole {whole}, partly "
              f"{len(gangs) - whole}; PodGroup phases {dict(phases)} (bound gangs turn Running next session)")
        if a.e2e and not a.profile:     # alternating with the sessions, so both see the same machine
            e = end_to_end(a.nodes, a.groups, a.size, a.e2e, floor=e2e is None)
            assert e["bound"] == bound, (e["bound"], bound)
            e2e_cpu = e["cpu"] if e2e is None else min(e2e["cpu"], e["cpu"])     # CPU: the least of each
            least = e["floor"] if e2e is None else e2e["floor"]       # measured in the first run
            e2e = e if e2e is None or e["seconds"] < e2e["seconds"] else e2e
            e2e = {**e2e, "cpu": e2e_cpu, "floor": least}
    print(f"best session: {best:.3f} s (target <= 2 s)")
    if e2e is not None:
        print(f"best end to end (caldera schedule -f {e2e['bytes'] / 1e6:.1f} MB {a.e2e.upper()} List --config ... "
              f"-o json): {e2e['seconds']:.3f} s = {e2e['seconds'] / best:.2f}x the session (target <= 1.2x); "
              f"CPU {e2e['cpu']:.2f} s = {e2e['cpu'] / best_cpu:.2f}x the session's {best_cpu:.2f} s")
        print(f"outside the session: {e2e['cpu'] - best_cpu:.2f} s CPU; 1.2x leaves {0.2 * best_cpu:.2f} s; the floor "
              f"(interpreter, click, numpy, parsing the List: load_dump.floor_cpu) alone is {e2e['floor']:.2f} s")


if __name__ == "__main__":
    main()
