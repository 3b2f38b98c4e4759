"""The types of the functions a Volcano plugin registers with a session (session_plugins.go).

A batch plugin registers callbacks in `on_session_open(ssn)` with `ssn.add(hook, plugin_name,
fn)` (and `ssn.add_event_handler(allocate=..., deallocate=...)`). `Session.add` is overloaded on
the hook name, so a callback of the wrong shape is a type error. How the session combines the
callbacks of several plugins and tiers is described in session.py; the conf flag that enables
each hook is session.HOOK_FLAGS.

Order functions return <0 (l first), >0 (r first) or 0 (no opinion: the next plugin decides).
Votes are PERMIT (1), ABSTAIN (0) or REJECT (-1) (batch.plugins.base).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from ...framework.protocols import NodeRows  # rows of the session's nodes (ssn.nodes), as in kube plugins
from ..api.info import JobInfo, QueueInfo, TaskInfo

# ---- orders ------------------------------------------------------------------------------------
JobOrderFn: TypeAlias = Callable[[JobInfo, JobInfo], int]
"""job_order: which job is scheduled first (JobOrderFn)."""
QueueOrderFn: TypeAlias = Callable[[QueueInfo, QueueInfo], int]
"""queue_order: which queue is served first (QueueOrderFn)."""
VictimQueueOrderFn: TypeAlias = Callable[[QueueInfo, QueueInfo, QueueInfo], int]
"""victim_queue_order(l, r, preemptor queue): which queue gives up tasks first."""
TaskOrderFn: TypeAlias = Callable[[TaskInfo, TaskInfo], int]
"""task_order: which task of a job is placed first (TaskOrderFn)."""

# ---- job and queue checks ------------------------------------------------------------------------
ValidateResult: TypeAlias = tuple[bool, str, str]
"""(pass, reason, message) of job_valid (Volcano's ValidateResult)."""
JobValidFn: TypeAlias = Callable[[JobInfo], ValidateResult | None]
"""job_valid: None (or a passing result) if the job may be scheduled at all."""
JobReadyFn: TypeAlias = Callable[[JobInfo], bool]
"""job_ready: has the job enough tasks placed to bind them (gang's minAvailable)? ANDed."""
JobStarvingFn: TypeAlias = Callable[[JobInfo], bool]
"""job_starving: does the job still want resources (preempt/reclaim for it)?"""
JobVoteFn: TypeAlias = Callable[[JobInfo], int]
"""job_pipelined, job_enqueueable: a vote, PERMIT / ABSTAIN / REJECT (any reject stops; a permit
decides at the end of its tier)."""
JobEnqueuedFn: TypeAlias = Callable[[JobInfo], None]
"""job_enqueued: the job was admitted (Pending -> Inqueue); account for it."""
OverusedFn: TypeAlias = Callable[[QueueInfo], bool]
"""overused: is the queue over its share (no allocation for it this session)? ORed."""
QueueTaskFn: TypeAlias = Callable[[QueueInfo, TaskInfo], bool]
"""allocatable, preemptive: may `task` of the queue take resources (allocate / preempt)? ANDed."""

# ---- victims -----------------------------------------------------------------------------------
VictimsFn: TypeAlias = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo] | None, int]]
"""preemptable, reclaimable(actor, candidates) -> (victims, vote): ABSTAIN (0) ignores the answer;
otherwise sets intersect within a tier and the first tier with a non-empty set decides (None or
an empty list: no victims, which ends the tier)."""

# ---- predicates and scores ---------------------------------------------------------------------
PrePredicateFn: TypeAlias = Callable[[TaskInfo], str | None]
"""pre_predicate: an error message if the task fits no node at all (PrePredicate)."""


class PredicateFn(Protocol):
    """predicate: registered as an object (batch.plugins.base.Predicate) with two functions."""

    @property
    def mask(self) -> Callable[[TaskInfo, NodeRows], npt.NDArray[np.bool_] | None]:
        """mask(task, idx): True per entry of idx where the task fits (None: all fit)."""
        ...

    @property
    def reason(self) -> Callable[[TaskInfo, int], list[tuple[str, str]]]:
        """reason(task, i): [(fit error code, reason)] for node row i that failed."""
        ...


NodeOrderFn: TypeAlias = Callable[[TaskInfo, NodeRows, dict[str, Any] | None], npt.NDArray[Any] | None]
"""node_order, batch_node_order(task, idx, detail) -> a score per entry of idx (None: no opinion).
Scores of all plugins are summed; with `detail` (explain), a plugin may store sub-scores in it."""
class NodeOrderError(Exception):
    """A batch_node_order function failed (BatchNodeOrderFn's error): as Volcano's PrioritizeNodes,
    the session then scores none of the candidate nodes, and the action finds no best node among
    them (allocate tries its next candidate list; preempt and reclaim order no node; backfill skips
    the task, where Volcano's dereferences the missing node)."""


BestNodeFn: TypeAlias = Callable[[TaskInfo, NodeRows, npt.NDArray[Any]], int | None]
"""best_node(task, idx, scores): the chosen node row, or None to leave it to the next plugin."""
VictimTasksFn: TypeAlias = Callable[[list[TaskInfo]], list[TaskInfo]]
"""victim_tasks(running tasks) -> the tasks to evict (VictimTasksFn; rescheduling registers it,
the shuffle action dispatches it through Session.victim_tasks)."""

# ---- network topology (HyperNodes) ----------------------------------------------------------------
HyperNodeOrderFn: TypeAlias = Callable[[JobInfo, list[str]], dict[str, float]]
"""hypernode_order(job, HyperNode names) -> a score per HyperNode (HyperNodeOrderFn; the job
stands for its one sub-job). Scores of all plugins are summed."""
HyperNodeGradientFn: TypeAlias = Callable[[JobInfo, Any, str, bool], list[list[Any]]]
"""hypernode_gradient(job, HyperNodeInfo, purpose "allocate" | "evict", sub_job) -> gradients of
HyperNodeInfo to try in order: HyperNodeGradientForJobFn, or with sub_job HyperNodeGradientForSubJobFn
(for the job's one sub-job). The first enabled plugin with one decides."""

# ---- preemption dry run (Simulate*; the state and node view are in simulate.py) ----------------------
SimulateAllocatableFn: TypeAlias = Callable[[dict[str, Any], QueueInfo, TaskInfo], bool]
"""simulate_allocatable(state, queue, task): may the queue take `task` given the simulated state
(SimulateAllocatableFn; gated by enableAllocatable)? ANDed."""
SimulatePredicateFn: TypeAlias = Callable[[dict[str, Any], TaskInfo, Any], str | None]
"""simulate_predicate(state, task, SimNode): an error message if `task` does not fit the simulated
node (SimulatePredicateFn; gated by enablePredicate). The first error stops."""
SimulateTaskFn: TypeAlias = Callable[[dict[str, Any], TaskInfo, TaskInfo, Any], str | None]
"""simulate_remove_task / simulate_add_task(state, preemptor, task, SimNode): account `task` leaving
/ rejoining the simulated node (SimulateRemoveTaskFn / SimulateAddTaskFn; gated by
enablePreemptable or enableAllocatable); an error message stops."""

# ---- events --------------------------------------------------------------------------------------
TaskEventFn: TypeAlias = Callable[[TaskInfo], None]
"""add_event_handler(allocate=, deallocate=): a task was placed on / removed from a node in the
session (Statement operations, including their rollback)."""

Hook = Literal["job_order", "queue_order", "victim_queue_order", "task_order", "predicate", "pre_predicate",
               "node_order", "batch_node_order", "best_node", "job_ready", "job_pipelined", "job_starving",
               "job_valid", "job_enqueueable", "job_enqueued", "overused", "allocatable", "preemptive",
               "preemptable", "reclaimable", "victim_tasks", "hypernode_order", "hypernode_gradient",
               "simulate_allocatable", "simulate_predicate", "simulate_add_task", "simulate_remove_task"]
"""The hook names of Session.add (the keys of session.HOOK_FLAGS)."""
