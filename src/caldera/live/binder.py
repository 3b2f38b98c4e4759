"""Asynchronous binding through the `pods/binding` subresource, with bounded concurrency.

The scheduling loop assumes a pod on its node at once (the engine adds it to the NodeTable) and
hands the bind here; the loop goes on with the next pod. A bind that fails is undone: the pod
is forgotten (taken off the node) and queued again — unless the API says it is already bound
(409 with the pod now on a node: someone bound it, nothing to redo) or gone (404). A pod is
never bound twice: a key with a bind in flight is refused, and a pod the API reports bound is
not queued again. A pod that took GPUs (docs/gpu.md) gets the `caldera.dev/gpu-devices`
annotation with the Binding, and a pod Volcano's deviceshare placed gets the `volcano.sh/*`
device annotations the session set on it (what Volcano's device plugins read).

HTTP extenders (KubeSchedulerConfiguration `extenders`, engine/extenders.py): when the loop gives
the binder `extenders` and one with `bindVerb` is interested in the pod, that extender binds it
(extendersBinding, as kube's binding cycle asks the extenders before the bind plugins) and no
Binding is POSTed; an ignorable one that fails passes to the next, and finally to the Binding. Its
error is a failed bind (the pod is forgotten and queued again). Differences from kube-scheduler:
the extender is asked from the bind threads after the bind plugins' binder took the pod (kube asks
it before running the bind plugins; Caldera's only bind plugin is DefaultBinder, so the outcome is
the same), and the annotations a Binding would carry (`caldera.dev/gpu-devices`, Volcano's device
annotations) are PATCHed onto the pod after the extender bound it (extenderv1.ExtenderBindingArgs
has no field for them).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..api.gpu import DEVICES_ANNOTATION, format_devices
from ..batch.plugins.deviceshare_devices import GPUSHARE_ANNOTATIONS, VGPU_ANNOTATIONS
from ..state.devices import PIN as DEVICES_PIN
from .client import ApiError
from .status import pod_path

# set by the deviceshare plugin of a Volcano session on the pods it gives GPUs
VOLCANO_DEVICE_ANNOTATIONS = frozenset(GPUSHARE_ANNOTATIONS + VGPU_ANNOTATIONS)


class ExtenderBindError(Exception):
    """An extender with bindVerb failed to bind the pod (its Error, or the call failed)."""


class Binder:
    def __init__(self, api, cache, *, workers: int = 64, on_bound: Callable | None = None,
                 on_failed: Callable | None = None, requeue: Callable | None = None,
                 on_work_failed: Callable | None = None):
        self.api = api
        self.cache = cache
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="caldera-bind")
        self.in_flight: set[str] = set()
        self.lock = threading.Lock()
        self.on_bound = on_bound or (lambda pod, node: None)
        self.on_failed = on_failed or (lambda pod, node, err: None)
        self.requeue = requeue or (lambda pod: None)
        self.bound = 0
        self.failed = 0
        self.idle = threading.Condition(self.lock)
        self.extenders: list = []       # HTTP extenders (engine/extenders.py); those with bindVerb bind
        # a pod with PreBind API work (live/prebind.py) whose binding cycle failed: (pod, node, work,
        # message); the loop undoes its reservations and requeues it
        self.on_work_failed = on_work_failed
        self.stopping = threading.Event()       # shutdown: PreBind waits (the PV controller) give up

    def submit(self, pod, node: str, devices: tuple[int, ...] | None = None, work=None) -> bool:
        """Start binding `pod` to `node`; False if a bind for it is already in flight. `devices`:
        the GPUs it took (default: those the live cache's table gives it). `work`: the PreBind API
        writes to make first (live/prebind.py Work), in the bind thread."""
        with self.lock:
            if pod.key in self.in_flight:
                return False
            self.in_flight.add(pod.key)
        if devices is not None:
            # chosen elsewhere (a Volcano session's own table): pinned, so that the live cache's
            # table, assuming the pod now, holds the same GPUs (as a pod put back does)
            pod.cache[DEVICES_PIN] = (node, tuple(devices))
        self.cache.assume(pod, node)
        # the GPUs the pod took (Reserve has run): written on the pod by the bind itself
        table = getattr(self.cache, "table", None)
        if devices is None and table is not None:
            devices = table.gpu.devices_of(pod.key)
        annotations = {k: v for k, v in pod.annotations.items() if k in VOLCANO_DEVICE_ANNOTATIONS}
        if devices is not None:
            annotations[DEVICES_ANNOTATION] = format_devices(devices)
        self.pool.submit(self._bind, pod, node, annotations, work)
        return True

    def _bind(self, pod, node: str, annotations: dict[str, str] | None = None, work=None) -> None:
        if work is not None:
            try:
                err = work.run(self.stopping)
            except Exception as e:  # a step that broke: the binding cycle fails with its error
                err = f"{type(e).__name__}: {e}"
            if err is not None:
                self._work_failed(pod, node, work, err)
                return
        meta: dict = {"name": pod.name, "namespace": pod.namespace}
        if annotations:
            # the API server copies a Binding's annotations onto the pod as it binds it (BindingREST),
            # so the GPU indices land atomically with spec.nodeName
            meta["annotations"] = annotations
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            if not self._extender_bound(pod, node, annotations):
                self.api.request("POST", pod_path(pod, "binding"), body)
        except ApiError as e:
            self._failed(pod, node, e, work)
        except Exception as e:  # connection dropped mid-request: the outcome is unknown
            self._failed(pod, node, e, work)
        else:
            with self.lock:
                self.bound += 1
            self.on_bound(pod, node)
        finally:
            with self.lock:
                self.in_flight.discard(pod.key)
                if not self.in_flight:
                    self.idle.notify_all()

    def _extender_bound(self, pod, node: str, annotations: dict[str, str] | None) -> bool:
        """extendersBinding: True when an extender bound the pod; ExtenderBindError when the
        binding extender failed; False when none binds it (the Binding is POSTed)."""
        if not self.extenders:
            return False
        from ..engine.extenders import extenders_binding
        s = extenders_binding(self.extenders, pod, node)
        if s is None:
            return False
        if not s.is_success():
            raise ExtenderBindError(s.message())
        if annotations:
            self.api.request("PATCH", pod_path(pod), {"metadata": {"annotations": annotations}})
        return True

    def _work_failed(self, pod, node: str, work, message: str) -> None:
        with self.lock:
            self.failed += 1
        if self.on_work_failed is not None:
            self.on_work_failed(pod, node, work, message)
        else:
            self.cache.forget(pod)
            self.requeue(pod)
        with self.lock:
            self.in_flight.discard(pod.key)
            if not self.in_flight:
                self.idle.notify_all()

    def _failed(self, pod, node: str, err, work=None) -> None:
        status = getattr(err, "status", None)
        if status != 404:
            # whatever the error, the API is the truth: a pod that is in fact bound (our own
            # earlier attempt went through before the connection dropped, or another binder)
            # must not be bound again
            try:
                _, current = self.api.request("GET", pod_path(pod))
                bound_to = (current.get("spec") or {}).get("nodeName")
            except ApiError as e:
                bound_to = None
                status = e.status if e.status == 404 else status
            except Exception:
                bound_to = None
            if bound_to:
                with self.lock:
                    self.bound += bound_to == node
                if bound_to == node:
                    self.on_bound(pod, node)
                return
        if work is not None and self.on_work_failed is not None:
            # the pod's PreBind wrote to the API: its binding cycle fails as a PreBind failure does
            with self.lock:
                self.failed += 1
            self.on_failed(pod, node, err)
            why = getattr(err, "message", "") or err
            self.on_work_failed(pod, node, work, f'running Bind plugin "DefaultBinder": {why}')
            return
        with self.lock:
            self.failed += 1
        self.cache.forget(pod)
        self.on_failed(pod, node, err)
        if status != 404:
            self.requeue(pod)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no bind is in flight (graceful shutdown)."""
        with self.lock:
            return self.idle.wait_for(lambda: not self.in_flight, timeout)

    def shutdown(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.wait_idle(timeout)
        self.pool.shutdown(wait=True, cancel_futures=False)
