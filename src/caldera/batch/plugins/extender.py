"""extender: delegate a session's decisions to an HTTP service (Volcano's plugins/extender).

Arguments (Volcano's names; every verb is optional, an unset verb registers nothing):

- `extender.urlPrefix`: the service; each call POSTs JSON to urlPrefix (trailing "/" trimmed) + "/" + verb.
- `extender.httpTimeout`: a Go duration for each call, default 1s.
- `extender.onSessionOpenVerb`, `extender.onSessionCloseVerb`: called when the session opens
  (the snapshot: {"Jobs", "Nodes", "Queues", "NamespaceInfo", "RevocableNodes", "NodeList"}) and closes ({}).
- `extender.predicateVerb`: per task and node, {"task", "node"} -> {"status": reason, "code"}; an
  empty reason passes; a code of 0 with a reason counts as Error (1); 2 is Unschedulable, 3
  UnschedulableAndUnresolvable.
- `extender.prioritizeVerb`: per task, {"task", "nodes"} -> {"nodeScore": {node: score}, "errorMessage"},
  added to the other plugins' scores (a batch node order function).
- `extender.preemptableVerb`, `extender.reclaimableVerb`: {"evictor", "evictees"} -> {"status": vote,
  "victims": [tasks]}; the victims are matched to the candidates by UID.
- `extender.jobEnqueueableVerb`: {"job"} -> {"status": vote} (1 permit, 0 abstain, -1 reject).
- `extender.queueOverusedVerb`: {"queue"} -> {"overused": bool}.
- `extender.jobReadyVerb`: {"job"} -> {"status": bool}.
- `extender.allocateFuncVerb`, `extender.deallocateFuncVerb`: event handlers, {"task"} -> {"errorMessage"}.
- `extender.ignorable` (default false): what a failed call (unreachable, timeout, non-200 answer,
  a body that is not JSON or is over 10 MiB) means, as in Volcano: a predicate passes (else the node
  fails with the error as an Error reason); prioritize gives no scores (else the whole scoring
  fails: Volcano's PrioritizeNodes returns no node scores, so allocate finds no best node in that
  candidate list and tries its next one, preempt and reclaim order no node; see
  hooks.NodeOrderError); preemptable / reclaimable permit with no victims (else reject);
  enqueueable permits (else rejects); overused and job ready answer false (else true). A failed
  session-open call registers no function at all unless the extender is ignorable. A prioritize
  answer with an `errorMessage` (or without `nodeScore`) fails the scoring even when ignorable.
- `extender.managedResources`: a list of resource names; when set, only tasks whose pod's containers
  or init containers request or limit one of them are sent to the task verbs (predicate,
  prioritize, preemptable, reclaimable, events); other tasks pass, get no score, and abstain.

Bodies are Go's JSON of Volcano's scheduler objects (TaskInfo, NodeInfo, JobInfo, QueueInfo,
NamespaceInfo: struct field names, "Pod" / "Node" / "PodGroup" / "Queue" the manifests as read,
Resource as {"MilliCPU", "Memory", "ScalarResources", "MaxTaskNum"}, task statuses as Volcano's bit
values). Answers are decoded as Go does: field names match case-insensitively.

Differences from Volcano:
- argument values that do not parse (a verb that is not a string, a bad duration, ...) are config
  errors; Volcano ignores them and keeps its default;
- backfill, when the scoring fails, skips the task (Volcano's backfill dereferences the missing node);
- errors of the allocate / deallocate event handlers are reported as warnings; Volcano's
  Statement fails the allocation on them;
- the JSON objects carry the fields Caldera keeps: NodeInfo's Capacity is its Allocatable,
  ResourceUsage, NUMA, oversubscription, image and DRA fields are empty, JobInfo's NodesFitErrors
  are empty objects, RevocableNodes is empty.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...api.goduration import DurationError, parse_go_duration
from ...api.objects import format_time
from ...api.webhook import WebhookError, dumps, json_field, post_json, verb_url
from ..api.fiterrors import ERROR, UNRESOLVABLE, UNSCHEDULABLE
from ..framework.hooks import NodeOrderError
from .base import ABSTAIN, PERMIT, REJECT, BatchPlugin, Predicate

if TYPE_CHECKING:
    from ..api.info import JobInfo, QueueInfo, TaskInfo
    from ..api.nodes import NodeInfo
    from ..api.resource import Resource
    from ..framework.session import Session

URL_PREFIX = "extender.urlPrefix"
HTTP_TIMEOUT = "extender.httpTimeout"
ON_SESSION_OPEN = "extender.onSessionOpenVerb"
ON_SESSION_CLOSE = "extender.onSessionCloseVerb"
PREDICATE = "extender.predicateVerb"
PRIORITIZE = "extender.prioritizeVerb"
PREEMPTABLE = "extender.preemptableVerb"
RECLAIMABLE = "extender.reclaimableVerb"
QUEUE_OVERUSED = "extender.queueOverusedVerb"
JOB_ENQUEUEABLE = "extender.jobEnqueueableVerb"
JOB_READY = "extender.jobReadyVerb"
ALLOCATE_FUNC = "extender.allocateFuncVerb"
DEALLOCATE_FUNC = "extender.deallocateFuncVerb"
IGNORABLE = "extender.ignorable"
MANAGED_RESOURCES = "extender.managedResources"

VERBS = (ON_SESSION_OPEN, ON_SESSION_CLOSE, PREDICATE, PRIORITIZE, PREEMPTABLE, RECLAIMABLE, QUEUE_OVERUSED,
         JOB_ENQUEUEABLE, JOB_READY, ALLOCATE_FUNC, DEALLOCATE_FUNC)
DEFAULT_TIMEOUT = 1.0               # seconds
MAX_BODY_SIZE = 10 << 20            # 10 MiB: larger answers are an error
NODE_READY = 1                      # api.NodePhase Ready

# api.Status codes of a predicate answer -> Caldera's fit error codes
_CODES = {2: UNSCHEDULABLE, 3: UNRESOLVABLE}


# ---- Go's JSON of Volcano's scheduler objects ---------------------------------------------------
def _time(ts: float | None) -> str | None:
    if ts is None:
        return None
    return format_time(ts)


def resource_json(r: Resource | None) -> dict[str, Any] | None:
    if r is None:
        return None
    scalars = {k: v for k, v in r.scalars.items() if k != "pods"}
    return {"MilliCPU": r.cpu, "Memory": r.memory, "ScalarResources": scalars or None, "MaxTaskNum": 0}


def task_json(t: TaskInfo) -> dict[str, Any]:
    return {
        "UID": t.uid, "Job": t.job, "Name": t.name, "Namespace": t.namespace, "TaskRole": t.role,
        "Resreq": resource_json(t.resreq), "InitResreq": resource_json(t.init_resreq),
        "DRAResreq": None, "ResourceClaimKeys": None, "ResourceClaimDRAResreq": None,
        "NodeName": t.node_name, "EvictionOccurred": bool(t.eviction_occurred), "JobAllocatedHyperNode": "",
        "Status": t.status, "LastTransaction": None, "Priority": t.priority, "VolumeReady": False,
        "Preemptable": bool(t.preemptable), "BestEffort": bool(t.best_effort),
        "HasRestartableInitContainer": False, "SchGated": bool(t.sch_gated), "RevocableZone": "",
        "NumaInfo": None, "Pod": t.pod.raw, "CustomBindErrHandlerSucceeded": False,
    }


def node_json(ni: NodeInfo) -> dict[str, Any]:
    alloc = ni.allocatable
    return {
        "Name": ni.name, "Node": ni.node.raw, "State": {"Phase": NODE_READY, "Reason": ""},
        "Releasing": resource_json(ni.releasing), "Pipelined": resource_json(ni.pipelined),
        "Idle": resource_json(ni.idle), "Used": resource_json(ni.used),
        "Allocatable": resource_json(alloc), "Capacity": resource_json(alloc), "ResourceUsage": None,
        "Tasks": {t.uid: task_json(t) for _, t in ni.tasks.values()},
        "NumaInfo": None, "NumaChgFlag": 0, "NumaSchedulerInfo": None, "RevocableZone": "", "Others": None,
        "OversubscriptionNode": False, "OfflineJobEvicting": False, "OversubscriptionResource": None,
        "ImageStates": None, "Generation": 0, "BindGeneration": 0,
    }


def job_json(j: JobInfo) -> dict[str, Any]:
    pg_raw = dict(j.pg.raw) if isinstance(j.pg.raw, dict) else {}
    meta = pg_raw.get("metadata") or {}
    return {
        "UID": j.uid, "PgUID": str(meta.get("uid") or "") if isinstance(meta, dict) else "",
        "Name": j.name, "Namespace": j.namespace, "Queue": j.queue, "Priority": j.priority,
        "MinAvailable": j.min_available, "WaitingTime": None, "JobFitErrors": j.job_fit_errors,
        "NodesFitErrors": {uid: {} for uid in j.fit_errors}, "AllocatedHyperNode": j.allocated_hypernode,
        "NetworkTopology": None, "SubJobs": None, "TaskToSubJob": None, "MinSubJobs": None,
        "TaskStatusIndex": {str(st): {uid: task_json(t) for uid, t in tasks.items()} for st, tasks in j.index.items()},
        "Tasks": {uid: task_json(t) for uid, t in j.tasks.items()},
        "TaskMinAvailable": dict(j.task_min_available), "TaskMinAvailableTotal": j.task_min_available_total,
        "Allocated": resource_json(j.allocated), "TotalRequest": resource_json(j.total_request),
        "CreationTimestamp": _time(j.creation), "PodGroup": {**pg_raw, "Version": "v1beta1"},
        "ScheduleStartTimestamp": None, "Preemptable": bool(j.preemptable), "RevocableZone": "", "Budget": None,
    }


def queue_json(q: QueueInfo) -> dict[str, Any]:
    return {"UID": q.uid, "Name": q.name, "Weight": q.weight, "Weights": "", "Hierarchy": "",
            "Queue": getattr(q.queue, "raw", None)}


def namespace_info_json(ssn: Session) -> dict[str, Any]:
    info = getattr(ssn, "namespace_info", None) or {}
    return {ns: {"Name": ns, "QuotaStatus": {name: (rq.raw.get("status") or {}) for name, rq in quotas.items()}}
            for ns, quotas in info.items()}


def _int(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
        raise WebhookError(f"json: cannot unmarshal {type(v).__name__} into Go value of type int")
    return int(v)


def _bool(v: object, field: str) -> bool:
    if v is None:
        return False
    if not isinstance(v, bool):
        raise WebhookError(f"json: cannot unmarshal {type(v).__name__} into Go struct field {field} of type bool")
    return v


class ExtenderPlugin(BatchPlugin):
    name = "extender"
    ARGUMENTS = frozenset({URL_PREFIX, HTTP_TIMEOUT, IGNORABLE, MANAGED_RESOURCES, *VERBS})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []            # raised while the session opens
        self.session_warnings: list[str] = []    # raised by the session's calls (runner.run_session)
        self._opened = False
        self.verbs: dict[str, str] = {k: self._string(k) for k in VERBS}
        self.url_prefix = self._string(URL_PREFIX)
        self.timeout = self._timeout()
        self.ignorable = self.arg_bool(IGNORABLE, False)
        self.managed = self._managed()
        self._reasons: dict[tuple[str, int], list[tuple[str, str]]] = {}

    # ---- arguments --------------------------------------------------------------------------
    def _string(self, key: str) -> str:
        v = self.args.get(key)
        if v is None:
            return ""
        if not isinstance(v, str):
            raise self._bad(key, "a string", v)
        return v

    def _timeout(self) -> float:
        v = self._string(HTTP_TIMEOUT)
        if not v:
            return DEFAULT_TIMEOUT
        try:
            ns = parse_go_duration(v)
        except DurationError as e:
            raise self._bad(HTTP_TIMEOUT, f"a Go duration such as 100ms or 2s ({e})", v) from None
        if ns <= 0:
            raise self._bad(HTTP_TIMEOUT, "a positive Go duration such as 100ms or 2s", v)
        return ns / 1e9

    def _managed(self) -> frozenset[str]:
        v = self.args.get(MANAGED_RESOURCES)
        if v is None:
            return frozenset()
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self._bad(MANAGED_RESOURCES, "a list of resource names", v)
        return frozenset(v)

    # ---- calls ------------------------------------------------------------------------------
    def send(self, verb: str, args: Any, want_result: bool = True) -> Any:
        """POST `args` to the verb; the decoded answer. Raises WebhookError."""
        return post_json(verb_url(self.url_prefix, verb), verb, dumps(args), self.timeout,
                         want_result=want_result, max_body=MAX_BODY_SIZE)

    def _warn(self, what: str, e: Exception) -> None:
        """A failed call, reported once: while opening in `warnings`, later in `session_warnings`."""
        msg = f"{self.source}: plugin extender: {what} failed with error {e}"
        out = self.session_warnings if self._opened else self.warnings
        if msg not in out:
            out.append(msg)

    def is_interested(self, task: TaskInfo) -> bool:
        """IsInterested: no managed resources, or a container or init container of the task's pod
        requests or limits one of them."""
        if not self.managed:
            return True
        return has_managed_resources(task.pod.raw, self.managed)

    # ---- session ----------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self._reasons = {}
        self._opened = False
        verbs = self.verbs
        try:
            self._register(ssn, verbs)
        finally:
            self._opened = True

    def _register(self, ssn: Session, verbs: dict[str, str]) -> None:
        if verbs[ON_SESSION_OPEN]:
            body = {
                "Jobs": {uid: job_json(j) for uid, j in ssn.jobs.items()},
                "Nodes": {ni.name: node_json(ni) for ni in ssn.nodes.infos},
                "Queues": {uid: queue_json(q) for uid, q in ssn.queues.items()},
                "NamespaceInfo": namespace_info_json(ssn), "RevocableNodes": {}, "NodeList": None,
            }
            try:
                self.send(verbs[ON_SESSION_OPEN], body, want_result=False)
            except WebhookError as e:
                self._warn("OnSessionOpen", e)
                if not self.ignorable:
                    return
        if verbs[PREDICATE]:
            ssn.add("predicate", self.name, Predicate(self._predicate_mask, self._predicate_reason))
        if verbs[PRIORITIZE]:
            ssn.add("batch_node_order", self.name, self._prioritize)
        if verbs[PREEMPTABLE]:
            ssn.add("preemptable", self.name, lambda a, c: self._victims(verbs[PREEMPTABLE], "Preemptable", a, c))
        if verbs[RECLAIMABLE]:
            ssn.add("reclaimable", self.name, lambda a, c: self._victims(verbs[RECLAIMABLE], "Reclaimable", a, c))
        if verbs[JOB_ENQUEUEABLE]:
            ssn.add("job_enqueueable", self.name, self._job_enqueueable)
        if verbs[QUEUE_OVERUSED]:
            ssn.add("overused", self.name, self._overused)
        if verbs[JOB_READY]:
            ssn.add("job_ready", self.name, self._job_ready)
        alloc = (lambda t: self._event("AllocateFunc", verbs[ALLOCATE_FUNC], t)) if verbs[ALLOCATE_FUNC] else None
        dealloc = (lambda t: self._event("DeallocateFunc", verbs[DEALLOCATE_FUNC], t)) \
            if verbs[DEALLOCATE_FUNC] else None
        if alloc is not None or dealloc is not None:
            ssn.add_event_handler(allocate=alloc, deallocate=dealloc)

    def on_session_close(self, ssn: Session) -> None:
        if self.verbs[ON_SESSION_CLOSE]:
            try:
                self.send(self.verbs[ON_SESSION_CLOSE], {}, want_result=False)
            except WebhookError as e:
                self._warn("OnSessionClose", e)

    # ---- predicate --------------------------------------------------------------------------
    def _predicate_mask(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if not self.is_interested(task):
            return None
        infos = self.ssn.nodes.infos
        verb = self.verbs[PREDICATE]
        tj = task_json(task)
        ok = np.ones(len(idx), dtype=bool)
        for k, i in enumerate(idx.tolist()):
            try:
                resp = self.send(verb, {"task": tj, "node": node_json(infos[i])})
                msg = json_field(resp, "status")
                code = json_field(resp, "code")
                msg = "" if msg is None else msg
                if not isinstance(msg, str):
                    raise WebhookError(f"json: cannot unmarshal {type(msg).__name__} into Go struct field "
                                       "PredicateResponse.status of type string")
                code = 0 if code is None else _int(code)
            except WebhookError as e:
                self._warn("Predicate", e)
                if self.ignorable:
                    continue
                ok[k] = False
                self._reasons[(task.uid, i)] = [(ERROR, str(e))]
                continue
            if not msg:
                continue
            ok[k] = False
            self._reasons[(task.uid, i)] = [(_CODES.get(code, ERROR), msg)]
        return ok

    def _predicate_reason(self, task: TaskInfo, i: int) -> list[tuple[str, str]]:
        return self._reasons.get((task.uid, i), [(ERROR, "")])

    # ---- prioritize -------------------------------------------------------------------------
    def _prioritize(self, task: TaskInfo, idx: np.ndarray, detail: dict[str, Any] | None) -> np.ndarray | None:
        if not self.is_interested(task):
            return None
        infos = self.ssn.nodes.infos
        try:
            resp = self.send(self.verbs[PRIORITIZE], {"task": task_json(task),
                                                      "nodes": [node_json(infos[i]) for i in idx.tolist()]})
        except WebhookError as e:
            self._warn("Prioritize", e)
            if self.ignorable:
                return None
            raise NodeOrderError(str(e)) from None
        scores = json_field(resp, "nodeScore")
        err = json_field(resp, "errorMessage") or ""
        if err or not isinstance(scores, dict):
            # an answer with an error (or without scores) fails the scoring, ignorable or not
            self._warn("Prioritize", WebhookError(str(err)))
            raise NodeOrderError(str(err))
        out = np.zeros(len(idx))
        for k, i in enumerate(idx.tolist()):
            v = scores.get(infos[i].name)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = float(v)
        return out

    # ---- victims ----------------------------------------------------------------------------
    def _victims(self, verb: str, what: str, actor: TaskInfo,
                 candidates: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
        if not self.is_interested(actor):
            return [], ABSTAIN
        try:
            resp = self.send(verb, {"evictor": task_json(actor), "evictees": [task_json(t) for t in candidates]})
            status = json_field(resp, "status")
            status = 0 if status is None else _int(status)
            got = json_field(resp, "victims") or []
            if not isinstance(got, list):
                raise WebhookError("json: cannot unmarshal into Go struct field victims of type []*api.TaskInfo")
        except WebhookError as e:
            self._warn(what, e)
            return None, (PERMIT if self.ignorable else REJECT)
        by_uid = {t.uid: t for t in candidates}
        victims = [by_uid[u] for u in (json_field(v, "UID") for v in got) if isinstance(u, str) and u in by_uid]
        return victims, status

    # ---- jobs and queues --------------------------------------------------------------------
    def _job_enqueueable(self, job: JobInfo) -> int:
        try:
            resp = self.send(self.verbs[JOB_ENQUEUEABLE], {"job": job_json(job)})
            status = json_field(resp, "status")
            return 0 if status is None else _int(status)
        except WebhookError as e:
            self._warn("JobEnqueueable", e)
            return PERMIT if self.ignorable else REJECT

    def _overused(self, queue: QueueInfo) -> bool:
        try:
            resp = self.send(self.verbs[QUEUE_OVERUSED], {"queue": queue_json(queue)})
            return _bool(json_field(resp, "overused"), "QueueOverusedResponse.overused")
        except WebhookError as e:
            self._warn("QueueOverused", e)
            return not self.ignorable

    def _job_ready(self, job: JobInfo) -> bool:
        try:
            resp = self.send(self.verbs[JOB_READY], {"job": job_json(job)})
            return _bool(json_field(resp, "status"), "JobReadyResponse.status")
        except WebhookError as e:
            self._warn("JobReady", e)
            return not self.ignorable

    # ---- events -----------------------------------------------------------------------------
    def _event(self, what: str, verb: str, task: TaskInfo) -> None:
        if not self.is_interested(task):
            return
        try:
            resp = self.send(verb, {"task": task_json(task)})
        except WebhookError as e:
            if not self.ignorable:
                self._warn(what, e)
            return
        err = json_field(resp, "errorMessage")
        if err:
            self._warn(what, WebhookError(str(err)))


def has_managed_resources(raw: dict[str, Any], managed: frozenset[str] | set[str]) -> bool:
    """A container, then an init container, of the pod manifest requests or limits a resource in `managed`."""
    spec = raw.get("spec") or {}
    if not isinstance(spec, dict):
        return False
    return any(containers_use(spec.get(key), managed) for key in ("containers", "initContainers"))


def containers_use(containers: object, managed: frozenset[str] | set[str]) -> bool:
    """hasManagedResources over a list of container manifests."""
    if not isinstance(containers, list):
        return False
    for c in containers:
        res = c.get("resources") if isinstance(c, dict) else None
        if not isinstance(res, dict):
            continue
        for part in ("requests", "limits"):
            if resources_in_list(res.get(part), managed):
                return True
    return False


def resources_in_list(resources: object, managed: frozenset[str] | set[str]) -> bool:
    """hasResourcesInList: a resource name of the list is managed."""
    return isinstance(resources, dict) and any(str(k) in managed for k in resources)
