"""List+watch caches of API resources (client-go Reflector + Informer semantics, in a thread).

An Informer LISTs its resource (paginated with limit/continue), then WATCHes from the list's
resourceVersion with allowWatchBookmarks=true, keeping a store {namespace/name or name: object
dict} and calling on_add(obj), on_update(old, new), on_delete(obj) from its own thread, in event
order. A handler set with on_add_many(objs) gets the objects a LIST adds in one call instead
(before that LIST's updates and deletes), so a cache can load them in bulk. It tracks the
resourceVersion of every event (BOOKMARKs included) and:
  - a watch that ends cleanly (server timeoutSeconds) is reopened at once from the last RV;
  - 410 Gone (HTTP answer to the watch, or an ERROR event with code 410) -> re-LIST and emit the
    diff against the store (adds, updates where resourceVersion changed, then deletes);
  - connection errors, 5xx, 429 ... -> reopen the watch after an exponential backoff with
    jitter, capped (the server answers 410 if the RV is too old by then);
  - 404 on the first LIST -> the resource is not served (e.g. Volcano CRDs not installed): the
    informer reports `not_served`, counts as synced and stays idle.
Handler exceptions are logged and do not stop the informer.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..gcpolicy import freeze_decoded
from .client import ApiError

log = logging.getLogger(__name__)

# kube-scheduler's pod informer: every pod that is not terminal (assigned and unassigned).
POD_NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True)
class Resource:
    plural: str
    group_version: str        # "v1" (core) or "group/version"
    namespaced: bool
    kind: str

    @property
    def path(self) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        return f"{base}/{self.plural}"


RESOURCES = {
    "nodes": Resource("nodes", "v1", False, "Node"),
    "pods": Resource("pods", "v1", True, "Pod"),
    "priorityclasses": Resource("priorityclasses", "scheduling.k8s.io/v1", False, "PriorityClass"),
    "podgroups": Resource("podgroups", "scheduling.volcano.sh/v1beta1", True, "PodGroup"),
    "queues": Resource("queues", "scheduling.volcano.sh/v1beta1", False, "Queue"),
    # network topology (Volcano's HyperNode CRD; 404 when it is not installed: the informer idles)
    "hypernodes": Resource("hypernodes", "topology.volcano.sh/v1alpha1", False, "HyperNode"),
    # NUMA layouts (Volcano's Numatopology CRD, written by its resource exporter), only for a conf
    # with the numa-aware plugin (app.py); 404 when the CRD is not installed: the informer idles
    "numatopologies": Resource("numatopologies", "nodeinfo.volcano.sh/v1alpha1", False, "Numatopology"),
    # read only by Volcano's pdb and resourcequota plugins (app.py starts them only for a conf
    # that enables those plugins)
    "poddisruptionbudgets": Resource("poddisruptionbudgets", "policy/v1", True, "PodDisruptionBudget"),
    "resourcequotas": Resource("resourcequotas", "v1", True, "ResourceQuota"),
    # kube profiles (app.py): namespace labels for InterPodAffinity's namespaceSelector, and the
    # pod owners whose selectors PodTopologySpread's default constraints use (api/workloads.py)
    "namespaces": Resource("namespaces", "v1", False, "Namespace"),
    "services": Resource("services", "v1", True, "Service"),
    "replicationcontrollers": Resource("replicationcontrollers", "v1", True, "ReplicationController"),
    "replicasets": Resource("replicasets", "apps/v1", True, "ReplicaSet"),
    "statefulsets": Resource("statefulsets", "apps/v1", True, "StatefulSet"),
    # kube profiles whose plugins read them (app.py, apicache.PLUGIN_RESOURCES): DynamicResources'
    # devices and claims, and the volume plugins' storage objects
    "deviceclasses": Resource("deviceclasses", "resource.k8s.io/v1", False, "DeviceClass"),
    "resourceslices": Resource("resourceslices", "resource.k8s.io/v1", False, "ResourceSlice"),
    "resourceclaims": Resource("resourceclaims", "resource.k8s.io/v1", True, "ResourceClaim"),
    "persistentvolumes": Resource("persistentvolumes", "v1", False, "PersistentVolume"),
    "persistentvolumeclaims": Resource("persistentvolumeclaims", "v1", True, "PersistentVolumeClaim"),
    "storageclasses": Resource("storageclasses", "storage.k8s.io/v1", False, "StorageClass"),
    "csinodes": Resource("csinodes", "storage.k8s.io/v1", False, "CSINode"),
    "csidrivers": Resource("csidrivers", "storage.k8s.io/v1", False, "CSIDriver"),
    "csistoragecapacities": Resource("csistoragecapacities", "storage.k8s.io/v1", True, "CSIStorageCapacity"),
    # kube's Workload API (alpha), only with --feature-gates GenericWorkload=true (app.py, gangworkloads.py)
    "workloads": Resource("workloads", "scheduling.k8s.io/v1alpha1", True, "Workload"),
}


def object_key(obj: dict) -> str:
    """'namespace/name' for namespaced objects, 'name' for cluster-scoped ones."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def _rv(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Backoff:
    """Exponential delays initial*factor**n, capped at `cap`, each scaled down by up to `jitter`
    (so delays never exceed the cap yet do not synchronise)."""

    def __init__(self, initial: float = 0.5, factor: float = 2.0, cap: float = 30.0,
                 jitter: float = 0.25, rng: random.Random | None = None):
        if not (0 < initial <= cap) or factor < 1 or not (0 <= jitter < 1):
            raise ValueError("backoff: need 0 < initial <= cap, factor >= 1, 0 <= jitter < 1")
        self.initial, self.factor, self.cap, self.jitter = initial, factor, cap, jitter
        self.attempts = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        base = min(self.cap, self.initial * self.factor ** min(self.attempts, 64))
        self.attempts += 1
        return base * (1.0 - self.jitter * self._rng.random())

    def reset(self) -> None:
        self.attempts = 0


class Store:
    """Thread-safe {key: object dict}; written only by the informer thread."""

    def __init__(self):
        self._items: dict[str, dict] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._items.get(key)

    def values(self) -> list[dict]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def snapshot(self) -> dict[str, dict]:
        with self._lock:
            return dict(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def _set(self, key: str, obj: dict) -> dict | None:
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            return old

    def _pop(self, key: str) -> dict | None:
        with self._lock:
            return self._items.pop(key, None)


class _Gone(Exception):
    """The watch's resourceVersion is no longer available: re-list."""


Handler = Callable[..., Any]


class Informer:
    """Reflector + store + handlers for one resource, run in a daemon thread by start()."""

    def __init__(self, api, resource: Resource | str, *, on_add: Handler | None = None,
                 on_update: Handler | None = None, on_delete: Handler | None = None,
                 on_add_many: Handler | None = None, field_selector: str | None = None,
                 label_selector: str | None = None,
                 page_size: int = 500, watch_timeout: int | None = None,
                 backoff: Backoff | None = None, name: str | None = None):
        self.api = api
        self.resource = RESOURCES[resource] if isinstance(resource, str) else resource
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.page_size = int(page_size)
        self.watch_timeout = watch_timeout      # None: Api.watch picks 5-10 min
        self.backoff = backoff or Backoff()
        self.name = name or self.resource.plural
        self.store = Store()
        self._handlers: list[tuple[Handler | None, Handler | None, Handler | None, Handler | None]] = []
        if on_add or on_update or on_delete or on_add_many:
            self.add_handlers(on_add, on_update, on_delete, on_add_many)
        self._rv = ""
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._not_served = False
        self._stream = None
        self._stream_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.last_error: BaseException | None = None
        self.lists = 0                            # completed LISTs (1 + re-lists)
        self._events = 0                          # watch events received

    # ----------------------------------------------------------------- public

    def add_handlers(self, on_add: Handler | None = None, on_update: Handler | None = None,
                     on_delete: Handler | None = None, on_add_many: Handler | None = None) -> None:
        """Register handlers (before start()); all handler sets are called in registration order.
        on_add_many(list of objects), if given, receives a LIST's additions at once (on_add then
        serves watch events only)."""
        self._handlers.append((on_add, on_update, on_delete, on_add_many))

    @property
    def resource_version(self) -> str:
        return self._rv

    @property
    def not_served(self) -> bool:
        return self._not_served

    def has_synced(self) -> bool:
        """True once the first LIST has been delivered to the handlers (or found not served)."""
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def start(self) -> Informer:
        if self._thread is None:
            self._thread = threading.Thread(target=self.run, name=f"informer-{self.name}",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the loop, close an open watch and join; True if the thread has ended."""
        self._stopping.set()
        with self._stream_lock:
            stream = self._stream
        if stream is not None and hasattr(stream, "close"):
            try:
                stream.close()
            except Exception:  # pragma: no cover
                log.debug("%s: closing the watch failed", self.name, exc_info=True)
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
            return not t.is_alive()
        return True

    # ----------------------------------------------------------------- loop

    def run(self) -> None:
        """The reflector loop (blocking); start() runs it in a thread."""
        need_list, gone_at = True, -1
        while not self._stopping.is_set():
            try:
                if need_list:
                    self._list()
                    if self._stopping.is_set():
                        return
                    need_list = False
                    if self._not_served:
                        self._stopping.wait()
                        return
                self._watch()
            except _Gone:
                need_list = True
                if self._events == gone_at:         # 410 again with no event since: slow down
                    self._sleep(self.backoff.next())
                gone_at = self._events
            except Exception as e:
                if self._stopping.is_set():
                    return
                self.last_error = e
                if isinstance(e, ApiError) and e.status == 404:
                    need_list = True                # resource gone while watching: re-list
                delay = self.backoff.next()
                if isinstance(e, ApiError) and e.retry_after:
                    delay = max(delay, min(e.retry_after, self.backoff.cap))
                log.warning("%s: %s: %s; retrying in %.1fs", self.name,
                            "list" if need_list else "watch", e, delay)
                self._sleep(delay)

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _selectors(self, q: dict) -> dict:
        if self.field_selector:
            q["fieldSelector"] = self.field_selector
        if self.label_selector:
            q["labelSelector"] = self.label_selector
        return q

    def _list(self) -> None:
        items: list[dict] = []
        cont = None
        rv = ""
        restarts = 0
        while True:
            if self._stopping.is_set():
                return
            q = self._selectors({"limit": self.page_size})
            if cont:
                q["continue"] = cont
            try:
                _, page = self.api.request("GET", self.resource.path, query=q)
            except ApiError as e:
                if e.status == 404 and cont is None:
                    self._mark_not_served()
                    return
                if e.status == 410 and cont and restarts < 3:   # continue token expired
                    items, cont, restarts = [], None, restarts + 1
                    continue
                raise
            meta = page.get("metadata") or {}
            kind = page.get("kind") or ""
            kind = kind[:-4] if kind.endswith("List") else self.resource.kind
            for it in page.get("items") or []:
                it.setdefault("kind", kind)         # list items of built-in types omit these
                it.setdefault("apiVersion", page.get("apiVersion") or self.resource.group_version)
                items.append(it)
            rv = str(meta.get("resourceVersion") or rv)
            cont = meta.get("continue")
            if not cont:
                break
        self._replace(items, rv)

    def _mark_not_served(self) -> None:
        if not self._not_served:
            log.info("%s: %s is not served by the API server (404); informer idle", self.name,
                     self.resource.path)
        self._not_served = True
        self._replace([], "")

    def _replace(self, items: list[dict], rv: str) -> None:
        """Make the store equal to `items`, emitting the difference (client-go order: listed
        objects first, then deletes of objects that are gone)."""
        seen = set()
        bulk = any(h[3] is not None for h in self._handlers)
        added: list[dict] = []
        updated: list[tuple[dict, dict]] = []
        for obj in items:
            key = object_key(obj)
            seen.add(key)
            old = self.store._set(key, obj)
            if old is None:
                if bulk:
                    added.append(obj)
                else:
                    self._emit(0, obj)
            elif _rv(old) != _rv(obj) or not _rv(obj):
                if bulk:
                    updated.append((old, obj))
                else:
                    self._emit(1, old, obj)
        if added:
            self._emit_added(added)
        for old, obj in updated:
            self._emit(1, old, obj)
        for key in self.store.keys():   # noqa: SIM118 -- a Store, not a dict: keys() is a locked copy
            if key not in seen:
                old = self.store._pop(key)
                if old is not None:
                    self._emit(2, old)
        self._rv = rv
        self.lists += 1
        self._synced.set()

    def _watch(self) -> None:
        q = self._selectors({"resourceVersion": self._rv, "allowWatchBookmarks": "true"})
        if self.watch_timeout is not None:
            q["timeoutSeconds"] = int(self.watch_timeout)
        try:
            stream = self.api.watch(self.resource.path, q)
        except ApiError as e:
            if e.status == 410 or _too_large_rv(e):
                raise _Gone() from None
            raise
        with self._stream_lock:
            self._stream = stream
        if self._stopping.is_set():
            self._close_stream()
            return
        started, events = time.monotonic(), 0
        try:
            for typ, obj in stream:
                if self._stopping.is_set():
                    return
                if typ == "ERROR":
                    err = ApiError.from_status(obj if isinstance(obj, dict) else {})
                    if err.status == 410 or _too_large_rv(err):
                        raise _Gone()
                    raise err
                events += 1
                self._events += 1
                self.backoff.reset()
                self._apply(typ, obj)
                # the event and what its handlers built from it (the cache's Pod/Node objects):
                # frozen now, not scanned by the next young collection (gcpolicy.freeze_decoded)
                freeze_decoded()
        finally:
            self._close_stream()
        # A clean end (server timeout) counts as progress unless it was instant and empty,
        # which would otherwise spin.
        if events == 0 and time.monotonic() - started < 1.0 and not self._stopping.is_set():
            self._sleep(self.backoff.next())
        elif events == 0:
            self.backoff.reset()

    def _close_stream(self) -> None:
        with self._stream_lock:
            stream, self._stream = self._stream, None
        if stream is not None and hasattr(stream, "close"):
            try:
                stream.close()
            except Exception:  # pragma: no cover
                pass

    def _apply(self, typ: str, obj: dict) -> None:
        rv = _rv(obj)
        if typ == "BOOKMARK":
            if rv:
                self._rv = rv
            return
        key = object_key(obj)
        if typ in ("ADDED", "MODIFIED"):
            old = self.store._set(key, obj)
            if old is None:
                self._emit(0, obj)
            else:
                self._emit(1, old, obj)
        elif typ == "DELETED":
            if self.store._pop(key) is not None:
                self._emit(2, obj)
        else:
            log.warning("%s: ignoring watch event of type %r", self.name, typ)
        if rv:
            self._rv = rv

    def _emit_added(self, objs: list[dict]) -> None:
        for handlers in self._handlers:
            one, many = handlers[0], handlers[3]
            if many is not None:
                try:
                    many(objs)
                except Exception:
                    log.exception("%s: add handler failed", self.name)
            elif one is not None:
                for obj in objs:
                    try:
                        one(obj)
                    except Exception:
                        log.exception("%s: add handler failed", self.name)

    def _emit(self, which: int, *args) -> None:
        for handlers in self._handlers:
            fn = handlers[which]
            if fn is None:
                continue
            try:
                fn(*args)
            except Exception:
                log.exception("%s: %s handler failed", self.name, ("add", "update", "delete")[which])


def _too_large_rv(e: ApiError) -> bool:
    """The server's 'Too large resource version' answer (504/Timeout): like client-go, re-list."""
    return e.status == 504 and "too large resource version" in e.message.lower()


def wait_for_sync(informers, timeout: float | None = None) -> bool:
    """True when every informer has synced within `timeout` seconds (None: wait forever)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for inf in informers:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not inf.wait_synced(left):
            return False
    return True
