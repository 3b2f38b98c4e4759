"""Numatopology objects (nodeinfo.volcano.sh/v1alpha1): a node's NUMA layout as the numa-aware plugin
reads it (Volcano v1.15.1: staging/.../nodeinfo/v1alpha1/numatopo_types.go, pkg/scheduler/api/numa_info.go,
cache/event_handlers.go getNumaInfo).

A Numatopology is cluster-scoped and named after its node. Its spec:
  policies:    {CPUManagerPolicy: none|static, TopologyManagerPolicy: none|best-effort|restricted|single-numa-node}
  resReserved: {cpu: "1", ...}        quantities the kubelet reserves (cpu: the first CPUs by topology)
  numares:     {cpu: {allocatable: "0-7", capacity: 8}}   per resource, the free CPU ids (a cpuset)
  cpuDetail:   {"0": {numa: 0, socket: 0, core: 0}, ...}  per CPU id, where it sits

Differences from Volcano, all on bad input (Volcano logs and carries on with a zero value): an
allocatable that is not a cpuset, a cpuDetail key that is not a CPU id, a non-integer numa/socket/
core, a resReserved value that is not a quantity, and a policy name or value Volcano does not know
are InputErrors naming the object.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ...api.quantity import QuantityError, nano_to_milli, parse_nano
from ...errors import InputError

if TYPE_CHECKING:
    from ...api.loader import Cluster

CPU_MANAGER_POLICY = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
CPU_MANAGER_POLICIES = ("none", "static")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
POLICY_VALUES = {CPU_MANAGER_POLICY: CPU_MANAGER_POLICIES, TOPOLOGY_MANAGER_POLICY: TOPOLOGY_POLICIES}


# ---- cpusets (k8s.io/utils/cpuset list format: "0-3,8,10-11") ----------------------------------------
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_cpuset(s: str) -> frozenset[int]:
    """cpuset.Parse: "" is empty; ranges must not be reversed. ValueError when malformed."""
    out: set[int] = set()
    if s == "":
        return frozenset()
    for part in s.split(","):
        m = _RANGE.match(part)
        if m is None:
            raise ValueError(f"invalid cpuset {s!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"invalid cpuset {s!r}: range {part.strip()!r} is reversed")
        out.update(range(lo, hi + 1))
    return frozenset(out)


def format_cpuset(cpus: frozenset[int] | set[int]) -> str:
    """CPUSet.String: sorted, consecutive ids as ranges."""
    ids = sorted(cpus)
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


# ---- topology.CPUDetails ---------------------------------------------------------------------------
class CPUInfo(NamedTuple):
    numa: int
    socket: int
    core: int


class CPUDetails(dict[int, CPUInfo]):
    """cpu id -> CPUInfo, with the kubelet's CPUDetails queries (sets of ids)."""

    def keep_only(self, cpus: frozenset[int] | set[int]) -> CPUDetails:
        return CPUDetails({c: info for c, info in self.items() if c in cpus})

    def cpus(self) -> frozenset[int]:
        return frozenset(self)

    def numa_nodes(self) -> frozenset[int]:
        return frozenset(i.numa for i in self.values())

    def sockets(self) -> frozenset[int]:
        return frozenset(i.socket for i in self.values())

    def cores(self) -> frozenset[int]:
        return frozenset(i.core for i in self.values())

    def cores_in_sockets(self, *ids: int) -> frozenset[int]:
        return frozenset(i.core for i in self.values() if i.socket in ids)

    def cpus_in_sockets(self, *ids: int) -> frozenset[int]:
        return frozenset(c for c, i in self.items() if i.socket in ids)

    def cpus_in_cores(self, *ids: int) -> frozenset[int]:
        return frozenset(c for c, i in self.items() if i.core in ids)

    def cpus_in_numa_nodes(self, *ids: int) -> frozenset[int]:
        return frozenset(c for c, i in self.items() if i.numa in ids)


@dataclass
class NumaResource:
    """One numares entry: the free ids (Allocatable) and the capacity."""
    allocatable: frozenset[int]
    capacity: int = 0


@dataclass
class NumatopoInfo:
    """api.NumatopoInfo: a node's Numatopology as the scheduler holds it."""
    name: str
    policies: dict[str, str] = field(default_factory=dict)
    numa_res: dict[str, NumaResource] = field(default_factory=dict)
    cpu_detail: CPUDetails = field(default_factory=CPUDetails)
    res_reserved_milli: dict[str, int] = field(default_factory=dict)   # name -> MilliValue

    def res_sets(self) -> dict[str, frozenset[int]]:
        """GenerateNodeResNumaSets for this node: resource -> free ids."""
        return {k: r.allocatable for k, r in self.numa_res.items()}

    def allocate(self, sets: dict[str, frozenset[int]]) -> None:
        """NumatopoInfo.Allocate: the ids are no longer free."""
        for name, ids in sets.items():
            if name in self.numa_res:
                self.numa_res[name].allocatable = self.numa_res[name].allocatable - ids


def _int(v: Any, where: str) -> int:
    if v is None:
        return 0                  # omitempty: a missing field is 0
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"{where}: must be an integer, got {v!r}")
    return v


def _map(d: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"{where}.{key}: must be a mapping, got {type(v).__name__}")
    return v


def parse_numatopology(doc: dict[str, Any]) -> NumatopoInfo:
    """getNumaInfo, strict (see the module docstring). Raises InputError(problem)."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise InputError("metadata.name: required (the name of the node this Numatopology describes)")
    spec = doc.get("spec") or {}
    if not isinstance(spec, dict):
        raise InputError("spec: must be a mapping")
    info = NumatopoInfo(name)
    for k, v in _map(spec, "policies", "spec").items():
        allowed = POLICY_VALUES.get(str(k))
        if allowed is None:
            raise InputError(f"spec.policies: unknown policy {k!r}; expected {CPU_MANAGER_POLICY} or "
                             f"{TOPOLOGY_MANAGER_POLICY}")
        if v not in allowed:
            raise InputError(f"spec.policies.{k}: unknown value {v!r}; expected one of {', '.join(allowed)}")
        info.policies[str(k)] = v
    for k, v in _map(spec, "numares", "spec").items():
        where = f"spec.numares.{k}"
        if not isinstance(v, dict):
            raise InputError(f"{where}: must be a mapping with allocatable and capacity")
        alloc = v.get("allocatable") or ""
        if not isinstance(alloc, str):
            raise InputError(f"{where}.allocatable: must be a cpuset string such as \"0-3,8\", got {alloc!r}")
        try:
            ids = parse_cpuset(alloc)
        except ValueError as e:
            raise InputError(f"{where}.allocatable: {e}; expected a cpuset such as \"0-3,8\"") from None
        info.numa_res[str(k)] = NumaResource(ids, _int(v.get("capacity"), f"{where}.capacity"))
    for k, v in _map(spec, "cpuDetail", "spec").items():
        where = f"spec.cpuDetail.{k}"
        if not (isinstance(k, int) and not isinstance(k, bool)) and not (isinstance(k, str) and k.isdigit()):
            raise InputError(f"spec.cpuDetail: key {k!r} is not a CPU id (a non-negative integer)")
        if not isinstance(v, dict):
            raise InputError(f"{where}: must be a mapping with numa, socket and core")
        numa = _int(v.get("numa"), f"{where}.numa")
        if not 0 <= numa < 64:
            raise InputError(f"{where}.numa: must be a NUMA node id from 0 to 63, got {numa}")
        info.cpu_detail[int(k)] = CPUInfo(numa, _int(v.get("socket"), f"{where}.socket"),
                                          _int(v.get("core"), f"{where}.core"))
    for k, v in _map(spec, "resReserved", "spec").items():
        try:
            info.res_reserved_milli[str(k)] = nano_to_milli(parse_nano(v))
        except QuantityError as e:
            raise InputError(f"spec.resReserved.{k}: {e}") from None
    return info


def numa_objects(cluster: Cluster, node_names: set[str]) -> tuple[dict[str, NumatopoInfo], list[str]]:
    """The Numatopology objects of the manifests by node name. One that names a node not in
    `node_names` is an input error naming the object (Volcano keeps it on a placeholder node no
    pod can use: in a set of manifests it is a mistake worth knowing; `caldera run` passes only
    those of nodes it knows). The list of warnings is kept for callers; it is empty."""
    out: dict[str, NumatopoInfo] = {}
    warnings: list[str] = []
    for source, doc in cluster.other:
        if doc.get("kind") != "Numatopology":
            continue
        meta = doc.get("metadata")
        what = f"Numatopology {meta.get('name', '?') if isinstance(meta, dict) else '?'}"
        try:
            info = parse_numatopology(doc)
        except InputError as e:
            raise InputError(e.problem, source, what) from None
        if info.name in out:
            raise InputError(f'numatopologies.nodeinfo.volcano.sh "{info.name}" already exists', source, what)
        if info.name not in node_names:
            raise InputError(f'node "{info.name}" is not in the input: a Numatopology describes the NUMA layout '
                             "of a Node of the same name; add the Node or remove the Numatopology", source, what)
        out[info.name] = info
    return out, warnings
