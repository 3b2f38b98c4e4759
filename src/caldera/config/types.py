"""Typed configuration the runtime is built from (the result of defaulting + validation)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The extension points a profile's `plugins` section names (KubeSchedulerConfiguration's Plugins),
# and the plugin method(s) whose presence means a plugin joins each one (the framework's contract,
# see framework/interface.py; kept here so that multiPoint expansion needs no framework import).
EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
                    "score", "reserve", "permit", "preBind", "bind", "postBind")
POINT_METHODS: dict[str, tuple[str, ...]] = {
    "preEnqueue": ("pre_enqueue",), "queueSort": ("less",), "preFilter": ("pre_filter",),
    "filter": ("filter", "filter_node"), "postFilter": ("post_filter",), "preScore": ("pre_score",),
    "score": ("score",), "reserve": ("reserve",), "permit": ("permit",), "preBind": ("pre_bind",),
    "bind": ("bind",), "postBind": ("post_bind",),
}


def class_implements(cls: type, point: str) -> bool:
    """Whether plugin class `cls` joins extension point `point` (has one of its methods)."""
    return any(getattr(cls, m, None) is not None for m in POINT_METHODS[point])


@dataclass
class PluginRef:
    name: str
    weight: int = 0          # score weight; 0 means "unset" and becomes 1 at runtime


@dataclass
class Profile:
    scheduler_name: str = "default-scheduler"
    # extension point (camelCase, as in KubeSchedulerConfiguration) -> enabled plugins in order
    plugins: dict[str, list[PluginRef]] = field(default_factory=dict)
    plugin_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


# kube-scheduler's own defaults for its client (apis/config/v1/defaults.go: "Scheduler has an opinion
# about QPS/Burst"), the same as component-base's ClientConnectionConfiguration defaults.
DEFAULT_CLIENT_QPS = 50.0
DEFAULT_CLIENT_BURST = 100


@dataclass
class ClientConnection:
    """clientConnection (component-base ClientConnectionConfiguration), defaulted. `caldera run`
    rate-limits its requests with qps/burst as client-go does; qps < 0 means unthrottled."""
    qps: float = DEFAULT_CLIENT_QPS
    burst: int = DEFAULT_CLIENT_BURST
    kubeconfig: str = ""
    content_type: str = ""
    accept_content_types: str = ""


@dataclass
class ExtenderTLS:
    """An extender's tlsConfig (kubescheduler.config.k8s.io/v1 ExtenderTLSConfig); the *Data fields
    are the decoded bytes of their base64 text."""
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass
class ExtenderConfig:
    """One entry of `extenders` (kubescheduler.config.k8s.io/v1 Extender), validated."""
    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls: ExtenderTLS | None = None
    http_timeout: float = 0.0                 # seconds; 0: kube's DefaultExtenderTimeout (5s)
    node_cache_capable: bool = False
    managed_resources: list[tuple[str, bool]] = field(default_factory=list)   # (name, ignoredByScheduler)
    ignorable: bool = False


@dataclass
class SchedulerConfig:
    profiles: list[Profile] = field(default_factory=list)
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    parallelism: int = 16
    source: str = "<default>"
    leader_election: dict[str, Any] = field(default_factory=dict)   # raw leaderElection (used by `caldera run`)
    client_connection: ClientConnection = field(default_factory=ClientConnection)   # used by `caldera run`
    extenders: list[ExtenderConfig] = field(default_factory=list)   # HTTP extenders (engine/extenders.py)

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None
