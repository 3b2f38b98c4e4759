"""Decode the documents `reader` reads into a Cluster: Nodes, Pods, PriorityClasses, PDBs, and
the Volcano objects the batch scheduler consumes. Every error names the file, the object and
the problem.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .objects import SYSTEM_PRIORITY_CLASSES, Node, Pod, PriorityClass
from .pdb import PodDisruptionBudget
from .reader import MANIFEST_SUFFIXES, read_documents

__all__ = ["MANIFEST_SUFFIXES", "Cluster", "load_cluster", "read_documents", "resolve_priorities"]


@dataclass
class Cluster:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    other: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (source, doc) of kinds others consume
    warnings: list[str] = field(default_factory=list)


def _describe(doc: dict[str, Any], index: int) -> str:
    kind = doc.get("kind") or "object"
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = meta.get("name")
    ns = meta.get("namespace")
    if name:
        return f"{kind} {ns + '/' if ns else ''}{name}"
    return f"document {index} ({kind})"


CONSUMED_ELSEWHERE = {"PodGroup", "Queue", "Job"}


def load_cluster(paths: list[str]) -> Cluster:
    c = Cluster()
    seen_nodes: set[str] = set()
    seen_pods: set[str] = set()
    for seq, (source, idx, doc) in enumerate(read_documents(paths)):
        kind = doc.get("kind")
        api = str(doc.get("apiVersion") or "")
        try:
            if kind == "Node":
                n = Node(doc)
                if n.name in seen_nodes:
                    raise InputError("duplicate Node name")
                seen_nodes.add(n.name)
                c.nodes.append(n)
            elif kind == "Pod":
                p = Pod(doc, seq)
                if p.key in seen_pods:
                    raise InputError("duplicate Pod")
                seen_pods.add(p.key)
                c.pods.append(p)
            elif kind == "PriorityClass":
                pc = PriorityClass(doc)
                c.priority_classes[pc.name] = pc
            elif kind == "PodDisruptionBudget" and api == "policy/v1":
                pdb = PodDisruptionBudget(doc)
                if not pdb.has_status:
                    c.warnings.append(f"{source}: {_describe(doc, idx)}: no status.disruptionsAllowed; 0 assumed "
                                      "(preemption reads only the status the disruption controller computes)")
                c.pdbs.append(pdb)
            elif kind == "PodDisruptionBudget":
                c.warnings.append(f"{source}: {_describe(doc, idx)}: apiVersion {api!r} is not served since "
                                  "Kubernetes 1.25; use policy/v1 (skipped)")
            elif kind in CONSUMED_ELSEWHERE and "volcano.sh" in api:
                c.other.append((source, doc))
            else:
                c.warnings.append(f"{source}: {_describe(doc, idx)}: kind {kind!r} is not used by the scheduler; "
                                  "skipped")
        except InputError as e:
            raise InputError(e.problem, source, _describe(doc, idx)) from None
    resolve_priorities(c)
    return c


def resolve_priorities(c: Cluster) -> None:
    """What the Priority admission plugin does: spec.priority from priorityClassName or globalDefault."""
    default: PriorityClass | None = None
    for pc in c.priority_classes.values():
        if pc.global_default and (default is None or pc.value > default.value):
            default = pc
    for p in c.pods:
        if p.explicit_priority:
            if p.preemption_policy is None:
                cls = c.priority_classes.get(p.priority_class_name)
                p.preemption_policy = cls.preemption_policy if cls else "PreemptLowerPriority"
            continue
        name = p.priority_class_name
        if name:
            cls = c.priority_classes.get(name)
            if cls is not None:
                p.priority = cls.value
                p.preemption_policy = p.preemption_policy or cls.preemption_policy
            elif name in SYSTEM_PRIORITY_CLASSES:
                p.priority = SYSTEM_PRIORITY_CLASSES[name]
            else:
                c.warnings.append(f"Pod {p.key}: PriorityClass {name!r} not found; priority 0 assumed "
                                  "(the API server would reject this pod)")
        elif default is not None:
            p.priority = default.value
            p.preemption_policy = p.preemption_policy or default.preemption_policy
        p.preemption_policy = p.preemption_policy or "PreemptLowerPriority"
