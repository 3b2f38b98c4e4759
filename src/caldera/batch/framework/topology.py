"""What Volcano's OpenSession does with HyperNodes before the plugins open (framework/session.go):
the tree (cluster top included) goes into the session, each job's networkTopology copy is
adjusted (highestTierName -> highestTierAllowed; soft mode -> hard mode at the cluster top's tier,
so soft jobs take the hard path with no tier limit: adjustNetworkTopologySpec), and the HyperNode
of a job that already has placed tasks is recovered from their nodes (recoverAllocatedHyperNode:
the lowest-tier HyperNode holding all of them) unless the job kept one from an earlier session:
Volcano's cache keeps the HyperNode the last session gave a job, and OpenSession only drops it
when that HyperNode is gone or the job has no placed task (removeInvalidAllocatedHyperNode).
Whoever keeps jobs between sessions (the simulation, `caldera run`) sets `allocated_hypernode`
and `subjob_allocated_hypernode` on the snapshot's jobs before the session opens.

A job here has one sub-job (Caldera has no subGroupPolicy), which carries the job's constraint.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..api.hypernode import HARD, SOFT, HyperNodes, build_hypernodes
from ..api.info import ALLOCATED_STATUS

if TYPE_CHECKING:
    from .session import Session


def open_topology(ssn: Session, hns: HyperNodes | None) -> list[str]:
    """Put the HyperNode tree into the session and adjust the jobs; returns warnings."""
    if hns is None:
        hns = build_hypernodes([], ssn.nodes)
    ssn.hypernodes = hns
    ssn.hypernode_decisions = {}
    ssn.hypernode_explain = {}
    warnings: list[str] = []
    for uid in sorted(ssn.jobs):
        nt = ssn.jobs[uid].network_topology
        if nt is None or nt.highest_tier_allowed is not None or not nt.highest_tier_name:
            continue
        tier = hns.tier_names.get(nt.highest_tier_name)
        if tier is None:
            warnings.append(f"PodGroup {uid}: networkTopology.highestTierName {nt.highest_tier_name!r} is the "
                            "tierName of no HyperNode; the constraint has no tier (Volcano skips the translation)")
            continue
        nt.highest_tier_allowed = tier
        nt.highest_tier_name = ""
    top_tier = hns.top.tier
    for job in ssn.jobs.values():
        nt = job.network_topology
        if nt is not None and nt.mode == SOFT:
            nt.mode = HARD
            nt.highest_tier_allowed = top_tier
            nt.highest_tier_name = ""
        remove_invalid_allocated_hypernode(ssn, job)
        if nt is not None:
            recover_allocated_hypernode(ssn, job)
    return warnings


def remove_invalid_allocated_hypernode(ssn: Session, job) -> None:
    """removeInvalidAllocatedHyperNode: a HyperNode the job kept from an earlier session (the
    cache's, see the simulation and `caldera run`) is dropped when it no longer exists or the
    job (its one sub-job) has no allocated task."""
    if not job.allocated_hypernode and not job.subjob_allocated_hypernode:
        return
    placed = any(t.status & ALLOCATED_STATUS for t in job.tasks.values())
    if job.allocated_hypernode and (job.allocated_hypernode not in ssn.hypernodes or not placed):
        job.allocated_hypernode = ""
    if job.subjob_allocated_hypernode and (job.subjob_allocated_hypernode not in ssn.hypernodes or not placed):
        job.subjob_allocated_hypernode = ""


def recover_allocated_hypernode(ssn: Session, job) -> None:
    """The lowest-tier HyperNode that holds every node the job's placed tasks are on ("" when it
    has none), for a job (sub-job) that kept none from an earlier session: a kept one stays, as
    Volcano's cache keeps it (the job's HyperNode becomes the sub-job's when that is recovered)."""
    if job.subjob_allocated_hypernode:
        if not job.allocated_hypernode:
            job.allocated_hypernode = job.subjob_allocated_hypernode
        return
    hns = ssn.hypernodes
    rows = [ssn.nodes.by_name[t.node_name].i for t in job.tasks.values()
            if t.status & ALLOCATED_STATUS and t.node_name in ssn.nodes.by_name]
    if not rows:
        return
    idx = np.array(rows, dtype=np.intp)
    best = None
    for name in sorted(hns.infos):
        hn = hns.infos[name]
        if hn.mask[idx].all() and (best is None or hn.tier < best.tier):
            best = hn
    if best is not None:
        job.subjob_allocated_hypernode = best.name
        job.allocated_hypernode = best.name
