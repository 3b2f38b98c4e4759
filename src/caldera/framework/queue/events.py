"""Cluster events for the scheduling queue: parsing, matching, and hints.

An event is a string "Resource/Action", as plugins write them in `events_to_register()`:
"Node/Add", "Pod/Delete", "Node/UpdateNodeTaint", "Pod/UpdatePodLabel", "Node/*". The action is
one of kube's ActionTypes (fwk.ActionType); "Update" stands for every UpdateXxx action and "*" (or
"All") for every action. "*/*" is the wildcard event; "UnschedulableTimeout" and "ForceActivate"
are its labels.

Matching follows kube's MatchClusterEvents(registered, incoming): the resource of the registered
event is "*" or equal to the incoming one ("Pod" also covers "AssignedPod" / "UnschedulablePod"),
the actions overlap, and the incoming action is no broader than the registered one. So a plugin
registered for "Node/Update" is asked about "Node/UpdateNodeTaint", but one registered for
"Node/UpdateNodeTaint" is not asked about a generic "Node/Update".
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from ...api.objects import Node, Pod
    from ...api.selectors import LabelSelector
    from ..interface import Plugin, QueuedPodInfo

# kube's fwk.ActionType bits; only their distinctness matters for matching.
_UPDATE_ACTIONS = ("UpdateNodeAllocatable", "UpdateNodeLabel", "UpdateNodeTaint", "UpdateNodeCondition",
                   "UpdateNodeAnnotation", "UpdatePodLabel", "UpdatePodScaleDown", "UpdatePodToleration",
                   "UpdatePodSchedulingGatesEliminated", "UpdatePodGeneratedResourceClaim",
                   "UpdateNodeDeclaredFeature", "UpdatePodOther")
ACTIONS: dict[str, int] = {"Add": 1, "Delete": 2}
for _i, _name in enumerate(_UPDATE_ACTIONS):
    ACTIONS[_name] = 1 << (_i + 2)
UPDATE = 0
for _name in _UPDATE_ACTIONS:
    UPDATE |= ACTIONS[_name]
ALL = ACTIONS["Add"] | ACTIONS["Delete"] | UPDATE
ACTIONS.update({"Update": UPDATE, "*": ALL, "All": ALL,
                "UpdatePodTolerations": ACTIONS["UpdatePodToleration"]})   # pre-1.33 spelling

UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
FORCE_ACTIVATE = "ForceActivate"
WILDCARD = "*/*"
_WILDCARD_LABELS = {UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE, "*", "*/*", "*/All"}

# The pod resources kube uses for incoming pod events; a registration for "Pod" covers both.
_POD_KINDS = {"AssignedPod", "UnschedulablePod"}


@lru_cache(maxsize=4096)
def parse_event(event: str) -> tuple[str, int]:
    """'Node/UpdateNodeTaint' -> ('Node', bits). Raises ValueError naming the bad part."""
    if event in _WILDCARD_LABELS:
        return ("*", ALL)
    resource, sep, action = event.partition("/")
    if not sep or not resource or not action:
        raise ValueError(f"cluster event {event!r}: expected 'Resource/Action', e.g. 'Node/Add'")
    bits = ACTIONS.get(action)
    if bits is None:
        raise ValueError(f"cluster event {event!r}: unknown action {action!r}; use one of "
                         f"{', '.join(sorted(ACTIONS))}")
    return (resource, bits)


def is_wildcard(event: str) -> bool:
    return parse_event(event) == ("*", ALL)


def _match_parsed(reg: tuple[str, int], inc: tuple[str, int]) -> bool:
    rres, rbits = reg
    if rres == "*" and rbits == ALL:
        return True
    ires, ibits = inc
    if not (rres == "*" or rres == ires or (rres == "Pod" and ires in _POD_KINDS)):
        return False
    return bool(rbits & ibits) and ibits <= rbits


def matches(registered: str, incoming: str) -> bool:
    """kube's MatchClusterEvents: may a plugin registered for `registered` care about `incoming`?"""
    return _match_parsed(parse_event(registered), parse_event(incoming))


# ---- hints ------------------------------------------------------------------------------
HintFn: TypeAlias = Callable[[str, str], bool]
Hints: TypeAlias = HintFn | Mapping[str, Iterable[str]] | None


class HintTable:
    """Answers "may `event` make a pod rejected by `plugin` schedulable?".

    hints=None: every event may (no information). A callable (plugin, event) -> bool decides
    itself. A mapping plugin -> events registers those events for the plugin (as its
    EventsToRegister); a plugin missing from the mapping registered nothing, so only wildcard
    events (the unschedulable timeout, activation) move pods it rejected. Use
    hints_from_plugins() to build the mapping from plugin instances.
    """

    def __init__(self, hints: Hints = None):
        self.fn: HintFn | None = None
        self.table: dict[str, tuple[tuple[str, int], ...]] | None = None
        if hints is None:
            pass
        elif callable(hints) and not isinstance(hints, Mapping):
            self.fn = hints
        elif isinstance(hints, Mapping):
            self.table = {str(p): tuple(parse_event(e) for e in evs) for p, evs in hints.items()}
        else:
            raise ValueError(f"hints: expected None, a callable (plugin, event) -> bool, or a mapping "
                             f"plugin -> events, got {type(hints).__name__}")
        self._interest: dict[str, bool] = {}

    def queues(self, plugin: str, event: str) -> bool:
        """Does `plugin` say `event` may make its rejected pod schedulable (Queue vs QueueSkip)?"""
        if self.table is not None:
            inc = parse_event(event)
            return any(_match_parsed(r, inc) for r in self.table.get(plugin, ()))
        if self.fn is not None:
            return bool(self.fn(plugin, event))
        return True

    def of_interest(self, event: str) -> bool:
        """kube's isEventOfInterest: is any plugin registered for the event?"""
        if self.table is None:
            return True
        hit = self._interest.get(event)
        if hit is None:
            inc = parse_event(event)
            hit = inc == ("*", ALL) or any(_match_parsed(r, inc) for regs in self.table.values() for r in regs)
            self._interest[event] = hit
        return hit


def hints_from_plugins(plugins: Iterable[Plugin]) -> dict[str, tuple[str, ...]]:
    """{plugin name: registered events} from plugin instances (e.g. Framework.instances.values()).

    A plugin that does not override events_to_register() gets the wildcard, as kube registers a
    plugin without EnqueueExtensions for every event.
    """
    from ..interface import Plugin
    out: dict[str, tuple[str, ...]] = {}
    for p in plugins:
        if getattr(type(p), "events_to_register", None) is Plugin.events_to_register:
            out[p.name] = (WILDCARD,)
        else:
            out[p.name] = tuple(p.events_to_register())
    return out


# ---- the events of a pod's own update ------------------------------------------------------
def pod_update_events(old: Pod | None, new: Pod) -> list[str]:
    """kube's PodSchedulingPropertiesChange: the specific Pod/UpdateXxx events of an update,
    or the generic 'Pod/Update' when none applies."""
    if old is None:
        return ["Pod/Update"]
    out = []
    if old.labels != new.labels:
        out.append("Pod/UpdatePodLabel")
    oreq, nreq = old.requests, new.requests
    if any(r not in nreq or nreq[r] < v for r, v in oreq.items()):
        out.append("Pod/UpdatePodScaleDown")
    if old.scheduling_gates and not new.scheduling_gates:
        out.append("Pod/UpdatePodSchedulingGatesEliminated")
    if (old.spec.get("tolerations") or []) != (new.spec.get("tolerations") or []):
        out.append("Pod/UpdatePodToleration")
    ost, nst = old.raw.get("status") or {}, new.raw.get("status") or {}
    if (ost.get("resourceClaimStatuses") or []) != (nst.get("resourceClaimStatuses") or []) or \
            ost.get("extendedResourceClaimStatus") != nst.get("extendedResourceClaimStatus"):
        out.append("Pod/UpdatePodGeneratedResourceClaim")      # extractPodGeneratedResourceClaimChange
    return out or ["Pod/Update"]


_IGNORED_META = ("resourceVersion", "generation", "managedFields", "finalizers")


def pod_updated(old: Pod | None, new: Pod) -> bool:
    """kube's isPodUpdated: did anything but status / bookkeeping metadata change?"""
    if old is None:
        return True

    def strip(p: Pod) -> dict[str, Any]:
        raw = dict(p.raw)
        raw.pop("status", None)
        meta = dict(raw.get("metadata") or {})
        for k in _IGNORED_META:
            meta.pop(k, None)
        raw["metadata"] = meta
        return raw
    return strip(old) != strip(new)


# ---- which pending pods an assigned pod's event may help -----------------------------------
_TERMS_KEY = "queue.required_affinity_terms"


_AffinityTerm = tuple["LabelSelector | None", frozenset[str], "LabelSelector | None"]


def _required_affinity_terms(pod: Pod) -> list[_AffinityTerm]:
    """Parsed required podAffinity terms of `pod` (cached in pod.cache): (selector, namespaces,
    namespace selector or None)."""
    terms: list[_AffinityTerm] | None = pod.cache.get(_TERMS_KEY)
    if terms is None:
        from ...api.selectors import parse_label_selector
        terms = []
        pa = (pod.affinity or {}).get("podAffinity") or {}
        for i, t in enumerate(pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            where = f"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
            sel = parse_label_selector(t.get("labelSelector"), f"{where}.labelSelector")
            nss = set(t.get("namespaces") or [])
            nsel = parse_label_selector(t.get("namespaceSelector"), f"{where}.namespaceSelector")
            if not nss and nsel is None:
                nss = {pod.namespace}
            terms.append((sel, frozenset(nss), nsel))
        pod.cache[_TERMS_KEY] = terms
    return terms


def affinity_term_matches(pending: Pod, assigned: Pod) -> bool:
    """Does any required podAffinity term of `pending` match `assigned`? A namespaceSelector is
    taken to match (namespace labels are not known here), so this may only over-approximate."""
    for sel, nss, nsel in _required_affinity_terms(pending):
        if sel is None or not sel.matches(assigned.labels):
            continue
        if assigned.namespace in nss or nsel is not None:
            return True
    return False


def cross_topology_candidate(qpi: QueuedPodInfo, assigned: Pod) -> bool:
    """kube's getUnschedulablePodsWithCrossTopologyTerm for one pending pod: rejected by
    PodTopologySpread in the assigned pod's namespace, or has a required affinity term that
    matches the assigned pod."""
    if "PodTopologySpread" in qpi.unschedulable_plugins and qpi.pod.namespace == assigned.namespace:
        return True
    return affinity_term_matches(qpi.pod, assigned)


def node_update_events(old: Node, new: Node) -> list[str]:
    """kube's nodeSchedulingPropertiesChange: the Node/UpdateXxx events an update amounts to."""
    ev: list[str] = []
    if old.unschedulable != new.unschedulable:
        ev.append("Node/UpdateNodeTaint")   # kube folds spec.unschedulable into the taint event
    if old.allocatable != new.allocatable:
        ev.append("Node/UpdateNodeAllocatable")
    if old.labels != new.labels:
        ev.append("Node/UpdateNodeLabel")
    if old.taints != new.taints and "Node/UpdateNodeTaint" not in ev:
        ev.append("Node/UpdateNodeTaint")
    oc = (old.raw.get("status") or {}).get("conditions")
    nc = (new.raw.get("status") or {}).get("conditions")
    if _conditions(oc) != _conditions(nc):
        ev.append("Node/UpdateNodeCondition")
    if (old.raw.get("metadata") or {}).get("annotations") != (new.raw.get("metadata") or {}).get("annotations"):
        ev.append("Node/UpdateNodeAnnotation")
    return ev


def _conditions(conds: object) -> list[tuple[object, object]]:
    items = conds if isinstance(conds, list) else []
    return sorted((c.get("type"), c.get("status")) for c in items if isinstance(c, dict))
