"""Victim selection on one node (DefaultPreemption.SelectVictimsOnNode and its helpers).

The NodeTable is the live cluster state, so "what if" checks mutate it and always put it back:
every pod removed or added here is restored, and the node's pod order is restored too, before
returning (also on exceptions). PreFilter state is recomputed on a fresh CycleState after each
change, which stands in for kube's PreFilterExtensions AddPod/RemovePod.
"""
from __future__ import annotations

import math

from ...framework.interface import CycleState
from ...framework.status import Status

NO_VICTIMS_MSG = "No preemption victims found for incoming pod"


def start_time(pod) -> float:
    """util.GetPodStartTime: status.startTime, or "now" for pods that have not started. Now is
    later than any recorded start, so it is modelled as +inf (two such pods tie)."""
    st = pod.start_time
    return math.inf if st is None else st


def importance_key(pod):
    """Sort key for util.MoreImportantPod: higher priority first, then earlier start time."""
    return (-pod.priority, start_time(pod))


def filter_pods_with_pdb_violation(pods, pdbs):
    """Split `pods` (order kept) into (violating, non_violating): a pod violates when evicting it,
    after the pods before it in the list, takes a matching PDB's disruptionsAllowed below 0.
    Pods listed in a PDB's status.disruptedPods do not count against that PDB."""
    if not pdbs:
        return [], list(pods)
    allowed = [p.disruptions_allowed for p in pdbs]
    violating, non_violating = [], []
    for pod in pods:
        violated = False
        if pod.labels:
            for j, pdb in enumerate(pdbs):
                if not pdb.selects(pod):
                    continue
                if pod.name in pdb.disrupted_pods:
                    continue
                allowed[j] -= 1
                if allowed[j] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def _pre_filter_and_filter(fw, pod, table, i) -> Status:
    state = CycleState()
    _, s = fw.run_pre_filter(state, pod)
    if not s.is_success():
        return s
    return fw.filter_one(state, pod, table, i)


def filter_with_nominated(fw, handle, pod, table, i) -> Status:
    """RunFilterPluginsWithNominatedPods on node i: first with the node's nominated pods of equal
    or higher priority added (if any), then, if that passed, without them."""
    added = [p for p in handle.nominated_pods(i)
             if p.key != pod.key and p.priority >= pod.priority and table.node_of(p.key) is None]
    if added:
        done = []
        try:
            for p in added:
                table.add_pod(p, i)
                done.append(p)
            s = _pre_filter_and_filter(fw, pod, table, i)
        finally:
            for p in done:
                table.remove_pod(p.key)
        if not s.is_success():
            return s
    return _pre_filter_and_filter(fw, pod, table, i)


def _restore(table, i, pods, order) -> None:
    for p in pods:
        if table.node_of(p.key) is None:
            table.add_pod(p, i)
    d = table.pods[i]
    if list(d) != order:
        items = [(k, d[k]) for k in order]
        d.clear()
        d.update(items)


def select_victims_on_node(plugin, pod, table, i, pdbs):
    """Returns (victims most important first, number of PDB-violating victims, Status).

    All pods the preemptor may preempt are removed; if the preemptor still does not fit, the
    node is no candidate (the filter status is returned). Otherwise victims are reprieved one
    by one, PDB-violating ones first, each group most important first, and stay only if the
    preemptor no longer fits with them back."""
    fw = plugin.handle.framework
    handle = plugin.handle
    node_pods = table.pods[i]
    order = list(node_pods)
    potential = plugin.potential_victims(table, i, pod)
    if not potential:
        return [], 0, Status.unresolvable(NO_VICTIMS_MSG)
    try:
        for p in potential:
            table.remove_pod(p.key)
        s = filter_with_nominated(fw, handle, pod, table, i)
        if not s.is_success():
            return [], 0, s
        potential = plugin.sort_by_importance(potential)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims = []
        num_violating = 0

        def reprieve(p) -> bool:
            table.add_pod(p, i)
            fits = filter_with_nominated(fw, handle, pod, table, i).is_success()
            if not fits:
                table.remove_pod(p.key)
                victims.append(p)
            return fits

        for p in violating:
            if not reprieve(p):
                num_violating += 1
        for p in non_violating:
            reprieve(p)
        if violating and non_violating:
            victims = plugin.sort_by_importance(victims)
        return victims, num_violating, Status()
    finally:
        _restore(table, i, potential, order)
