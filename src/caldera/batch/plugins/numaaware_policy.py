"""The numa-aware plugin's topology policies and its CPU hint provider (Volcano v1.15.1
pkg/scheduler/plugins/numaaware/policy and provider/cpumanager).

NUMA affinities are bitmasks (Python ints, bit i = NUMA node i), compared as the kubelet's bitmask
package does: a mask is narrower with fewer bits set, or with as many and a lower value.

Hints, per hint provider (only the CPU manager here): resource -> list of TopologyHint, None for
"no preference" (the provider returned nothing) and [] for "no possible affinity".

The CPU accumulator (take_by_topology) follows Volcano's, including what differs from the kubelet's
(the free sockets and free cores it considers are the socket / core ids that are also free CPU
ids, and its CPU order comes from a comparator that is not a strict order, run through Go's
sort.Slice step for step). One deliberate difference: Volcano lists the sockets in Go map order
(random) before sorting them with that comparator, so its choice among sockets can vary from run
to run; Caldera starts from the sorted ids, one of the orders Volcano may use.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from ..api.numatopology import CPUDetails, CPUInfo, NumatopoInfo
from ..util.gosort import go_sort_slice

CPU = "cpu"
NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE = "none", "best-effort", "restricted", "single-numa-node"

CPUSet = frozenset[int]
ResSets = Mapping[str, CPUSet]


# ---- bitmasks ----------------------------------------------------------------------------------------
def mask_of(bits: Iterable[int]) -> int:
    m = 0
    for b in bits:
        m |= 1 << b
    return m


def bits_of(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def count(mask: int) -> int:
    return bin(mask).count("1")


def narrower(a: int, b: int) -> bool:
    """bitmask.IsNarrowerThan."""
    ca, cb = count(a), count(b)
    return a < b if ca == cb else ca < cb


def iterate_masks(bits: list[int]) -> Iterable[int]:
    """bitmask.IterateBitMasks: every non-empty subset, by size, then in combination order."""
    for size in range(1, len(bits) + 1):
        for combo in itertools.combinations(bits, size):
            yield mask_of(combo)


class TopologyHint(NamedTuple):
    affinity: int | None     # None: any NUMA node (a nil mask)
    preferred: bool


Hints = Mapping[str, "list[TopologyHint] | None"]


# ---- policies ------------------------------------------------------------------------------------------
def _filter_providers_hints(providers_hints: list[Hints | None]) -> list[list[TopologyHint]]:
    out: list[list[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            out.append([TopologyHint(None, True)])          # no preference at all
            continue
        for res in hints:
            got = hints[res]
            if got is None:
                out.append([TopologyHint(None, True)])      # no preference for this resource
            elif not got:
                out.append([TopologyHint(None, False)])     # no possible affinity
            else:
                out.append(list(got))
    return out


def _merge_permutation(default: int, permutation: tuple[TopologyHint, ...]) -> TopologyHint:
    merged = default
    preferred = True
    for h in permutation:
        merged &= default if h.affinity is None else h.affinity
        if not h.preferred:
            preferred = False
    return TopologyHint(merged, preferred)


def _merge_filtered_hints(numa_nodes: list[int], filtered: list[list[TopologyHint]]) -> TopologyHint:
    default = mask_of(numa_nodes)
    best = TopologyHint(default, False)
    for perm in itertools.product(*filtered):
        merged = _merge_permutation(default, perm)
        assert merged.affinity is not None
        if merged.affinity == 0:
            continue
        if merged.preferred and not best.preferred:
            best = merged
            continue
        if not merged.preferred and best.preferred:
            continue
        assert best.affinity is not None
        if narrower(merged.affinity, best.affinity):
            best = merged
    return best


def _single_numa_hints(filtered: list[list[TopologyHint]]) -> list[list[TopologyHint]]:
    return [[h for h in hints if h.preferred and (h.affinity is None or count(h.affinity) == 1)]
            for hints in filtered]


def predicate(policy: str, numa_nodes: list[int], providers_hints: list[Hints | None]) -> tuple[TopologyHint, bool]:
    """Policy.Predicate of the node's topology-manager policy: (best hint, admit). An unknown
    policy acts as none (GetPolicy's fallback)."""
    if policy == BEST_EFFORT:
        return _merge_filtered_hints(numa_nodes, _filter_providers_hints(providers_hints)), True
    if policy == RESTRICTED:
        best = _merge_filtered_hints(numa_nodes, _filter_providers_hints(providers_hints))
        return best, best.preferred
    if policy == SINGLE_NUMA_NODE:
        best = _merge_filtered_hints(numa_nodes, _single_numa_hints(_filter_providers_hints(providers_hints)))
        return best, best.preferred
    return TopologyHint(None, False), True


# ---- the CPU manager hint provider ---------------------------------------------------------------------
_ZERO = CPUInfo(0, 0, 0)


class CPUTopology:
    """topology.CPUTopology built from a Numatopology's cpuDetail."""
    __slots__ = ("core_socket", "details", "num_cores", "num_cpus", "num_sockets", "numa_size", "reserved",
                 "socket_cpus")

    def __init__(self, details: CPUDetails):
        self.details = details
        self.reserved: dict[int, CPUSet] = {}      # reserved milli-CPUs -> the CPUs reserved (memo)
        self.num_cpus = len(details)
        self.num_cores = len({(i.socket, i.core) for i in details.values()})
        self.num_sockets = len(details.sockets())
        # indexes of the whole topology: socket -> its CPUs, NUMA node -> CPU count, and per core
        # id the socket of its lowest CPU (what Volcano's CPU order reads)
        socket_cpus: dict[int, set[int]] = {}
        numa_size: dict[int, int] = {}
        core_socket: dict[int, tuple[int, int]] = {}
        for c, i in details.items():
            socket_cpus.setdefault(i.socket, set()).add(c)
            numa_size[i.numa] = numa_size.get(i.numa, 0) + 1
            if i.core not in core_socket or c < core_socket[i.core][0]:
                core_socket[i.core] = (c, i.socket)
        self.socket_cpus = {s: frozenset(v) for s, v in socket_cpus.items()}
        self.numa_size = numa_size
        self.core_socket = {core: s for core, (_, s) in core_socket.items()}

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0


class _Accumulator:
    def __init__(self, topo: CPUTopology, available: CPUSet, n: int):
        self.topo = topo
        self.details = topo.details.keep_only(available)
        self.needed = n
        self.result: set[int] = set()

    def take(self, cpus: CPUSet) -> None:
        self.result |= cpus
        for c in cpus:                  # (details is this accumulator's own copy)
            self.details.pop(c, None)
        self.needed -= len(cpus)

    def free_sockets(self) -> list[int]:
        return sorted(self.details.sockets() & self.details.cpus())

    def free_cores(self) -> list[int]:
        d = self.details
        cpus = d.cpus()
        socket_ids = sorted(d.sockets())
        size = {s: len(d.cores_in_sockets(s) & cpus) for s in socket_ids}
        go_sort_slice(socket_ids, lambda i, j: size[i] < size[j] or i < j)
        out: list[int] = []
        for s in socket_ids:
            out.extend(sorted(d.cores_in_sockets(s) & cpus))
        return out

    def free_cpus(self) -> list[int]:
        topo, d, result = self.topo, self.details, self.result
        in_socket: dict[int, int] = {}
        in_core: dict[int, list[int]] = {}
        for c, i in d.items():
            in_socket[i.socket] = in_socket.get(i.socket, 0) + 1
            in_core.setdefault(i.core, []).append(c)
        cores = sorted(in_core)
        key: dict[int, tuple[int, int, int, int]] = {}
        for core in cores:
            socket = topo.core_socket[core]
            key[core] = (len(topo.socket_cpus[socket] & result), in_socket.get(socket, 0), len(in_core[core]), socket)

        def less(i: int, j: int) -> bool:
            ki, kj = key[i], key[j]
            return (ki[0] > kj[0] or ki[1] < kj[1] or ki[2] < kj[2] or ki[3] < kj[3] or i < j)

        go_sort_slice(cores, less)
        out: list[int] = []
        for core in cores:
            out.extend(sorted(in_core[core]))
        return out

    def needs(self, n: int) -> bool:
        return self.needed >= n

    def satisfied(self) -> bool:
        return self.needed < 1

    def failed(self) -> bool:
        return self.needed > len(self.details)


def take_by_topology(topo: CPUTopology, available: CPUSet, n: int) -> CPUSet | None:
    """Volcano's takeByTopology: n CPUs of `available`, whole sockets first, then whole cores,
    then single CPUs; None when it cannot (Volcano's error)."""
    acc = _Accumulator(topo, available, n)
    if acc.satisfied():
        return frozenset(acc.result)
    if acc.failed():
        return None
    per_socket = topo.cpus_per_socket()
    if acc.needs(per_socket):
        for s in acc.free_sockets():
            acc.take(acc.details.cpus_in_sockets(s))
            if acc.satisfied():
                return frozenset(acc.result)
            if not acc.needs(per_socket):
                break
    per_core = topo.cpus_per_core()
    if acc.needs(per_core):
        for c in acc.free_cores():
            acc.take(acc.details.cpus_in_cores(c))
            if acc.satisfied():
                return frozenset(acc.result)
            if not acc.needs(per_core):
                break
    for c in acc.free_cpus():
        if acc.needs(1):
            acc.take(frozenset((c,)))
        if acc.satisfied():
            return frozenset(acc.result)
    return None


def guaranteed_cpus(cpu_nano: int | None) -> int:
    """guaranteedCPUs: the whole CPUs of a request, 0 unless it is an integer."""
    if not cpu_nano:
        return 0
    value = -(-cpu_nano // 10**9)
    milli = -(-cpu_nano // 10**6)
    return value if value * 1000 == milli else 0


def reserved_cpus(info: NumatopoInfo, topo: CPUTopology) -> CPUSet:
    """The CPUs the kubelet reserves (resReserved cpu, rounded up), taken by topology from all CPUs."""
    milli = info.res_reserved_milli.get(CPU)
    if milli is None:
        return frozenset()
    got = topo.reserved.get(milli)
    if got is None:
        got = topo.reserved[milli] = take_by_topology(topo, topo.details.cpus(), -(-milli // 1000)) or frozenset()
    return got


def generate_cpu_hints(available: CPUSet, details: CPUDetails, request: int,
                       numa_size: Mapping[int, int] | None = None) -> list[TopologyHint]:
    """generateCPUTopologyHints: every NUMA set with enough available CPUs; the smallest sets that
    could hold the request on an empty node are preferred. `numa_size`: CPUs per NUMA node."""
    if numa_size is None:
        numa_size = {n: len(details.cpus_in_numa_nodes(n)) for n in details.numa_nodes()}
    numa = sorted(numa_size)
    min_size = len(numa)
    free_per_numa: dict[int, int] = {}
    for c in available:
        n = details.get(c, _ZERO).numa
        free_per_numa[n] = free_per_numa.get(n, 0) + 1
    found: list[int] = []
    for mask in iterate_masks(numa):
        bits = bits_of(mask)
        if sum(numa_size[b] for b in bits) >= request and len(bits) < min_size:
            min_size = len(bits)
        matching = sum(free_per_numa.get(b, 0) for b in bits)
        if matching < request:
            continue
        found.append(mask)
    return [TopologyHint(m, count(m) == min_size) for m in found]


def cpu_topology_hints(cpu_nano: int | None, info: NumatopoInfo, topo: CPUTopology,
                       res_sets: ResSets) -> dict[str, list[TopologyHint] | None] | None:
    """cpuMng.GetTopologyHints for one container (`cpu_nano`: its cpu request, None without one)."""
    if cpu_nano is None:
        return None
    request = guaranteed_cpus(cpu_nano)
    if request == 0:
        return None
    reserved = reserved_cpus(info, topo)
    available = res_sets.get(CPU)
    if available is None:
        return None
    return {CPU: generate_cpu_hints(available - reserved, info.cpu_detail, request, topo.numa_size)}


def cpu_allocate(cpu_nano: int | None, best: TopologyHint, info: NumatopoInfo, topo: CPUTopology,
                 res_sets: ResSets) -> dict[str, CPUSet]:
    """cpuMng.Allocate: the CPUs of the best hint's NUMA nodes first, then any; empty on failure."""
    reserved = reserved_cpus(info, topo)
    request = guaranteed_cpus(cpu_nano)
    available = res_sets.get(CPU, frozenset()) - reserved
    result: CPUSet = frozenset()
    if best.affinity is not None:
        aligned = available & info.cpu_detail.cpus_in_numa_nodes(*bits_of(best.affinity))
        got = take_by_topology(topo, aligned, min(request, len(aligned)))
        if got is None:
            return {CPU: frozenset()}
        result = got
    rest = take_by_topology(topo, available - result, request - len(result))
    if rest is None:
        return {CPU: frozenset()}
    return {CPU: result | rest}
