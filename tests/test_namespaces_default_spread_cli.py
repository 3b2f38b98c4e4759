"""End-to-end `caldera schedule` runs for issue 12: default topology spreading from a pod's owners
(Service, ReplicaSet) and InterPodAffinity namespaceSelectors on real Namespace labels."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from caldera.cli.main import cli


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return str(p)


def schedule(path: str) -> dict:
    r = CliRunner().invoke(cli, ["schedule", "-f", path, "-o", "json"])
    assert r.exit_code == 0, (r.exit_code, r.stdout, r.stderr, r.exception)
    return json.loads(r.stdout)


def node(name: str, zone: str, cpu: str = "8") -> str:
    return (f"---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n"
            f"    kubernetes.io/hostname: {name}\n    topology.kubernetes.io/zone: {zone}\n"
            f"status:\n  allocatable: {{cpu: '{cpu}', memory: 32Gi, pods: '110'}}\n")


def pod(name: str, *, labels: dict | None = None, owner: str | None = None, ns: str = "default",
        extra: str = "", node_name: str | None = None) -> str:
    lab = "".join(f"\n    {k}: {v}" for k, v in (labels or {}).items())
    meta = f"  name: {name}\n  namespace: {ns}\n" + (f"  labels:{lab}\n" if lab else "")
    if owner:
        meta += (f"  ownerReferences:\n  - {{apiVersion: apps/v1, kind: ReplicaSet, name: {owner}, "
                 "uid: u1, controller: true}\n")
    spec = f"  nodeName: {node_name}\n" if node_name else ""
    return (f"---\napiVersion: v1\nkind: Pod\nmetadata:\n{meta}spec:\n{spec}"
            f"  containers: [{{name: c, image: x, resources: {{requests: {{cpu: 100m}}}}}}]\n{extra}")


# zone a's node is far bigger: NodeResourcesFit's LeastAllocated alone puts every pod there
NODES = node("a0", "a", cpu="64") + node("b0", "b") + node("c0", "c")
RS = """---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9, namespace: default}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web}}}
"""
SVC = """---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {selector: {app: web}}
"""


def zones_of(out: dict) -> Counter:
    return Counter(b["node"][0] for b in out["bindings"])


def test_replicaset_pods_spread_over_zones_with_system_defaults(tmp_path):
    pods = "".join(pod(f"web-{i}", labels={"app": "web"}, owner="web-7d9") for i in range(6))
    out = schedule(write(tmp_path, NODES + RS + pods))
    assert len(out["bindings"]) == 6
    assert zones_of(out) == Counter({"a": 2, "b": 2, "c": 2})
    assert out["ignored"] == []


def test_service_alone_gives_the_default_selector(tmp_path):
    pods = "".join(pod(f"web-{i}", labels={"app": "web"}) for i in range(6))
    out = schedule(write(tmp_path, NODES + SVC + pods))
    assert zones_of(out) == Counter({"a": 2, "b": 2, "c": 2})


def test_without_owner_or_service_there_is_no_default_spreading(tmp_path):
    pods = "".join(pod(f"web-{i}", labels={"app": "web"}) for i in range(6))
    out = schedule(write(tmp_path, NODES + pods))
    assert len(out["bindings"]) == 6
    assert zones_of(out)["a"] >= 4             # NodeResources alone: mostly the big node


def test_owner_reference_to_a_replicaset_not_in_the_input_does_not_spread(tmp_path):
    pods = "".join(pod(f"web-{i}", labels={"app": "web"}, owner="gone") for i in range(6))
    out = schedule(write(tmp_path, NODES + pods))
    assert zones_of(out)["a"] >= 4             # NodeResources alone: mostly the big node


NS = """---
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {tier: gold}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
"""
ANTI = """  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: db}}
        namespaceSelector: {matchLabels: {tier: gold}}
        topologyKey: topology.kubernetes.io/zone
"""


def test_anti_affinity_namespace_selector_on_a_namespace_label(tmp_path):
    nodes = node("a0", "a") + node("b0", "b")
    running = pod("db-0", labels={"app": "db"}, ns="team-a", node_name="a0") \
        + pod("db-1", labels={"app": "db"}, ns="team-b", node_name="b0")
    out = schedule(write(tmp_path, nodes + NS + running + pod("new", ns="team-b", extra=ANTI)))
    # only team-a carries tier=gold: zone a is excluded, team-b's db in zone b does not count
    assert out["bindings"] == [{"pod": "team-b/new", "node": "b0"}]
    assert out["ignored"] == []


def test_anti_affinity_namespace_selector_without_namespace_objects_matches_nothing(tmp_path):
    nodes = node("a0", "a")
    running = pod("db-0", labels={"app": "db"}, ns="team-a", node_name="a0")
    out = schedule(write(tmp_path, nodes + running + pod("new", ns="team-b", extra=ANTI)))
    assert out["bindings"] == [{"pod": "team-b/new", "node": "a0"}]


def test_existing_pods_anti_affinity_sees_the_incoming_namespace_labels(tmp_path):
    nodes = node("a0", "a") + node("b0", "b")
    running = pod("db-0", labels={"app": "db"}, ns="team-b", node_name="a0", extra=ANTI)
    out = schedule(write(tmp_path, nodes + NS + running + pod("new", labels={"app": "db"}, ns="team-a")))
    assert out["bindings"] == [{"pod": "team-a/new", "node": "b0"}]
