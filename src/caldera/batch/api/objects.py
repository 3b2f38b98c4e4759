"""Volcano's scheduling CRDs: PodGroup and Queue (scheduling.volcano.sh/v1beta1), parsed strictly.

Errors name the field and the fix, in one line (the loader adds file and object).
"""
from __future__ import annotations

from ...api.objects import parse_time, read_meta
from ...api.podresources import parse_resources
from ...api.validation import already_exists
from ...errors import InputError
from .hypernode import parse_network_topology
from .resource import Resource

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
DEFAULT_QUEUE = "default"
PG_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")
QUEUE_STATES = ("Open", "Closed", "Closing", "Unknown")


def _resources(spec: dict, key: str) -> Resource | None:
    rl = spec.get(key)
    if rl is None:
        return None
    return Resource.from_requests(parse_resources(rl, f"spec.{key}"))


def _int(spec: dict, key: str, default: int, where: str = "spec", minimum: int = 0) -> int:
    v = spec.get(key, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise InputError(f"{where}.{key}: must be an integer >= {minimum}, got {v!r}")
    return v


def _str_map(meta: dict, key: str) -> dict[str, str]:
    """metadata.labels / annotations as strings; InputError when not a mapping."""
    v = meta.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"metadata.{key}: must be a mapping of strings, got {type(v).__name__}")
    return {str(k): "" if x is None else str(x) for k, x in v.items()}


# the resource a second object of one name is reported on (apierrors.NewAlreadyExists)
_RESOURCES = {"PodGroup": "podgroups.scheduling.volcano.sh", "Queue": "queues.scheduling.volcano.sh",
              "Job": "jobs.batch.volcano.sh"}


def check_unique(seen: set[tuple[str, str]], kind: object, doc: dict) -> None:
    """Record a PodGroup, Queue (cluster-scoped) or Job read from the input in `seen`; a second
    one of the same kind and (namespace/)name raises the API server's AlreadyExists."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(kind, str) or kind not in _RESOURCES or not isinstance(name, str) or not isinstance(meta, dict):
        return
    key = (kind, name if kind == "Queue" else f"{meta.get('namespace') or 'default'}/{name}")
    if key in seen:
        raise InputError(already_exists(_RESOURCES[kind], name))
    seen.add(key)


def parse_go_bool(value) -> bool | None:
    """strconv.ParseBool's accepted spellings; None when unparseable."""
    s = str(value)
    if s in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if s in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


class PodGroup:
    __slots__ = (
        "annotations",
        "conditions",
        "creation",
        "implicit",
        "key",
        "labels",
        "min_member",
        "min_resources",
        "min_task_member",
        "name",
        "namespace",
        "network_topology",
        "phase",
        "priority_class_name",
        "queue",
        "raw",
        "seq",
        "uid",
    )

    def __init__(self, raw: dict, seq: int = 0, implicit: bool = False):
        self.raw = raw
        meta, self.name = read_meta(raw, "PodGroup")
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        self.uid = str(meta.get("uid") or f"{self.namespace}-{self.name}")
        self.labels = _str_map(meta, "labels")
        self.annotations = _str_map(meta, "annotations")
        self.creation = parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
        self.seq = seq
        self.implicit = implicit
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        if not isinstance(spec, dict) or not isinstance(status, dict):
            raise InputError("spec/status: must be mappings")
        self.min_member = _int(spec, "minMember", 0)
        mtm = spec.get("minTaskMember") or {}
        if not isinstance(mtm, dict):
            raise InputError("spec.minTaskMember: must be a mapping of task name to count")
        self.min_task_member = {str(k): _int(mtm, k, 0, "spec.minTaskMember") for k in mtm}
        self.min_resources = _resources(spec, "minResources")
        self.queue = str(spec.get("queue") or DEFAULT_QUEUE)
        self.priority_class_name = str(spec.get("priorityClassName") or "")
        self.network_topology = parse_network_topology(spec.get("networkTopology"))
        phase = status.get("phase") or "Pending"
        if phase not in PG_PHASES:
            raise InputError(f"status.phase: {phase!r} is not one of {', '.join(PG_PHASES)}")
        self.phase = phase
        conds = status.get("conditions") or []
        if not isinstance(conds, list):
            raise InputError("status.conditions: must be a list")
        self.conditions = [dict(c) for c in conds if isinstance(c, dict)]

    def flag(self, key: str) -> bool | None:
        """A boolean annotation (checked first) or label, as Volcano reads volcano.sh/preemptable."""
        for src in (self.annotations, self.labels):
            if key in src:
                return bool(parse_go_bool(src[key]))
        return None

    def __repr__(self):
        return f"PodGroup({self.key})"


class QueueAffinity:
    """A Queue's spec.affinity (the nodegroup plugin's input): node group names per rule, in the
    order given. `affinity` / `anti_affinity` say whether nodeGroupAffinity /
    nodeGroupAntiAffinity were set at all."""
    __slots__ = ("affinity", "anti_affinity", "anti_preferred", "anti_required", "preferred", "required")

    RULES = ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution")

    def __init__(self, raw: object):
        if not isinstance(raw, dict):
            raise InputError(f"spec.affinity: must be a mapping with nodeGroupAffinity and/or nodeGroupAntiAffinity, "
                             f"got {type(raw).__name__}")
        unknown = sorted(str(k) for k in raw if k not in ("nodeGroupAffinity", "nodeGroupAntiAffinity"))
        if unknown:
            raise InputError(f"spec.affinity.{unknown[0]}: unknown field; a Queue's affinity has nodeGroupAffinity "
                             "and nodeGroupAntiAffinity")
        self.affinity, self.required, self.preferred = self._rule(raw, "nodeGroupAffinity")
        self.anti_affinity, self.anti_required, self.anti_preferred = self._rule(raw, "nodeGroupAntiAffinity")

    @classmethod
    def _rule(cls, raw: dict, key: str) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
        v = raw.get(key)
        if v is None:
            return False, (), ()
        where = f"spec.affinity.{key}"
        if not isinstance(v, dict):
            raise InputError(f"{where}: must be a mapping with {cls.RULES[0]} and/or {cls.RULES[1]} (lists of "
                             f"node group names), got {type(v).__name__}")
        unknown = sorted(str(k) for k in v if k not in cls.RULES)
        if unknown:
            raise InputError(f"{where}.{unknown[0]}: unknown field; write {cls.RULES[0]} and/or {cls.RULES[1]}")
        out: list[tuple[str, ...]] = []
        for rule in cls.RULES:
            names = v.get(rule)
            if names is None:
                out.append(())
                continue
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise InputError(f"{where}.{rule}: must be a list of node group names (strings), got {names!r}")
            out.append(tuple(names))
        return True, out[0], out[1]


class Queue:
    __slots__ = (
        "affinity",
        "annotations",
        "capability",
        "creation",
        "deserved",
        "guarantee",
        "name",
        "parent",
        "priority",
        "raw",
        "reclaimable",
        "seq",
        "state",
        "uid",
        "weight",
    )

    def __init__(self, raw: dict, seq: int = 0):
        self.raw = raw
        meta, self.name = read_meta(raw, "Queue")
        self.uid = self.name      # Volcano keys queues by name
        self.creation = parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
        self.annotations = _str_map(meta, "annotations")
        self.seq = seq
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        if not isinstance(spec, dict) or not isinstance(status, dict):
            raise InputError("spec/status: must be mappings")
        self.weight = _int(spec, "weight", 1)
        self.capability = _resources(spec, "capability")
        self.deserved = _resources(spec, "deserved")
        g = spec.get("guarantee") or {}
        if not isinstance(g, dict):
            raise InputError("spec.guarantee: must be a mapping with a `resource` list")
        self.guarantee = _resources(g, "resource") if g.get("resource") is not None else None
        rec = spec.get("reclaimable")
        if rec is not None and not isinstance(rec, bool):
            raise InputError(f"spec.reclaimable: must be true or false, got {rec!r}")
        self.reclaimable = True if rec is None else rec
        self.parent = str(spec.get("parent") or "")
        aff = spec.get("affinity")
        self.affinity = None if aff is None else QueueAffinity(aff)     # the nodegroup plugin's
        self.priority = _int(spec, "priority", 0, minimum=-(2 ** 31))
        state = status.get("state") or "Open"
        if state not in QUEUE_STATES:
            raise InputError(f"status.state: {state!r} is not one of {', '.join(QUEUE_STATES)}")
        self.state = state

    @classmethod
    def implicit(cls, name: str) -> Queue:
        """The queue the controller creates (`default`, `root`): weight 1, no limits, Open."""
        return cls({"metadata": {"name": name}, "spec": {"weight": 1}, "status": {"state": "Open"}}, seq=-1)

    def __repr__(self):
        return f"Queue({self.name})"
