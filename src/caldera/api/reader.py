"""Read manifest files (files, directories, stdin) into documents.

Accepts multi-document YAML, JSON, and `kind: List` wrappers, as `kubectl get -o yaml` prints
them. Every error names the file, the document index, and the problem. Parsing is `parse`'s
(fast, PyYAML's meaning, a depth limit); a Pod's parts that nothing in Caldera reads are dropped
as it is read (`UNREAD_POD_FIELDS`), so a cluster dump costs memory only for what is used.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ..errors import InputError
from .parse import load_file, load_text

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# What kubectl prints of a Pod that no scheduler, simulator or output reads: bookkeeping metadata,
# the pod's and its containers' runtime settings, the kubelet's per-container status, the pod's
# IPs, the volumes no scheduling decision looks at (UNREAD_VOLUMES: configuration and scratch
# space, unlike claims and disks), and the conditions of a pod not being deleted (only a
# terminating pod's DisruptionTarget condition is read, by preemption). Dropped as documents are
# read, before they are decoded; the rest stays in `Pod.raw`. Whoever starts reading one of these
# fields takes it out of here.
UNREAD_POD_FIELDS = {
    "metadata": ("managedFields", "resourceVersion"),
    "spec": ("securityContext", "dnsPolicy", "dnsConfig", "enableServiceLinks", "serviceAccount",
             "serviceAccountName", "automountServiceAccountToken", "restartPolicy"),
    "status": ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses", "podIPs", "hostIPs",
               "podIP", "hostIP"),
    "containers": ("env", "envFrom", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
                   "volumeMounts", "volumeDevices", "command", "args", "terminationMessagePath",
                   "terminationMessagePolicy", "imagePullPolicy", "securityContext", "workingDir",
                   "stdin", "stdinOnce", "tty"),
}
UNREAD_VOLUMES = frozenset({"projected", "configMap", "secret", "downwardAPI", "emptyDir"})
_UNREAD = {part: frozenset(keys) for part, keys in UNREAD_POD_FIELDS.items()}
_UNREAD_STATUS_NOT_TERMINATING = _UNREAD["status"] | {"conditions"}
COOLDOWN_TIME = "volcano.sh/cooldown-time"      # its pods keep their conditions (batch/plugins/cdp.py)
# Equal strings are made one (`_shared`) in files this big: below, the walk costs more time than
# the memory it saves is worth.
SHARE_FROM_BYTES = 16 << 20
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")

# Told (source, characters parsed so far, characters in the source) while a source is parsed.
ReadProgress = Callable[[str, int, int], None]
_progress: ContextVar[ReadProgress | None] = ContextVar("caldera_read_progress", default=None)


@contextmanager
def reading_progress(callback: ReadProgress | None) -> Iterator[None]:
    """Within the block, `read_documents` reports its progress to `callback`."""
    token = _progress.set(callback)
    try:
        yield
    finally:
        _progress.reset(token)


def _load_text(text: str, source: str) -> list[Any]:
    return _load(source, lambda: text, None, _Slimmed())


class _Slimmed:
    """What `_load`'s `each` returned: how many items, and the last. A List whose items are
    exactly those (a List read in slices: every item went through `each`) is not slimmed again
    by `_flatten`; any other is (slimming is idempotent). A count, not the items' ids: a dump's
    150,000 ids cost ~10 MiB while it is read."""
    __slots__ = ("count", "last")

    def __init__(self) -> None:
        self.count, self.last = 0, None

    def add(self, obj: Any) -> Any:
        self.count += 1
        self.last = obj
        return obj

    def covers(self, items: list[Any]) -> bool:
        return bool(items) and self.count == len(items) and items[-1] is self.last


def _load(source: str, read: Callable[[], str], path: str | None, slimmed: _Slimmed) -> list[Any]:
    """The documents of one source; a file is given to `parse.load_file`, which reads a big
    kubectl List a block at a time. Each List item read in slices is slimmed as it is read (and
    counted in `slimmed`, so that `_flatten` does not slim them again)."""
    shared: dict[str, str] = {}
    trees: dict[int, Any] = {}      # `_shared_pod`'s sub-trees by the hash of their repr, while this source is read

    share = [False]

    def slim(obj: Any, tree: bool) -> Any:
        if not isinstance(obj, dict):
            return slimmed.add(obj)
        if obj.get("kind") == "Pod":
            _slim_pod(obj)
            return slimmed.add(_shared_pod(obj, shared, trees) if tree and share[0] else obj)
        return slimmed.add(_shared(obj, shared) if tree and share[0] else obj)

    report = _progress.get()
    advance = None
    total = [0]
    if report is not None:
        done = [0]

        def advance(n: int) -> None:
            done[0] = min(done[0] + n, total[0])     # (a List parsed again whole counts twice)
            report(source, done[0], total[0])
    try:
        if path is not None:
            total[0] = os.path.getsize(path)
            share[0] = total[0] >= SHARE_FROM_BYTES
            docs = load_file(path, source, advance, slim)
        else:
            text = read()
            total[0] = len(text)
            share[0] = total[0] >= SHARE_FROM_BYTES
            docs = load_text(text, source, advance, slim)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", source) from None
    if report is not None:
        report(source, total[0], total[0])
    return docs


def _copy(obj: dict[Any, Any] | list[Any], strings: dict[str, str], nested: Callable[[Any], Any],
          unique: frozenset[str] = frozenset()) -> Any:
    """A copy of the dict or list `obj` in which its str keys and short str values (but those of
    the keys in `unique`) are the equal ones of `strings`, and its dict and list values are what
    `nested` makes of them."""
    if type(obj) is dict:
        return {(strings.setdefault(k, k) if type(k) is str else k):
                (nested(v) if type(v) is dict or type(v) is list else
                 strings.setdefault(v, v) if type(v) is str and len(v) <= 64 and k not in unique else v)
                for k, v in obj.items()}
    return [nested(v) if type(v) is dict or type(v) is list else
            strings.setdefault(v, v) if type(v) is str and len(v) <= 64 else v for v in obj]


def _shared(obj: Any, shared: dict[str, str]) -> Any:
    """A copy of `obj` in which equal keys and equal short string values are one string. A YAML
    parser makes a new string for each, and a cluster dump repeats the same few hundred (keys,
    phases, operators, timestamps, node names, images): most of a pod's strings."""
    if type(obj) is dict or type(obj) is list:
        return _copy(obj, shared, lambda v: _shared(v, shared))
    return obj


# A pod's own mapping below its top one, never shared: its metadata holds its name (a copy of it
# gets a creationTimestamp). Its spec and status are read only (nothing in Caldera writes a read
# pod's spec or status: a trace that names a scheduler for a pod gives it a new spec), so equal
# ones are shared: a dump's bound pods of one workload on one node have the same spec.
_POD_OWN = frozenset(("metadata",))
# metadata fields whose values no two pods share: not kept in the strings table (150,000 names
# in it were ~10 MiB of a dump's peak)
_UNIQUE = frozenset(("name", "uid"))


def _shared_pod(doc: dict[str, Any], strings: dict[str, str], trees: dict[int, Any]) -> dict[str, Any]:
    """`_shared` of a Pod, and more: below its own mappings (the pod and its metadata),
    equal sub-trees are made one object (`_tree`), shared by every pod that has them. Thousands
    of pods of a workload have the same labels, containers, tolerations, affinity, owner and
    often status: in a dump of small pods those were half of what a pod cost. Nothing in Caldera
    writes into a read pod's sub-trees (tests/api/test_dump_memory.py holds it to that); code that
    wants to change one builds a new mapping, as it must for any object it did not make."""
    def tree(v: Any) -> Any:
        return _tree(v, strings, trees)
    out = {}
    for k, v in doc.items():
        if type(k) is str:
            k = strings.setdefault(k, k)
        if type(v) is dict and k in _POD_OWN:
            v = _copy(v, strings, tree, _UNIQUE)
        elif type(v) is dict or type(v) is list:
            v = tree(v)
        elif type(v) is str and len(v) <= 64:
            v = strings.setdefault(v, v)
        out[k] = v
    return out


def _tree(obj: Any, strings: dict[str, str], trees: dict[int, Any]) -> Any:
    """The one object of `obj`'s content (a dict or list of a tree: no cycles, no aliases), found
    by the hash of its repr (made in C; equal reprs are equal content of the same types: True is
    not 1, 1.0 is not 1, a list is not a dict), then checked with ==, so that contents whose
    hashes collide are not shared (unless also equal but of other types, True for 1: a 64-bit
    collision between two such reprs). The hash, not the repr, is kept: the reprs of a dump's
    once-only sub-trees were some 20 MiB at the end of a 77 MB load. A content seen for the
    first time is copied as `_shared` copies, with its own sub-trees made one the same way."""
    h = hash(repr(obj))
    got = trees.get(h)
    if got is None or got != obj:
        got = trees[h] = _copy(obj, strings, lambda v: _tree(v, strings, trees))
    return got


def _has_cooldown(meta: dict[str, Any]) -> bool:
    """A pod with Volcano's cooldown-time (label or annotation): the cdp plugin reads its
    PodScheduled condition, so its conditions are kept."""
    return any(isinstance(m, dict) and COOLDOWN_TIME in m for m in (meta.get("labels"), meta.get("annotations")))


def _slim_pod(doc: dict[str, Any]) -> None:
    """Drop, in place, the fields of UNREAD_POD_FIELDS (only from mappings: a malformed part
    stays for the decoder to report). Set intersections find the few present in C."""
    meta, spec, status = doc.get("metadata"), doc.get("spec"), doc.get("status")
    if isinstance(meta, dict):
        for k in meta.keys() & _UNREAD["metadata"]:
            del meta[k]
    if isinstance(status, dict):
        present = status.keys() & _UNREAD_STATUS_NOT_TERMINATING
        if "conditions" in present and isinstance(meta, dict) and (meta.get("deletionTimestamp") is not None
                                                                   or _has_cooldown(meta)):
            present.discard("conditions")
        for k in present:
            del status[k]
    if isinstance(spec, dict):
        for k in spec.keys() & _UNREAD["spec"]:
            del spec[k]
        vols = spec.get("volumes")
        if isinstance(vols, list):
            kept = [v for v in vols if not (isinstance(v, dict) and len(v) == 2 and "name" in v
                                            and not UNREAD_VOLUMES.isdisjoint(v))]
            if len(kept) < len(vols):
                spec["volumes"] = kept
        drop = _UNREAD["containers"]
        for key in _CONTAINER_LISTS:
            cs = spec.get(key)
            if isinstance(cs, list):
                for c in cs:
                    if isinstance(c, dict):
                        for k in c.keys() & drop:
                            del c[k]


def _flatten(docs: Iterable[object], source: str, slimmed: _Slimmed | None = None
             ) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for i, d in enumerate(docs):
        if d is None:
            continue
        if not isinstance(d, dict):
            raise InputError(f"document {i}: expected a Kubernetes object (a mapping), got {type(d).__name__}", source)
        if d.get("kind") == "List" or (str(d.get("kind", "")).endswith("List") and isinstance(d.get("items"), list)):
            items = d.get("items") or []
            done = slimmed is not None and isinstance(items, list) and slimmed.covers(items)
            for j, item in enumerate(items):
                if not isinstance(item, dict):
                    raise InputError(f"document {i} item {j}: expected a mapping", source)
                if item.get("kind") == "Pod" and not done:
                    _slim_pod(item)
                out.append((i, item))
        else:
            if d.get("kind") == "Pod":
                _slim_pod(d)
            out.append((i, d))
    return out


def _sources(paths: list[str]) -> list[tuple[str, Callable[[], str], str | None]]:
    """(name, read, file path or None) of each source, directories expanded in name order."""
    out: list[tuple[str, Callable[[], str], str | None]] = []
    for p in paths:
        if p == "-":
            out.append(("<stdin>", sys.stdin.read, None))
            continue
        path = Path(p)
        if path.is_dir():
            files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
            out.extend((str(f), f.read_text, str(f)) for f in files)
        elif path.is_file():
            out.append((str(path), path.read_text, str(path)))
        else:
            raise InputError("no such file or directory", p)
    return out


def read_documents(paths: list[str]) -> list[tuple[str, int, dict[str, Any]]]:
    docs = []
    for source, read, path in _sources(paths):
        slimmed = _Slimmed()
        for i, d in _flatten(_load(source, read, path, slimmed), source, slimmed):
            docs.append((source, i, d))
    return docs
