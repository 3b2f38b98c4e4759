"""What a simulation reads (a cluster and a workload) and what it produces (a SimResult).

Times are virtual seconds from the start of the trace.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api.dra import DraObjects
from ..api.loader import Cluster
from ..api.objects import DEFAULT_SCHEDULER, Node, Pod, PriorityClass
from ..api.pdb import PodDisruptionBudget
from ..api.resourcequota import ResourceQuota
from ..api.storage import Storage
from ..batch.cache.snapshot import VOLCANO_SCHEDULER

ARRIVAL_ANNOTATION = "simulation.caldera/arrival"
DURATION_ANNOTATION = "simulation.caldera/duration"
DEFAULT_GRACE_SECONDS = 30.0
# schedulerNames a workload pod may carry and still be scheduled by the configuration under test
# (kube's first profile, or Volcano), so one trace serves every configuration compared
RETARGETED_SCHEDULERS = ("", DEFAULT_SCHEDULER, VOLCANO_SCHEDULER)


@dataclass
class SimPod:
    """One pod of the workload: submitted at `arrival`, runs `duration` seconds once bound
    (None: runs until the end), released `grace` seconds after an eviction."""
    pod: Pod
    arrival: float
    duration: float | None
    grace: float = DEFAULT_GRACE_SECONDS


@dataclass
class NodeEvent:
    """A change to the cluster at `time`: add (with `node`), remove, cordon or uncordon a node."""
    time: float
    action: str            # "add" | "remove" | "cordon" | "uncordon"
    name: str
    node: Node | None = None


@dataclass
class Workload:
    pods: list[SimPod] = field(default_factory=list)
    # Volcano objects (PodGroups, Queues, HyperNodes) as (source, manifest), for Volcano
    # configurations; a PodGroup takes part once its first pod has arrived, HyperNodes from t = 0
    volcano_objects: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    node_events: list[NodeEvent] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # PriorityClasses the pods' priorities were resolved with (the workload's, plus those given to
    # read_workload), by name
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    # policy/v1 PodDisruptionBudgets and v1 ResourceQuotas of the workload's manifests: there
    # from t = 0 with the status written in them (no disruption or quota controller runs in the
    # replay), beside the cluster's own; read by Volcano's pdb and resourcequota plugins
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    resource_quotas: list[ResourceQuota] = field(default_factory=list)
    # scheduling.x-k8s.io PodGroups (the Coscheduling plugin's), by namespace/name, there from t = 0
    pod_groups: dict[str, Any] = field(default_factory=dict)
    # PVs, PVCs, StorageClasses, CSI objects (api/storage.py) and resource.k8s.io/v1 DeviceClasses,
    # ResourceSlices, ResourceClaims and templates (api/dra.py) of the workload's manifests: there
    # from t = 0, beside the cluster's (kube configurations only; docs/simulate.md "DRA and volumes")
    storage: Storage = field(default_factory=Storage)
    dra: DraObjects = field(default_factory=DraObjects)
    # (time, namespace/name): PersistentVolumeClaims the workload deletes (simulation.caldera/remove)
    pvc_deletions: list[tuple[float, str]] = field(default_factory=list)
    # scheduling.k8s.io/v1alpha1 Workloads (kube's GangScheduling; api/workload.py) by namespace/name,
    # there from t = 0 beside the cluster's
    gang_workloads: dict[str, Any] = field(default_factory=dict)


@dataclass
class PodRecord:
    """One row of pods.csv."""
    pod: str
    arrival: float
    start: float | None = None
    end: float | None = None
    node: str = ""
    attempts: int = 0
    evictions: int = 0
    outcome: str = "pending"        # completed | running | pending
    queue: str = ""
    devices: str = ""               # the GPUs of its last run ("0,1"; docs/gpu.md)
    # the devices DRA allocated to its claims in its last run: "<claim>=<driver>/<pool>/<device>"
    # entries joined by ";" (a claim with several devices repeats the claim), docs/simulate.md
    claims: str = ""
    volumes: str = ""               # its claims' PVs in its last run: "<claim>=<pv>" joined by ";"
    cpuset: str = ""                # the CPUs Volcano's numa-aware gave its last run ("4-7")


@dataclass
class JobRecord:
    """One row of jobs.csv (Volcano runs over a cluster with HyperNodes): a PodGroup, where its
    pods ran (their last run), and the lowest-tier HyperNode holding all those nodes (the cost of
    spreading: tier 1 is one leaf HyperNode; the cluster top is one tier above the highest)."""
    job: str
    queue: str
    pods: int                       # pods of the group in the workload and the cluster
    placed: int = 0                 # of them, pods that ran
    hypernode: str = ""             # "" when none ran; "<cluster-top-hypernode>" when spread over it
    tier: int | None = None
    top: bool = False               # hypernode is the cluster top
    allocated_hypernode: str = ""   # the HyperNode Volcano last kept for the job (networkTopology jobs)


@dataclass
class SimResult:
    """One run: per-pod records, the time series sampled on events, and run-wide figures."""
    name: str
    records: list[PodRecord]
    resources: list[str]                       # resource names of the allocation columns
    capacity: dict[str, float]                 # cluster capacity per resource (at the end)
    times: list[float]                         # sample times
    allocated: list[list[float]]               # [sample][resource]
    pending: list[int]
    running: list[int]
    queue_names: list[str] = field(default_factory=list)
    # [sample][queue]: the queue's dominant share (max over resources of its pods' requests / capacity)
    queue_allocated: list[list[float]] = field(default_factory=list)
    cycle_seconds: list[float] = field(default_factory=list)           # wall time per scheduling cycle
    gpu_fragmentation: float | None = None     # milli-GPU no pending pod can use, at the end
    makespan: float = 0.0
    end_time: float = 0.0
    stopped_early: bool = False                # --until or Ctrl-C
    wall_seconds: float = 0.0
    peak_rss_mib: float = 0.0
    warnings: list[str] = field(default_factory=list)
    jobs: list[JobRecord] = field(default_factory=list)     # jobs.csv: only with HyperNodes (Volcano)
    # what the simulated controllers did (kube runs with DRA or volume objects): claims_allocated,
    # claims_deallocated, claims_deleted, volumes_provisioned, volumes_bound, volumes_deleted,
    # volumes_released (docs/simulate.md "DRA and volumes"); empty otherwise
    controllers: dict[str, int] = field(default_factory=dict)


__all__ = ["ARRIVAL_ANNOTATION", "DEFAULT_GRACE_SECONDS", "DURATION_ANNOTATION", "RETARGETED_SCHEDULERS", "Cluster",
           "JobRecord", "NodeEvent", "PodRecord", "SimPod", "SimResult", "Workload"]
