"""Read what `caldera simulate` replays: the cluster it starts with and the workload that arrives.

Inputs are files or directories (a directory gives its *.yaml, *.yml, *.json and *.csv files,
sorted); each file's format is detected from its content: Kubernetes/Volcano manifests, Caldera's
CSV trace, or the openb trace CSVs. docs/simulate-traces.md describes the formats. Bad input
raises InputError naming the file, the row or object, and what to fix.
"""
from __future__ import annotations

from collections.abc import Mapping

from ...api.dra import KINDS as DRA_KINDS
from ...api.loader import KUBE_PROFILES_ONLY, Cluster, load_cluster, resolve_priorities
from ...api.objects import Node, PriorityClass
from ...api.output import ignored_summary
from ...api.storage import STORAGE_KINDS
from ...config import featuregates
from ...errors import InputError
from ..model import Workload
from .builder import WorkloadBuilder
from .calderacsv import add_caldera_csv
from .common import CALDERA_CSV, MANIFESTS, OPENB_NODES, OPENB_PODS, Source, detect_all, gc_paused, row_where
from .manifests import Document, add_manifests, read_manifest_file, read_priority_classes, sort_node_events
from .openb import add_openb_pods, read_openb_nodes


def read_cluster(paths: list[str]) -> Cluster:
    """The cluster a simulation starts with: Kubernetes manifests (as `caldera schedule -f` reads
    them; bound pods are the initial state) and/or openb node lists. Nodes keep the order of the
    arguments (those of all manifests together, where the first manifest is); a node name may
    appear only once."""
    warnings: list[str] = []
    sources = detect_all(paths, warnings)
    for s in sources:
        if s.fmt in (CALDERA_CSV, OPENB_PODS):
            raise InputError("this is a workload trace (pods to schedule), not a cluster; give it with --workload",
                             s.path, "row 1")
    with gc_paused():
        cluster = load_cluster([s.path for s in sources if s.fmt == MANIFESTS])
        cluster.warnings[:0] = warnings
        # storage and DRA objects are read (kube configurations: docs/simulate.md "DRA and volumes")
        cluster.ignored = [i for i in cluster.ignored if not (i.category == KUBE_PROFILES_ONLY and i.kind in _READ)]
        if featuregates.enabled(featuregates.GENERIC_WORKLOAD):     # kube's Workloads, for GangScheduling
            cluster.ignored = [i for i in cluster.ignored if i.kind != "Workload"]
        summary = ignored_summary(cluster.ignored)       # kinds the simulation does not read, ...
        if summary:
            cluster.warnings.append(summary)
        cluster.nodes = _cluster_nodes(sources, cluster.nodes)
    return cluster


_READ = frozenset(DRA_KINDS) | {kind for kind, _ in STORAGE_KINDS}


def _cluster_nodes(sources: list[Source], manifest_nodes: list[Node]) -> list[Node]:
    """The manifests' nodes and the node lists' nodes, in argument order; duplicates are errors."""
    seen = {n.name for n in manifest_nodes}
    nodes: list[Node] = []
    placed = False
    for s in sources:
        if s.fmt != OPENB_NODES:
            if not placed:
                nodes.extend(manifest_nodes)
                placed = True
            continue
        for line, node in read_openb_nodes(s.path):
            if node.name in seen:
                raise InputError(f"duplicate Node name {node.name!r}: every node needs its own name",
                                 s.path, row_where(line))
            seen.add(node.name)
            nodes.append(node)
    if not placed:
        nodes.extend(manifest_nodes)
    return nodes


def read_workload(paths: list[str], *, default_scheduler: str | None = None,
                  priority_classes: Mapping[str, PriorityClass] | None = None) -> Workload:
    """The pods that arrive during a simulation (in input order), the Volcano objects, and the node
    events. `default_scheduler` is the schedulerName of pods that name none (default:
    "default-scheduler"; Volcano Jobs default to "volcano" as Volcano does). Pod priorities are
    resolved as the Priority admission plugin would, from the workload's PriorityClasses and
    `priority_classes` (e.g. the cluster's)."""
    b = WorkloadBuilder(default_scheduler)
    sources = detect_all(paths, b.workload.warnings)
    with gc_paused():
        docs = [read_manifest_file(s.path) if s.fmt == MANIFESTS else [] for s in sources]
        pcs = dict(priority_classes or {})
        for d in docs:
            pcs.update(read_priority_classes(d))
        for s, d in zip(sources, docs):
            _add_source(b, s, d, pcs)
        _finish(b.workload, pcs)
    return b.workload


def _add_source(b: WorkloadBuilder, s: Source, docs: list[Document], pcs: Mapping[str, PriorityClass]) -> None:
    if s.fmt == MANIFESTS:
        add_manifests(b, docs, pcs)
    elif s.fmt == CALDERA_CSV:
        add_caldera_csv(b, s.path)
    elif s.fmt == OPENB_PODS:
        add_openb_pods(b, s.path)
    else:
        raise InputError("this is an openb node list, which describes the cluster, not the workload; "
                         "give it with --cluster", s.path, "row 1")


def _finish(w: Workload, pcs: dict[str, PriorityClass]) -> None:
    """Resolve the pods' priorities and order the node events by time."""
    c = Cluster(pods=[sp.pod for sp in w.pods], priority_classes=pcs)
    resolve_priorities(c)
    w.warnings.extend(c.warnings)
    w.priority_classes = pcs
    sort_node_events(w.node_events)


__all__ = ["read_cluster", "read_workload"]
