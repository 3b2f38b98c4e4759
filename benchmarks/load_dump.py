"""Loading big cluster dumps: `caldera schedule -f DUMP -o json` end to end (issue 14).

Generates, deterministically, the dumps the issue names and times the CLI on them:

- `realistic`: one `kind: List` as `kubectl get nodes,pods -A -o yaml` prints it (go-yaml's
  layout: sorted keys, zero-indented sequences, double quotes for strings that would read as
  another type, long strings folded at 80 columns): 1,000 Nodes with real-looking status
  (conditions, addresses, ~30 images, nodeInfo), 20,000 running pods with kubectl's full status
  (ownerReferences, projected service-account volume, env, ports, probes, containerStatuses...)
  and 2,000 pending pods: 76.6 MB (the issue's dump of these counts was 57 MB, its pods
  smaller; memory goes with the objects more than with the bytes);
- `small`: 1,000 nodes and 153,000 small pods (150,000 bound, 3,000 pending): about 50 MB;
- `realistic-json`: the realistic dump as `kubectl get -o json` prints it (4-space indent).

For each it reports the file size, the wall time of the `caldera schedule` child process, its
peak RSS (os.wait4's rusage of that child) against the file size and against a bare
`import caldera.cli.main` child (the interpreter baseline), and, with --breakdown, the phases
measured in-process in another child: parse (reading the documents), decode (to Pods/Nodes),
schedule (the pass), output (the JSON text), in CPU seconds.

    python -m benchmarks.load_dump                       # realistic YAML, 77 MB
    python -m benchmarks.load_dump --dump small --dump realistic-json --breakdown
    python -m benchmarks.load_dump --write /tmp/dump.yaml   # only write the dump
    python -m benchmarks.load_dump --parsers             # time the installed parsers on it

Targets (issue 14): the realistic YAML dump in <= 60 s with peak RSS under 4x the file size
(4 x 57 MB for the issue's dump). The machine is often shared: the CPU seconds are the steadier
figure. Not a test: figures depend on the machine.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

# ---- a go-yaml (v2) style emitter: what kubectl -o yaml prints ---------------------------------

_WIDTH = 80
_PLAIN_BAD_START = set("-?:,[]{}#&*!|>'\"%@`")
_resolver = yaml.resolver.Resolver()
_style_cache: dict[str, str] = {}


def _style(s: str) -> str:
    """'plain', 'single' or 'double', as go-yaml v2 picks it for a string."""
    st = _style_cache.get(s)
    if st is not None:
        return st
    if (s == "" or "\n" in s or not s.isprintable()
            or _resolver.resolve(yaml.ScalarNode, s, (True, False)) != "tag:yaml.org,2002:str"):
        st = "double"
    elif (s[0] in _PLAIN_BAD_START or s[0] == " " or s[-1] == " " or ": " in s or " #" in s
          or s.endswith(":")):
        st = "single"
    else:
        st = "plain"
    if len(_style_cache) < 200_000:
        _style_cache[s] = st
    return st


def _fold(text: str, col: int, indent: int) -> str:
    """Fold a plain or single-quoted scalar at spaces past column 80, as go-yaml does."""
    if col + len(text) <= _WIDTH or " " not in text or "  " in text or text.endswith(" "):
        return text
    out, line = [], col
    words = text.split(" ")
    for k, w in enumerate(words):
        if k and line + 1 + len(w) > _WIDTH and line > indent:
            out.append("\n" + " " * indent)
            line = indent
        elif k:
            out.append(" ")
            line += 1
        out.append(w)
        line += len(w)
    return "".join(out)


def _scalar(v: Any, col: int, indent: int) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return repr(v)
    s = str(v)
    st = _style(s)
    if st == "plain":
        return _fold(s, col, indent)
    if st == "single":
        return "'" + _fold(s.replace("'", "''"), col + 1, indent) + "'"
    return _dquote(s)


def _dquote(s: str) -> str:
    """A YAML double-quoted scalar: JSON's escapes, and \\x/\\u/\\U for what is not printable."""
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c.isprintable():
            out.append(c)
        else:
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return '"' + "".join(out) + '"'


def _emit_map(d: dict[str, Any], indent: int, out: list[str], first_inline: bool = False) -> None:
    pad = " " * indent
    for n, k in enumerate(sorted(d)):
        v = d[k]
        lead = "" if (first_inline and n == 0) else pad
        if isinstance(v, dict) and v:
            out.append(f"{lead}{k}:\n")
            _emit_map(v, indent + 2, out)
        elif isinstance(v, list) and v:
            out.append(f"{lead}{k}:\n")
            _emit_seq(v, indent, out)
        elif isinstance(v, dict):
            out.append(f"{lead}{k}: {{}}\n")
        elif isinstance(v, list):
            out.append(f"{lead}{k}: []\n")
        else:
            out.append(f"{lead}{k}: {_scalar(v, indent + len(k) + 2, indent + 2)}\n")


def _emit_seq(items: list[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for v in items:
        if isinstance(v, dict) and v:
            out.append(f"{pad}- ")
            _emit_map(v, indent + 2, out, first_inline=True)
        elif isinstance(v, list) and v:
            out.append(f"{pad}-\n")
            _emit_seq(v, indent + 2, out)
        elif isinstance(v, dict):
            out.append(f"{pad}- {{}}\n")
        elif isinstance(v, list):
            out.append(f"{pad}- []\n")
        else:
            out.append(f"{pad}- {_scalar(v, indent + 2, indent + 2)}\n")


def write_yaml_list(objs: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write the objects as one `kind: List`, as kubectl -o yaml does; returns the size in bytes."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("apiVersion: v1\nitems:\n")
        for o in objs:
            out: list[str] = []
            _emit_seq([o], 0, out)
            f.write("".join(out))
        f.write('kind: List\nmetadata:\n  resourceVersion: ""\n')
    return os.path.getsize(path)


def write_json_list(objs: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write the objects as one List, as kubectl -o json does (4-space indent)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write('{\n    "apiVersion": "v1",\n    "items": [')
        for n, o in enumerate(objs):
            body = json.dumps(o, indent=4, ensure_ascii=False).replace("\n", "\n        ")
            f.write(("," if n else "") + "\n        " + body)
        f.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    return os.path.getsize(path)


# ---- the objects --------------------------------------------------------------------------------

def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _uid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _ts(base: int, off: int) -> str:
    t = time.gmtime(base + off)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", t)


BASE = 1_735_689_600  # 2025-01-01T00:00:00Z
ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
_IMAGES = [f"registry.example.com/{team}/{app}" for team in ("platform", "payments", "search", "ml", "web")
           for app in ("api", "worker", "frontend", "cron", "gateway", "indexer", "exporter")]


def node_manifest(i: int, rng: random.Random) -> dict[str, Any]:
    name = f"ip-10-0-{i // 250}-{i % 250}.eu-west-1.compute.internal"
    zone = ZONES[i % 3]
    ip = f"10.0.{i // 250}.{i % 250}"
    images = []
    system = ("pause", "kube-proxy", "coredns/coredns", "csi-node-driver-registrar", "livenessprobe")
    for k in range(30):
        img = _IMAGES[(i + k) % len(_IMAGES)] if k < 25 else f"registry.k8s.io/{system[k - 25]}"
        tag = f"v{1 + k % 4}.{(i + k) % 17}.{k % 5}"
        digest = _hex(rng, 64)
        images.append({"names": [f"{img}@sha256:{digest}", f"{img}:{tag}"],
                       "sizeBytes": rng.randint(700_000, 900_000_000)})
    conds = [(t, "False", r, m) for t, r, m in (
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))]
    conds.append(("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "annotations": {"alpha.kubernetes.io/provided-node-ip": ip,
                            "node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": _ts(BASE, i * 37),
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "m5.4xlarge",
                       "beta.kubernetes.io/os": "linux", "failure-domain.beta.kubernetes.io/region": "eu-west-1",
                       "failure-domain.beta.kubernetes.io/zone": zone, "kubernetes.io/arch": "amd64",
                       "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "node.kubernetes.io/instance-type": "m5.4xlarge",
                       "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": zone,
                       "node-pool": ("general", "general", "memory", "batch")[i % 4]},
            "name": name, "resourceVersion": str(10_000_000 + i * 13), "uid": _uid(rng)},
        "spec": {"podCIDR": f"10.244.{i % 256}.0/24", "podCIDRs": [f"10.244.{i % 256}.0/24"],
                 "providerID": f"aws:///{zone}/i-0{_hex(rng, 16)}",
                 **({"taints": [{"effect": "NoSchedule", "key": "dedicated", "value": "batch"}]}
                    if i % 4 == 3 else {})},
        "status": {
            "addresses": [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "InternalDNS"},
                          {"address": name, "type": "Hostname"}],
            "allocatable": {"cpu": "15890m", "ephemeral-storage": "95491281146", "hugepages-1Gi": "0",
                            "hugepages-2Mi": "0", "memory": "63119812Ki", "pods": "110"},
            "capacity": {"cpu": "16", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                         "hugepages-2Mi": "0", "memory": "64269252Ki", "pods": "110"},
            "conditions": [{"lastHeartbeatTime": _ts(BASE, 9_000_000 + i), "lastTransitionTime": _ts(BASE, i * 37 + 40),
                            "message": m, "reason": r, "status": s, "type": t} for t, s, r, m in conds],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {"architecture": "amd64", "bootID": _uid(rng), "containerRuntimeVersion": "containerd://1.7.22",
                         "kernelVersion": "6.1.112-122.189.amzn2023.x86_64", "kubeProxyVersion": "v1.31.2",
                         "kubeletVersion": "v1.31.2", "machineID": _hex(rng, 32), "operatingSystem": "linux",
                         "osImage": "Amazon Linux 2023.6.20241111", "systemUUID": _uid(rng)}},
    }


def _container(rng: random.Random, app: str, image: str, cpu: int, mem: int, running: bool,
               start: str) -> tuple[dict[str, Any], dict[str, Any]]:
    port = rng.choice((8080, 8443, 9090, 3000))
    probe = {"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
             "initialDelaySeconds": 10, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1}
    c = {"env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                 {"name": "LOG_LEVEL", "value": "info"}],
         "image": image, "imagePullPolicy": "IfNotPresent", "livenessProbe": probe, "name": app,
         "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
         "resources": {"limits": {"cpu": f"{2 * cpu}m", "memory": f"{2 * mem}Mi"},
                       "requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}},
         "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
         "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                           "name": "kube-api-access", "readOnly": True}]}
    st = {"containerID": f"containerd://{_hex(rng, 64)}", "image": image,
          "imageID": f"{image.rsplit(':', 1)[0]}@sha256:{_hex(rng, 64)}", "lastState": {}, "name": app,
          "ready": running, "restartCount": rng.choice((0, 0, 0, 1, 2)), "started": running,
          "state": {"running": {"startedAt": start}} if running else
          {"waiting": {"reason": "ContainerCreating"}}}
    return c, st


_ALNUM = "bcdfghjklmnpqrstvwxz2456789"   # what kube's generateName suffixes are made of


def _suffix(i: int) -> str:
    """A 5-character suffix, distinct for every i below 27**5."""
    n = (i * 7_368_787) % 27 ** 5
    return "".join(_ALNUM[(n // 27 ** k) % 27] for k in range(5))


def pod_manifest(i: int, rng: random.Random, node: str | None, n_nodes: int) -> dict[str, Any]:
    team = ("platform", "payments", "search", "ml", "web")[i % 5]
    ns = f"{team}-{(i // 5) % 10}"
    app = ("api", "worker", "frontend", "cron", "gateway", "indexer", "exporter")[(i // 50) % 7]
    rs = f"{app}-{hashlib.sha1(f'{ns}/{app}'.encode()).hexdigest()[:10]}"
    name = f"{rs}-{_suffix(i)}"
    image = f"registry.example.com/{team}/{app}:v1.{i % 17}.{i % 5}"
    cpu, mem = rng.choice((50, 100, 200, 250, 500)), rng.choice((64, 128, 256, 512, 1024))
    created = _ts(BASE, 8_000_000 + i * 17)
    running = node is not None
    c, st = _container(rng, app, image, cpu, mem, running, created)
    if i % 8:   # most pods here keep it short: no env, no probe
        del c["env"], c["livenessProbe"]
    containers, statuses = [c], [st]
    if i % 50 == 0:   # a log-shipping sidecar
        c2, st2 = _container(rng, "log-shipper", "registry.example.com/platform/fluent-bit:3.1.9", 50, 64,
                             running, created)
        del c2["livenessProbe"], c2["env"], c2["ports"]
        containers.append(c2)
        statuses.append(st2)
    labels = {"app": app, "app.kubernetes.io/name": app, "app.kubernetes.io/part-of": team,
              "pod-template-hash": rs.rsplit("-", 1)[1]}
    spec: dict[str, Any] = {
        "containers": containers, "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority", "priority": 0, "restartPolicy": "Always",
        "schedulerName": "default-scheduler", "securityContext": {}, "serviceAccount": app,
        "serviceAccountName": app, "terminationGracePeriodSeconds": 30,
        "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "tolerationSeconds": 300},
                        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                         "tolerationSeconds": 300}],
        "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                                    "path": "namespace"}]}}]}}]}
    if i % 3:   # workloads that never call the API server opt out of the token volume
        spec["automountServiceAccountToken"] = False
        del spec["volumes"]
        for co in containers:
            del co["volumeMounts"]
    if i % 14 == 0:
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}},
                                 "topologyKey": "kubernetes.io/hostname"}, "weight": 100}]}}
    if node is not None:
        spec["nodeName"] = node
        conds = [{"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": t}
                 for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
        host = node.split(".")[0][3:].replace("-", ".")
        status = {"conditions": conds, "containerStatuses": statuses, "hostIP": host, "hostIPs": [{"ip": host}],
                  "phase": "Running", "podIP": f"10.244.{i % 256}.{(i // 256) % 250 + 2}",
                  "podIPs": [{"ip": f"10.244.{i % 256}.{(i // 256) % 250 + 2}"}], "qosClass": "Burstable",
                  "startTime": created}
    else:
        status = {"phase": "Pending", "qosClass": "Burstable"}
        if i % 2:
            status["conditions"] = [{
                "lastProbeTime": None, "lastTransitionTime": created,
                "message": f"0/{n_nodes} nodes are available: {n_nodes // 4} node(s) had untolerated taint "
                           f"{{dedicated: batch}}, {n_nodes - n_nodes // 4} Insufficient memory. preemption: "
                           f"0/{n_nodes} nodes are available: {n_nodes - n_nodes // 4} No preemption victims "
                           f"found for incoming pod, {n_nodes // 4} Preemption is not helpful for scheduling.",
                "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"creationTimestamp": created, "generateName": f"{rs}-", "labels": labels, "name": name,
                         "namespace": ns,
                         "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                              "kind": "ReplicaSet", "name": rs, "uid": _uid(rng)}],
                         "resourceVersion": str(20_000_000 + i), "uid": _uid(rng)},
            "spec": spec, "status": status}


def realistic(nodes: int = 1000, running: int = 20000, pending: int = 2000, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Nodes, then running pods (spread over the untainted nodes), then pending pods."""
    rng = random.Random(seed)
    names = []
    for i in range(nodes):
        n = node_manifest(i, rng)
        names.append(n["metadata"]["name"])
        yield n
    untainted = [nm for k, nm in enumerate(names) if k % 4 != 3] or names
    for i in range(running):
        yield pod_manifest(i, rng, untainted[i % len(untainted)], nodes)
    for i in range(running, running + pending):
        yield pod_manifest(i, rng, None, nodes)


def small(nodes: int = 1000, pods: int = 153000, pending: int = 3000, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Small nodes and pods: most pods bound (150 a node), the rest pending."""
    rng = random.Random(seed)
    for i in range(nodes):
        yield {"apiVersion": "v1", "kind": "Node",
               "metadata": {"labels": {"kubernetes.io/hostname": f"node-{i}",
                                       "topology.kubernetes.io/zone": ZONES[i % 3]}, "name": f"node-{i}"},
               "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"}}}
    for i in range(pods):
        spec: dict[str, Any] = {"containers": [{"image": "registry.k8s.io/pause:3.10", "name": "c",
                                                "resources": {"requests": {"cpu": f"{rng.choice((10, 50, 100))}m",
                                                                           "memory": "64Mi"}}}]}
        if i < pods - pending:
            spec["nodeName"] = f"node-{i % nodes}"
        yield {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"labels": {"app": f"a{i % 100}"}, "name": f"pod-{i}", "namespace": f"ns-{i % 20}"},
               "spec": spec, "status": {"phase": "Running" if "nodeName" in spec else "Pending"}}


DUMPS = {"realistic": ("yaml", realistic), "small": ("yaml", small), "realistic-json": ("json", realistic)}


def write_dump(kind: str, path: str | Path, scale: float = 1.0) -> int:
    fmt, gen = DUMPS[kind]
    if gen is realistic:
        objs = realistic(max(1, int(1000 * scale)), max(1, int(20000 * scale)), max(1, int(2000 * scale)))
    else:
        objs = small(max(1, int(1000 * scale)), max(2, int(153000 * scale)), max(1, int(3000 * scale)))
    return (write_yaml_list if fmt == "yaml" else write_json_list)(objs, path)


# ---- measurement --------------------------------------------------------------------------------

_last_cpu = [0.0]
_env: dict[str, str] = {}


def child_env() -> dict[str, str]:
    """The environment of the timed `caldera` children: as installed, with Caldera's bytecode
    compiled. With PYTHONDONTWRITEBYTECODE set (as in a development shell) every child would
    compile Caldera's ~300 modules again (~0.15 s CPU), which no installed `caldera` does (pip
    compiles at install, an editable install on first run); so the children write and read
    their bytecode under one cache directory (PYTHONPYCACHEPREFIX), compiled up front."""
    if not _env:
        import caldera
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"caldera-bench-pycache-{os.getuid()}")
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(caldera.__file__)], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        # and what the CLI imports from the standard library and site-packages, whose bytecode
        # is looked for under the prefix too
        subprocess.run([sys.executable, "-c", "import caldera.cli.main, caldera.cli.schedule, caldera.cli.table, "
                        "caldera.engine.oneshot, caldera.batch.runner, caldera.configfile, json, orjson, yaml"],
                       env=env, check=True)
        _env.update(env)
    return dict(_env)


def _child(code: str, stdout: bool = True) -> tuple[float, int, str]:
    """Run python -c CODE in a child: (wall s, the child's own peak RSS in bytes, its stdout);
    its CPU seconds (user + system) in _last_cpu[0].

    os.wait4 gives that child's rusage (RUSAGE_CHILDREN would be the max over every child)."""
    env = child_env()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", code], stdout=out if stdout else subprocess.DEVNULL, stderr=err,
                             env=env)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        _last_cpu[0] = ru.ru_utime + ru.ru_stime
        if p.returncode:
            err.seek(0)
            raise SystemExit(f"child failed ({p.returncode}): {err.read().strip()[-2000:]}")
        out.seek(0)
        return dt, ru.ru_maxrss * 1024, out.read()


def run_cli(path: str, output: str = "json") -> tuple[float, int]:
    """`caldera schedule -f PATH -o OUTPUT > /dev/null` in a child: (wall s, peak RSS bytes)."""
    code = ("import sys; from caldera.cli.main import main; "
            f"main(['schedule', '-f', {path!r}, '-o', {output!r}])")
    dt, rss, _ = _child(code, stdout=False)
    return dt, rss


FLOOR = """
import sys
import click, numpy
text = open(sys.argv[1], encoding="utf-8").read()
if sys.argv[1].endswith(".json"):
    import json
    docs = json.loads(text)
else:
    import yaml_rs
    docs = yaml_rs.loads(text, parse_datetime=False)
items = docs["items"] if isinstance(docs, dict) else docs
keys = [(d["kind"], d["metadata"]["name"]) for d in items]
"""


def floor_cpu(path: str, repeat: int = 3) -> float:
    """The least CPU any Python `caldera schedule` spends outside the scheduling pass on the List
    at `path`: start the interpreter, import click and numpy, read and parse the file with the
    fastest parser installed (the stdlib's json for JSON, which beats orjson on these Lists;
    yaml-rs with no YAML 1.1 checks for YAML), and touch each object once. Nothing is validated,
    decoded or written. Best of `repeat` children, in CPU seconds."""
    code = "import sys; sys.argv[1:] = [" + repr(path) + "]\n" + FLOOR
    best = None
    for _ in range(repeat):
        _child(code, stdout=False)
        best = _last_cpu[0] if best is None else min(best, _last_cpu[0])
    assert best is not None
    return best


BREAKDOWN = """
import io, json, sys, time, resource
t0 = time.process_time()
from caldera.api.loader import load_cluster
from caldera.api.reader import read_documents
from caldera.cli import schedule as cs
from caldera.configfile import load_config
from caldera.engine.oneshot import run_pass
from caldera.plugins.registry import build_registry
t1 = time.process_time()
docs = read_documents([PATH]); n = sum(1 for _ in docs); del docs
t2 = time.process_time()
cluster = load_cluster([PATH])
t3 = time.process_time()
reg = build_registry()
res = run_pass(cluster, load_config(None, reg), registry=reg)
t4 = time.process_time()
out, sys.stdout = sys.stdout, io.StringIO()
cs._emit(res, "json")
size = sys.stdout.tell(); sys.stdout = out
t5 = time.process_time()
print(json.dumps({"import": t1 - t0, "parse": t2 - t1, "decode": (t3 - t2) - (t2 - t1), "schedule": t4 - t3,
                  "output": t5 - t4, "docs": n, "bound": len(res.bindings), "unschedulable": len(res.unschedulable),
                  "output_bytes": size}))
"""


def breakdown(path: str) -> dict[str, float]:
    _, _, out = _child(BREAKDOWN.replace("PATH", repr(path)))
    return json.loads(out.strip().splitlines()[-1])


def baseline_rss() -> int:
    """Peak RSS of a child that only imports the CLI (the interpreter + numpy + Caldera)."""
    return _child("import caldera.cli.main, caldera.engine.oneshot")[1]


PARSERS = """
import json, sys, time
path = PATH
text = open(path, encoding="utf-8").read()
rows = []
def t(name, f, *a):
    try:
        t0 = time.perf_counter(); r = f(*a); dt = time.perf_counter() - t0
        rows.append((name, dt)); return r
    except Exception as e:
        rows.append((name + " (" + type(e).__name__ + ")", float("nan")))
if path.endswith(".json"):
    t("json.loads", json.loads, text)
    try:
        import orjson; t("orjson.loads", orjson.loads, text)
    except ImportError: pass
    try:
        import msgspec; t("msgspec.json.decode", msgspec.json.decode, text.encode())
    except ImportError: pass
else:
    import yaml
    if "--pure" in sys.argv:
        t("PyYAML SafeLoader", lambda s: list(yaml.load_all(s, Loader=yaml.SafeLoader)), text)
    t("PyYAML CSafeLoader", lambda s: list(yaml.load_all(s, Loader=yaml.CSafeLoader)), text)
    from caldera.api import reader
    t("caldera reader", lambda p: sum(1 for _ in reader.read_documents([p])), path)
for name, dt in rows:
    print(f"{name:<32} {dt:8.2f} s")
"""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", action="append", choices=sorted(DUMPS), help="which dump (repeatable); default realistic")
    ap.add_argument("--scale", type=float, default=1.0, help="scale the object counts (smoke tests)")
    ap.add_argument("--dir", default=None, help="where to write the dumps (default: a temporary directory)")
    ap.add_argument("--write", default=None, metavar="PATH", help="only write the (first) dump to PATH")
    ap.add_argument("--breakdown", action="store_true", help="also time parse / decode / schedule / output")
    ap.add_argument("--parsers", action="store_true", help="time the parsers on the dump (not the CLI)")
    ap.add_argument("--output", default="json", choices=("json", "yaml", "table"))
    a = ap.parse_args(argv)
    kinds = a.dump or ["realistic"]
    if a.write:
        size = write_dump(kinds[0], a.write, a.scale)
        print(f"{a.write}: {size / 1e6:.1f} MB")
        return
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        base = baseline_rss()
        print(f"interpreter baseline (import caldera): peak RSS {base / 2**20:.0f} MiB")
        for kind in kinds:
            path = os.path.join(tmp, f"{kind}.{DUMPS[kind][0]}")
            t0 = time.perf_counter()
            size = write_dump(kind, path, a.scale)
            print(f"{kind}: {size / 1e6:.1f} MB written in {time.perf_counter() - t0:.1f} s", flush=True)
            if a.parsers:
                code = PARSERS.replace("PATH", repr(path))
                p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
                print(p.stdout + p.stderr, end="", flush=True)
                continue
            wall, rss = run_cli(path, a.output)
            print(f"  caldera schedule -o {a.output}: {wall:.2f} s wall ({_last_cpu[0]:.2f} s CPU), "
                  f"peak RSS {rss / 2**20:.0f} MiB "
                  f"({rss / size:.2f}x the file; "
                  f"{(rss - base) / size:.2f}x above the baseline)", flush=True)
            if a.breakdown:
                b = breakdown(path)
                print("  breakdown (CPU s): " + ", ".join(f"{k} {b[k]:.2f}" for k in
                                                  ("import", "parse", "decode", "schedule", "output"))
                      + f"; {b['docs']} objects, {b['bound']} bound, {b['unschedulable']} unschedulable, "
                        f"output {b['output_bytes'] / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
