"""Typed configuration the runtime is built from (the result of defaulting + validation)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PluginRef:
    name: str
    weight: int = 0          # score weight; 0 means "unset" and becomes 1 at runtime


@dataclass
class Profile:
    scheduler_name: str = "default-scheduler"
    # extension point (camelCase, as in KubeSchedulerConfiguration) -> enabled plugins in order
    plugins: dict[str, list[PluginRef]] = field(default_factory=dict)
    plugin_args: dict[str, dict] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


@dataclass
class SchedulerConfig:
    profiles: list[Profile] = field(default_factory=list)
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    parallelism: int = 16
    source: str = "<default>"
    leader_election: dict = field(default_factory=dict)   # raw leaderElection (used by `caldera run`)

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None
