"""Read Kubernetes manifests (files, directories, stdin) into a Cluster.

Accepts multi-document YAML, JSON, and `kind: List` wrappers, as `kubectl get -o yaml` prints
them. Every error names the file, the document index or object, and the problem.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .objects import SYSTEM_PRIORITY_CLASSES, Node, Pod, PriorityClass
from .pdb import PodDisruptionBudget

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


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


def _load_text(text: str, source: str) -> list[Any]:
    try:
        if source.endswith(".json") or text.lstrip().startswith(("{", "[")):
            try:
                data = json.loads(text)
                return data if isinstance(data, list) else [data]
            except json.JSONDecodeError:
                pass  # YAML is a superset; let the YAML parser produce the error message
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"malformed YAML{where}: {problem}", source) from None


def _flatten(docs: Iterable[object], source: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for i, d in enumerate(docs):
        if d is None:
            continue
        if not isinstance(d, dict):
            raise InputError(f"document {i}: expected a Kubernetes object (a mapping), got {type(d).__name__}", source)
        if d.get("kind") == "List" or (str(d.get("kind", "")).endswith("List") and isinstance(d.get("items"), list)):
            for j, item in enumerate(d.get("items") or []):
                if not isinstance(item, dict):
                    raise InputError(f"document {i} item {j}: expected a mapping", source)
                out.append((i, item))
        else:
            out.append((i, d))
    return out


def _sources(paths: list[str]) -> list[tuple[str, Callable[[], str]]]:
    out = []
    for p in paths:
        if p == "-":
            out.append(("<stdin>", sys.stdin.read))
            continue
        path = Path(p)
        if path.is_dir():
            files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
            out.extend((str(f), f.read_text) for f in files)
        elif path.is_file():
            out.append((str(path), path.read_text))
        else:
            raise InputError("no such file or directory", p)
    return out


def read_documents(paths: list[str]) -> list[tuple[str, int, dict[str, Any]]]:
    docs = []
    for source, read in _sources(paths):
        try:
            text = read()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read: {e}", source) from None
        for i, d in _flatten(_load_text(text, source), source):
            docs.append((source, i, d))
    return docs


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
