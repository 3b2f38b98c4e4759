"""PreBind's API writes in `caldera run`, run in the binding thread (kube's binding goroutine).

A PreBind plugin, in the scheduling cycle, registers its writes for the pod with the ApiWriter
(Handle.api_writer); KubeLoop hands them to the Binder with the pod, and the Binder runs them
before it POSTs the Binding. The scheduling loop never waits on them. When one fails, the pod's
binding cycle fails as kube's does (handleBindingCycleError): the writes already made are undone
where kube undoes them (a claim's reservation is patched away), the plugins' Unreserve gives back
the devices and volumes they assumed, the live cache goes back to the API's objects, the pod is
forgotten and queued again (error backoff) with `running PreBind plugin "<name>": <error>` as its
FailedScheduling message (reason SchedulerError).

DynamicResources (dynamicresources.go PreBind / bindClaim), per claim not yet reserved for the pod:
a claim Reserve allocated first gets the `resource.kubernetes.io/delete-protection` finalizer (an
update of the claim), then status.allocation and the pod in status.reservedFor (resource pods,
name, uid) in one update of `resourceclaims/status`; a conflict re-reads the claim and tries
again (retry.DefaultRetry: 5 attempts). A claim deleted or allocated by someone else meanwhile
fails the pod. Unreserve removes the pod from reservedFor with a strategic-merge patch. PostFilter's
deallocation of an unavailable claim (`deallocate`) is the one write made in the scheduling cycle,
synchronously, as kube makes it.

VolumeBinding (binder.go BindPodVolumes): bindAPIUpdate updates each chosen PV with the claimRef
(and `pv.kubernetes.io/bound-by-controller: "yes"`) and each claim to provision with
`volume.kubernetes.io/selected-node`, then polls every second (checkBindings, on the informers'
objects) until the PV controller has bound every claim, up to bindTimeoutSeconds
("binding volumes: context deadline exceeded").
"""
from __future__ import annotations

import copy
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api.dra import allocation_config
from ..api.storage import ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, PersistentVolume
from .apicache import _reserved_uids, resource_version
from .client import ApiError
from .status import SMP

log = logging.getLogger("caldera.run")

FINALIZER = "resource.kubernetes.io/delete-protection"        # resourceapi.Finalizer
RETRY_STEPS, RETRY_DELAY = 5, 0.01                             # client-go retry.DefaultRetry
POLL_INTERVAL = 1.0                                            # BindPodVolumes' wait.Poll interval


class PreBindFailed(Exception):
    """A PreBind step failed; the message is kube's error text (without the plugin prefix)."""


def _msg(e: BaseException) -> str:
    """An API error as client-go prints it (the Status message) or the transport error."""
    if isinstance(e, ApiError):
        return e.message or str(e)
    return str(e)


def _conflict(e: BaseException) -> bool:
    return isinstance(e, ApiError) and e.status == 409 and e.reason == "Conflict"


@dataclass
class Work:
    """The API work of one pod's binding cycle, in PreBind plugin order."""
    pod: Any
    node: str
    framework: Any                        # the pod's Framework: Unreserve on failure
    state: Any                            # its CycleState
    steps: list[tuple[str, Callable[[threading.Event], None]]] = field(default_factory=list)
    undo: list[Callable[[], None]] = field(default_factory=list)
    claims: set[str] = field(default_factory=set)     # what the cache restores on failure
    pvs: set[str] = field(default_factory=set)
    pvcs: set[str] = field(default_factory=set)
    qpi: Any = None                       # the pod's QueuedPodInfo (requeued on failure)

    def run(self, stop: threading.Event) -> str | None:
        """Run the steps; the FailedScheduling message of the first that fails, else None."""
        for plugin, step in self.steps:
            try:
                step(stop)
            except PreBindFailed as e:
                return f'running PreBind plugin "{plugin}": {e}'
        return None

    def undo_api(self) -> None:
        """kube's Unreserve API calls (errors are logged: the next attempt sees the API's state)."""
        for fn in self.undo:
            try:
                fn()
            except Exception as e:  # logged, as kube logs a failed unreserve patch
                log.warning("pod %s: unreserve: %s", self.pod.key, _msg(e))


class ApiWriter:
    """Collects the PreBind writes of the pods in their scheduling cycle (cache lock held)."""

    def __init__(self, api, cache):
        self.api = api
        self.cache = cache
        self.pending: dict[str, Work] = {}

    def _work(self, handle, state, pod, node: str) -> Work:
        w = self.pending.get(pod.key)
        if w is None or w.state is not state:
            w = self.pending[pod.key] = Work(pod, node, handle.framework, state)
        return w

    def take(self, key: str) -> Work | None:
        return self.pending.pop(key, None)

    def discard(self, key: str) -> None:
        self.pending.pop(key, None)

    # ---- DynamicResources ---------------------------------------------------------------------
    def bind_claims(self, handle, state, pod, node: str, claims: list, allocated: list) -> None:
        objs = self.cache.objects
        w = self._work(handle, state, pod, node)
        todo: list[tuple[str, str, dict[str, Any] | None]] = []
        for c in claims:
            w.claims.add(c.key)
            api = objs.claim_api.get(c.key)
            if api is not None and pod.uid in _reserved_uids(api):
                w.undo.append(self._unreserver(pod, c.namespace, c.name, c.uid))
                continue
            alloc = allocation_of(c, objs.dra.objs.classes if objs.dra is not None else {}) \
                if any(c is a for a in allocated) else None
            todo.append((c.namespace, c.name, alloc))
        if todo:
            w.steps.append(("DynamicResources", lambda stop: self._bind_claims(w, todo)))

    def _bind_claims(self, w: Work, todo: list[tuple[str, str, dict[str, Any] | None]]) -> None:
        for ns, name, alloc in todo:
            self._bind_claim(w, ns, name, alloc)

    def _bind_claim(self, w: Work, ns: str, name: str, alloc: dict[str, Any] | None) -> None:
        """bindClaim: the finalizer, then allocation + reservation, retried on conflicts."""
        pod, objs = w.pod, self.cache.objects
        path = f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}"
        obj = f"{ns}/{name}"
        with self.cache.lock:
            cur = objs.claim_api.get(obj)
        claim = copy.deepcopy(cur) if cur is not None else None
        last = ""
        for attempt in range(RETRY_STEPS):
            if attempt:
                time.sleep(RETRY_DELAY * (1 + 0.1 * random.random()))
            try:
                if claim is None or attempt:
                    try:
                        claim = self.api.request("GET", path)[1]
                    except Exception as e:
                        raise PreBindFailed(f"get updated claim {obj} after conflict: {_msg(e)}") from e
                assert claim is not None
                meta = claim.setdefault("metadata", {})
                if meta.get("deletionTimestamp"):
                    raise PreBindFailed(f"claim {obj} got deleted in the meantime")
                if alloc is not None:
                    if (claim.get("status") or {}).get("allocation"):
                        raise PreBindFailed(f"claim {obj} got allocated elsewhere in the meantime")
                    if FINALIZER not in (meta.get("finalizers") or []):
                        meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
                        try:
                            claim = self.api.request("PUT", path, claim)[1]
                        except Exception as e:
                            raise _Retry(f"add finalizer to claim {obj}: {_msg(e)}", e) from e
                        with self.cache.lock:
                            objs.api_claim(claim)
                        claim = copy.deepcopy(claim)        # the cache keeps the API's object as it is
                    assert claim is not None
                    claim["status"] = claim.get("status") or {}
                    claim["status"]["allocation"] = copy.deepcopy(alloc)
                status = claim["status"] = claim.get("status") or {}
                status["reservedFor"] = [*(status.get("reservedFor") or []),
                                         {"resource": "pods", "name": pod.name, "uid": pod.uid}]
                what = "add allocation and reservation to" if alloc is not None else "add reservation to"
                try:
                    claim = self.api.request("PUT", f"{path}/status", claim)[1]
                except Exception as e:
                    raise _Retry(f"{what} claim {obj}: {_msg(e)}", e) from e
            except _Retry as r:
                if not _conflict(r.cause):
                    raise PreBindFailed(str(r)) from None
                last = str(r)
                continue
            assert claim is not None
            objs.claim_written(claim)
            uid = str((claim.get("metadata") or {}).get("uid") or "")
            w.undo.append(self._unreserver(pod, ns, name, uid))
            return
        raise PreBindFailed(last)

    def _unreserver(self, pod, ns: str, name: str, claim_uid: str) -> Callable[[], None]:
        return lambda: self._unreserve(pod, ns, name, claim_uid)

    def _unreserve(self, pod, ns: str, name: str, claim_uid: str) -> None:
        """DynamicResources.Unreserve: the pod out of the claim's reservedFor (strategic merge)."""
        body = {"metadata": {"uid": claim_uid},
                "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]}}
        got = self.api.request("PATCH", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}/status",
                               body, content_type=SMP)[1]
        with self.cache.lock:
            self.cache.objects.api_claim(got)

    def deallocate(self, c) -> str | None:
        """PostFilter's deallocation of an unavailable claim (scheduling cycle, synchronous as in
        kube): status.allocation, reservedFor and devices cleared in one update of
        resourceclaims/status; the error's text, or None. The cache then holds the API's answer."""
        objs = self.cache.objects
        raw = objs.claim_api.get(c.key)
        if raw is None:
            return None
        body = copy.deepcopy(raw)
        status = {k: v for k, v in (body.get("status") or {}).items()
                  if k not in ("allocation", "reservedFor", "devices")}
        body["status"] = status
        try:
            got = self.api.request("PUT", f"/apis/resource.k8s.io/v1/namespaces/{c.namespace}/resourceclaims/"
                                          f"{c.name}/status", body)[1]
        except Exception as e:
            return _msg(e)
        objs.claim_written(got)
        return None

    # ---- VolumeBinding ------------------------------------------------------------------------
    def bind_volumes(self, handle, state, pod, node: str, volumes, timeout: float) -> None:
        """BindPodVolumes for the PodVolumes VolumeBinding chose on `node` (its Reserve assumed them)."""
        st = self.cache.objects.storage
        w = self._work(handle, state, pod, node)
        pvs: list[tuple[str, dict[str, Any]]] = []
        for vol, pvc in volumes.static:
            base: PersistentVolume = st.pvs.get(vol.name, vol)
            pvs.append((vol.name, bound_pv(base.raw, pvc)))
            w.pvs.add(vol.name)
            w.pvcs.add(pvc.key)
        pvcs: list[tuple[str, str, dict[str, Any]]] = []
        for pvc in volumes.provision:
            body = copy.deepcopy(st.pvcs.get(pvc.key, pvc).raw)
            body.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = node
            pvcs.append((pvc.namespace, pvc.name, body))
            w.pvcs.add(pvc.key)
        w.steps.append(("VolumeBinding", lambda stop: self._bind_volumes(w, pvs, pvcs, timeout, stop)))

    def _bind_volumes(self, w: Work, pvs: list[tuple[str, dict[str, Any]]],
                      pvcs: list[tuple[str, str, dict[str, Any]]], timeout: float, stop: threading.Event) -> None:
        written_pvs, written_pvcs = [], []
        for name, body in pvs:            # bindAPIUpdate: its errors are returned as they are
            try:
                written_pvs.append(self.api.request("PUT", f"/api/v1/persistentvolumes/{name}", body)[1])
            except Exception as e:
                raise PreBindFailed(_msg(e)) from e
        for ns, name, body in pvcs:
            try:
                written_pvcs.append(self.api.request(
                    "PUT", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}", body)[1])
            except Exception as e:
                raise PreBindFailed(_msg(e)) from e
        deadline = time.monotonic() + timeout
        while True:                        # wait.PollUntilContextTimeout(1 s, bindTimeout, immediate=false)
            left = deadline - time.monotonic()
            if left <= 0:
                raise PreBindFailed("binding volumes: context deadline exceeded")
            if stop.wait(min(POLL_INTERVAL, left)):
                raise PreBindFailed("binding volumes: context canceled")
            if time.monotonic() >= deadline:
                raise PreBindFailed("binding volumes: context deadline exceeded")
            err, done = self.check_bindings(w.pod, w.node, written_pvs, written_pvcs)
            if err:
                raise PreBindFailed(f"binding volumes: {err}")
            if done:
                return

    def check_bindings(self, pod, node: str, pvs: list[dict[str, Any]], pvcs: list[dict[str, Any]]
                       ) -> tuple[str, bool]:
        """checkBindings on the informers' latest objects: (error, all bound)."""
        cache, objs = self.cache, self.cache.objects
        with cache.lock:
            i = cache.table.index.get(node)
            labels = dict(cache.table.nodes[i].labels) if i is not None else None
            alive = pod.key in cache.pods
            names = [(p.get("metadata") or {}).get("name", "") for p in pvs]
            api_pvs = {n: objs.pv_api.get(n) for n in names}
            claims = {_pvc_key(c): objs.pvc_api.get(_pvc_key(c)) for c in pvcs}
            for written in pvs:
                k = _pvc_key_of_ref(written)
                claims.setdefault(k, objs.pvc_api.get(k))
            for c in pvcs:
                vn = (c.get("spec") or {}).get("volumeName") or ""
                cur = claims.get(_pvc_key(c))
                vn = ((cur or {}).get("spec") or {}).get("volumeName") or vn
                if vn:
                    api_pvs.setdefault(vn, objs.pv_api.get(vn))
        if labels is None:
            return f'failed to get node "{node}": node "{node}" not found', False
        if not alive:
            return f'pod does not exist any more: pod "{pod.name}" not found', False
        for written in pvs:
            name = written["metadata"]["name"]
            got = api_pvs.get(name)
            if got is None:
                return f'failed to check binding: could not find persistentvolumes "{name}"', False
            key = _pvc_key_of_ref(written)
            pvc = claims.get(key)
            if pvc is None:
                return f'failed to check binding: could not find persistentvolumeclaims "{key}"', False
            if resource_version(written) > resource_version(got):
                return "", False
            if not PersistentVolume(got).matches_node(labels):
                return f'pv "{name}" node affinity doesn\'t match node "{node}": no matching NodeSelectorTerms', False
            ref = (got.get("spec") or {}).get("claimRef") or {}
            if not ref or not ref.get("uid"):
                return f'ClaimRef got reset for pv "{name}"', False
            if not _fully_bound(pvc):
                return "", False
        for written in pvcs:
            key = _pvc_key(written)
            pvc = claims.get(key)
            if pvc is None:
                return f'failed to check provisioning pvc: could not find persistentvolumeclaims "{key}"', False
            if resource_version(written) > resource_version(pvc):
                return "", False
            ann = (pvc.get("metadata") or {}).get("annotations")
            if ann is None:
                return f'selectedNode annotation reset for PVC "{written["metadata"]["name"]}"', False
            if ann.get(ANN_SELECTED_NODE) != node:
                return f'provisioning failed for PVC "{written["metadata"]["name"]}"', False
            vn = (pvc.get("spec") or {}).get("volumeName")
            if vn:
                got = api_pvs.get(vn)
                if got is None:
                    return "", False
                if not PersistentVolume(got).matches_node(labels):
                    return f'pv "{vn}" node affinity doesn\'t match node "{node}": no matching NodeSelectorTerms', False
            if not _fully_bound(pvc):
                return "", False
        return "", True


class _Retry(Exception):
    """A write failed: retried when it is a conflict (retry.RetryOnConflict)."""

    def __init__(self, message: str, cause: BaseException):
        super().__init__(message)
        self.cause = cause


def allocation_of(c, classes: dict[str, Any] | None = None) -> dict[str, Any]:
    """The claim's status.allocation as the structured allocator builds it: the device results, the
    class and claim configs for them (api.dra.allocation_config: what the drivers read) and, when a
    device is local to one node, a nodeSelector for that node (createNodeSelector)."""
    out: dict[str, Any] = {"devices": {"results": [r.as_dict() for r in c.allocation or []]}}
    config = allocation_config(c, classes or {})
    if config:
        out["devices"]["config"] = config
    if c.allocated_node:
        out["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [c.allocated_node]}]}]}
    elif getattr(c, "node_selector", None):
        out["nodeSelector"] = copy.deepcopy(c.node_selector)
    return out


def bound_pv(raw: dict[str, Any], pvc) -> dict[str, Any]:
    """GetBindVolumeToClaim: the PV (as the API has it) bound to the claim: claimRef set to the
    claim's reference unless it names it already, and bound-by-controller when it did not."""
    pv = copy.deepcopy(raw)
    spec = pv.setdefault("spec", {})
    ref = spec.get("claimRef") or {}
    bound = bool(ref) and ref.get("name") == pvc.name and (ref.get("namespace") or "default") == pvc.namespace \
        and (not ref.get("uid") or ref.get("uid") == pvc.uid)
    if not ref or ref.get("name") != pvc.name or ref.get("namespace") != pvc.namespace or ref.get("uid") != pvc.uid:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": pvc.namespace, "name": pvc.name,
                            "uid": pvc.uid, "apiVersion": "v1",
                            "resourceVersion": str((pvc.raw.get("metadata") or {}).get("resourceVersion") or "")}
    meta = pv.setdefault("metadata", {})
    if not bound and ANN_BOUND_BY_CONTROLLER not in (meta.get("annotations") or {}):
        meta.setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
    return pv


def _pvc_key(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _pvc_key_of_ref(pv: dict[str, Any]) -> str:
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    return f"{ref.get('namespace') or 'default'}/{ref.get('name', '')}"


def _fully_bound(pvc: dict[str, Any]) -> bool:
    """isPVCFullyBound: spec.volumeName set and the bind-completed annotation present."""
    ann = (pvc.get("metadata") or {}).get("annotations") or {}
    return bool((pvc.get("spec") or {}).get("volumeName")) and ANN_BIND_COMPLETED in ann
