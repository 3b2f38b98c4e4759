"""GangScheduling (kube v1.35 pkg/scheduler/framework/plugins/gangscheduling, alpha): all-or-nothing
scheduling of a Workload's gang pod groups (`scheduling.k8s.io/v1alpha1`, api/workload.py).

- plugin.py:  the plugin (PreEnqueue, Reserve/Unreserve, Permit, events);
- manager.py: the pod-group state kube's workload manager keeps (backend/workloadmanager).
"""
from __future__ import annotations

from .plugin import GangScheduling

__all__ = ["GangScheduling"]
