"""Decode the documents `reader` reads into a Cluster: Nodes, Pods, PriorityClasses, PDBs, and
the Volcano objects the batch scheduler consumes. Every error names the file, the object and
the problem.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .gputopology import check_topology
from .objects import SYSTEM_PRIORITY_CLASSES, Node, Pod, PriorityClass, check_priority_class
from .output import API_NOT_SERVED, KIND_NOT_USED, Ignored, object_name
from .pdb import PodDisruptionBudget
from .reader import MANIFEST_SUFFIXES, read_documents
from .resourcequota import ResourceQuota
from .validation import already_exists

__all__ = ["MANIFEST_SUFFIXES", "Cluster", "load_cluster", "read_documents", "resolve_priorities"]


@dataclass
class Cluster:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    # v1 ResourceQuotas: read (and validated) for Volcano's resourcequota plugin; also listed in
    # `ignored` (no kube-scheduler plugin reads them; the batch runner drops that entry when used)
    resource_quotas: list[ResourceQuota] = field(default_factory=list)
    other: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (source, doc) of kinds others consume
    warnings: list[str] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)    # objects read and not used, in input order
    # (kind, ns/name) -> (file, position in the input) of Pods, PDBs and Volcano objects
    where: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    documents: int = 0                                      # objects read (0: the input was empty)

    def where_of(self, kind: str, key: str) -> tuple[str, int]:
        """(file, position) of an object read from the input; ("<input>", after all) if unknown."""
        return self.where.get((kind, key), ("<input>", 1 << 62))


def _describe(doc: dict[str, Any], index: int) -> str:
    kind = doc.get("kind") or "object"
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = meta.get("name")
    ns = meta.get("namespace")
    if name:
        return f"{kind} {f'{ns}/' if ns else ''}{name}"
    return f"document {index} ({kind})"


CONSUMED_ELSEWHERE = {"PodGroup", "Queue", "Job", "HyperNode", "Numatopology"}


def load_cluster(paths: list[str]) -> Cluster:
    c = Cluster()
    seen_nodes: set[str] = set()
    seen_pods: set[str] = set()
    seen_pdbs: set[str] = set()
    seen_quotas: set[str] = set()
    for seq, (source, idx, doc) in enumerate(read_documents(paths)):
        c.documents += 1
        kind = doc.get("kind")
        api = str(doc.get("apiVersion") or "")
        try:
            if kind is not None and not isinstance(kind, str):
                raise InputError(f"kind: must be a string, got {type(kind).__name__}")
            if kind == "Node":
                n = Node(doc, validate=True)
                check_topology(n)          # caldera.dev/gpu-topology (docs/gpu.md "GPU links")
                if n.name in seen_nodes:
                    raise InputError(already_exists("nodes", n.name))
                seen_nodes.add(n.name)
                c.nodes.append(n)
            elif kind == "Pod":
                p = Pod(doc, seq, validate=True)
                if p.key in seen_pods:
                    raise InputError(already_exists("pods", p.name))
                seen_pods.add(p.key)
                c.pods.append(p)
                c.where[("Pod", p.key)] = (source, seq)
            elif kind == "PriorityClass":
                pc = PriorityClass(doc)
                check_priority_class(pc, api, c.priority_classes)
                c.priority_classes[pc.name] = pc
            elif kind == "PodDisruptionBudget" and api == "policy/v1":
                pdb = PodDisruptionBudget(doc)
                if pdb.key in seen_pdbs:
                    raise InputError(already_exists("poddisruptionbudgets.policy", pdb.name))
                seen_pdbs.add(pdb.key)
                if not pdb.has_status:
                    c.warnings.append(f"{source}: {_describe(doc, idx)}: no status.disruptionsAllowed; 0 assumed "
                                      "(preemption reads only the status the disruption controller computes)")
                c.pdbs.append(pdb)
                c.where[("PodDisruptionBudget", pdb.key)] = (source, seq)
            elif kind == "PodDisruptionBudget":
                c.ignored.append(Ignored(kind, object_name(doc), source, f"{api or '(no apiVersion)'} "
                                         "PodDisruptionBudget is not served since Kubernetes 1.25; use policy/v1",
                                         API_NOT_SERVED, seq))
            elif kind == "ResourceQuota" and api == "v1":
                rq = ResourceQuota(doc)
                if rq.key in seen_quotas:
                    raise InputError(already_exists("resourcequotas", rq.name))
                seen_quotas.add(rq.key)
                c.resource_quotas.append(rq)
                c.where[("ResourceQuota", rq.key)] = (source, seq)
                c.ignored.append(Ignored(kind, object_name(doc), source,
                                         "kind ResourceQuota is not used by the scheduler", KIND_NOT_USED, seq))
            elif kind in CONSUMED_ELSEWHERE and "volcano.sh" in api:
                c.other.append((source, doc))
                c.where[(kind, object_name(doc))] = (source, seq)
            else:
                kname = str(kind or "(no kind)")
                what = f"{kname} ({api})" if kind in CONSUMED_ELSEWHERE else kname
                c.ignored.append(Ignored(kname, object_name(doc), source,
                                         f"kind {what} is not used by the scheduler", KIND_NOT_USED, seq))
        except InputError as e:
            raise InputError(e.problem, source, _describe(doc, idx)) from None
    resolve_priorities(c)
    return c


def resolve_priorities(c: Cluster) -> None:
    """What the Priority admission plugin does: spec.priority from priorityClassName or globalDefault
    (of several globalDefault classes, which only a race lets a cluster have, the lowest value)."""
    default: PriorityClass | None = None
    for pc in c.priority_classes.values():
        if pc.global_default and (default is None or pc.value < default.value):
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
