"""Decode, default and validate a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

Follows kube-scheduler: strict decoding (unknown fields are errors), v1 defaulting
(apis/config/v1/defaults.go: parallelism 16, backoff 1s/10s, one "default-scheduler" profile when
none is given, the default plugins merged under the user's), validation (validation.go: ranges,
unique profile names, one common queueSort, unique pluginConfig entries), and the framework's
multiPoint expansion (see expand.py). Plugin args are validated by constructing the plugin.
"""
from __future__ import annotations

import base64
import binascii
import difflib
from typing import Any, NoReturn

from ..api.goduration import DurationError, parse_go_duration
from ..api.validation import field_invalid, go_quote, qualified_name_errors
from ..errors import ConfigError
from .defaults import DEFAULT_SCHEDULER_NAME, INVALID_V1_PLUGINS, KUBE_ONLY_PLUGINS, default_plugins
from .expand import (
    ALL_POINTS,
    MAX_WEIGHT,
    MULTI_POINT,
    PluginSet,
    PluginSetError,
    PointResolver,
    Registry,
    expand_plugins,
    merge_plugins,
)
from .types import (
    DEFAULT_CLIENT_BURST,
    DEFAULT_CLIENT_QPS,
    ClientConnection,
    ExtenderConfig,
    ExtenderTLS,
    PluginRef,
    Profile,
    SchedulerConfig,
)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

TOP_FIELDS = ("apiVersion", "kind", "parallelism", "percentageOfNodesToScore", "podInitialBackoffSeconds",
              "podMaxBackoffSeconds", "profiles", "extenders", "leaderElection", "clientConnection",
              "enableProfiling", "enableContentionProfiling", "delayCacheUntilActive")
PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")
SET_FIELDS = ("enabled", "disabled")
PLUGIN_FIELDS = ("name", "weight")
PLUGIN_CONFIG_FIELDS = ("name", "args")
CLIENT_CONNECTION_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")


class _Ctx:
    def __init__(self, path: str, registry: Registry):
        self.path = path
        self.registry = registry
        self.resolver = PointResolver(registry)

    def err(self, field: str, problem: str, fix: str) -> ConfigError:
        return ConfigError(" ".join(f"{self.path}: {field}: {problem}; {fix}".split()))

    # ---- typed fields ------------------------------------------------------------------
    def fields(self, d: dict[str, Any], allowed: tuple[str, ...], where: str, what: str) -> None:
        for k in d:
            if k not in allowed:
                close = difflib.get_close_matches(str(k), allowed, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise self.err(f"{where}.{k}" if where else str(k), "unknown field",
                               f"{hint}fields of {what}: {', '.join(allowed)}")

    def mapping(self, v: object, where: str, what: str) -> dict[str, Any]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise self.err(where, f"expected a mapping ({what}), got {_show(v)}", f"write {where} as a mapping")
        return v

    def seq(self, v: object, where: str, what: str) -> list[Any]:
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.err(where, f"expected a list of {what}, got {_show(v)}", f"write {where} as a YAML list")
        return v

    def integer(self, v: object, where: str, lo: int | None = None, hi: int | None = None, rule: str = "") -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.err(where, f"expected an integer, got {_show(v)}", f"set {where} to {rule or 'an integer'}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.err(where, f"{v} is out of range", f"set it to {rule}")
        return v

    def string(self, v: object, where: str, what: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.err(where, f"expected a non-empty string ({what}), got {_show(v)}", f"set {where}")
        return v

    def unknown_plugin(self, where: str, name: str) -> ConfigError:
        if name in INVALID_V1_PLUGINS:
            return self.err(where, f"plugin {name!r} was invalid in version {API_VERSION!r}",
                            "remove it (NodeVolumeLimits covers volume limits)")
        if name in KUBE_ONLY_PLUGINS:
            return self.err(where, f"kube plugin {name!r} is not implemented by caldera", "remove it")
        close = difflib.get_close_matches(name, list(self.registry), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return self.err(where, f"unknown plugin {name!r}",
                        f"{hint}known plugins: {', '.join(sorted(self.registry))} (third-party plugins are "
                        "found through the 'caldera.plugins' entry-point group once installed)")


def _show(v: object) -> str:
    if isinstance(v, (dict, list)):
        return f"a {'mapping' if isinstance(v, dict) else 'list'}"
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def decode_kube_config(doc: dict[str, Any], path: str, registry: Registry) -> SchedulerConfig:
    c = _Ctx(path, registry)
    c.fields(doc, TOP_FIELDS, "", "a KubeSchedulerConfiguration")
    cfg = SchedulerConfig(source=path)
    if doc.get("parallelism") is not None:
        cfg.parallelism = c.integer(doc["parallelism"], "parallelism", 1, MAX_WEIGHT, "an integer greater than zero")
    if doc.get("percentageOfNodesToScore") is not None:
        cfg.percentage_of_nodes_to_score = c.integer(doc["percentageOfNodesToScore"], "percentageOfNodesToScore",
                                                     0, 100, "a value in [0-100] (0 = adaptive)")
    init, mx = 1, 10
    if doc.get("podInitialBackoffSeconds") is not None:
        init = c.integer(doc["podInitialBackoffSeconds"], "podInitialBackoffSeconds", 1, None,
                         "a number of seconds greater than 0")
    if doc.get("podMaxBackoffSeconds") is not None:
        mx = c.integer(doc["podMaxBackoffSeconds"], "podMaxBackoffSeconds", None, None, "a number of seconds")
    if mx < init:
        raise c.err("podMaxBackoffSeconds", f"{mx} is less than podInitialBackoffSeconds ({init})",
                    "make it greater than or equal to podInitialBackoffSeconds")
    cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds = float(init), float(mx)
    cfg.leader_election = dict(c.mapping(doc.get("leaderElection"), "leaderElection",
                                         "a LeaderElectionConfiguration") or {})
    cfg.client_connection = _client_connection(c, doc.get("clientConnection"))
    for k in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
        if doc.get(k) is not None and not isinstance(doc[k], bool):
            raise c.err(k, f"expected true or false, got {_show(doc[k])}", f"set {k} to true or false")
    cfg.extenders = _extenders(c, doc.get("extenders"))

    raw_profiles = c.seq(doc.get("profiles"), "profiles", "profiles") or [{}]
    names: dict[str, int] = {}
    raws: list[dict[str, Any]] = []
    for i, raw in enumerate(raw_profiles):
        where = f"profiles[{i}]"
        raw = c.mapping(raw, where, "a scheduling profile")
        raws.append(raw)
        c.fields(raw, PROFILE_FIELDS, where, "a profile")
        prof = _decode_profile(c, raw, where, single=len(raw_profiles) == 1)
        if prof.scheduler_name in names:
            raise c.err(f"{where}.schedulerName", f"duplicate value {prof.scheduler_name!r} "
                        f"(also profiles[{names[prof.scheduler_name]}].schedulerName)",
                        "give each profile a unique schedulerName")
        names[prof.scheduler_name] = i
        cfg.profiles.append(prof)
    _common_queue_sort(c, cfg.profiles, raws)
    # buildExtenders: extended resources an extender manages with ignoredByScheduler replace
    # NodeResourcesFit's ignoredResources in every profile
    ignored = [name for ext in cfg.extenders for name, ign in ext.managed_resources if ign]
    if ignored:
        for prof in cfg.profiles:
            prof.plugin_args.setdefault("NodeResourcesFit", {})["ignoredResources"] = list(ignored)
    return cfg


EXTENDER_FIELDS = ("urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS",
                   "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable")
EXTENDER_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")
MANAGED_RESOURCE_FIELDS = ("name", "ignoredByScheduler")
def _is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: not a native resource (no '/' or a kubernetes.io/ name),
    not requests.*, and requests.<name> a qualified name."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _extenders(c: _Ctx, v: object) -> list[ExtenderConfig]:
    """`extenders`, decoded strictly and validated as kube-scheduler's validateExtenders (a
    prioritizeVerb needs a positive weight; managedResources are extended resource names, each
    named once across extenders; at most one extender binds). kube-scheduler reports every
    problem at once; Caldera stops at the first, with kube's field error text."""
    out: list[ExtenderConfig] = []
    binders = 0
    managed: set[str] = set()
    for i, raw in enumerate(c.seq(v, "extenders", "extenders")):
        where = f"extenders[{i}]"
        raw = c.mapping(raw, where, "an Extender")
        c.fields(raw, EXTENDER_FIELDS, where, "an Extender")
        ext = ExtenderConfig()
        for key, attr in (("urlPrefix", "url_prefix"), ("filterVerb", "filter_verb"), ("preemptVerb", "preempt_verb"),
                          ("prioritizeVerb", "prioritize_verb"), ("bindVerb", "bind_verb")):
            val = raw.get(key)
            if val is not None:
                if not isinstance(val, str):
                    raise c.err(f"{where}.{key}", f"expected a string, got {_show(val)}", f"write {key} as a string")
                setattr(ext, attr, val)
        for key, attr in (("enableHTTPS", "enable_https"), ("nodeCacheCapable", "node_cache_capable"),
                          ("ignorable", "ignorable")):
            val = raw.get(key)
            if val is not None:
                if not isinstance(val, bool):
                    raise c.err(f"{where}.{key}", f"expected true or false, got {_show(val)}",
                                f"set {key} to true or false")
                setattr(ext, attr, val)
        if raw.get("weight") is not None:
            ext.weight = c.integer(raw["weight"], f"{where}.weight", -(2**63), 2**63 - 1, "a positive integer")
        if raw.get("httpTimeout") is not None:
            t = raw["httpTimeout"]
            secs: float | None = None
            if isinstance(t, str):
                try:
                    secs = parse_go_duration(t) / 1e9
                except DurationError:
                    pass
            if secs is None:
                shown = f'time: invalid duration "{t}"' if isinstance(t, str) else f"expected a string, got {_show(t)}"
                raise c.err(f"{where}.httpTimeout", shown, "write a Go duration such as 5s, 500ms or 1m")
            ext.http_timeout = secs
        if raw.get("tlsConfig") is not None:
            ext.tls = _extender_tls(c, raw["tlsConfig"], f"{where}.tlsConfig")
        if ext.prioritize_verb and ext.weight <= 0:
            raise c.err(f"{where}.weight", field_invalid(f"{where}.weight", ext.weight,
                        "must have a positive weight applied to it").split(": ", 1)[1],
                        "give the extender a weight greater than zero (it multiplies its scores)")
        if ext.bind_verb:
            binders += 1
        for j, mr in enumerate(c.seq(raw.get("managedResources"), f"{where}.managedResources", "{name}")):
            mw = f"{where}.managedResources[{j}]"
            mr = c.mapping(mr, mw, "a managed resource {name, ignoredByScheduler}")
            c.fields(mr, MANAGED_RESOURCE_FIELDS, mw, "an ExtenderManagedResource")
            name = mr.get("name")
            if not isinstance(name, str):
                raise c.err(f"{mw}.name", f"expected a string, got {_show(name)}", "name an extended resource")
            ignored = mr.get("ignoredByScheduler", False)
            if not isinstance(ignored, bool):
                raise c.err(f"{mw}.ignoredByScheduler", f"expected true or false, got {_show(ignored)}",
                            "set ignoredByScheduler to true or false")
            errs = qualified_name_errors(name)
            if errs:
                raise c.err(f"{mw}.name", f"Invalid value: {go_quote(name)}: {errs[0]}",
                            "name an extended resource such as example.com/foo")
            if not _is_extended_resource_name(name):
                raise c.err(f"{mw}.name", f"Invalid value: {go_quote(name)}: is an invalid extended resource name",
                            "name an extended resource (a domain-prefixed name outside kubernetes.io/)")
            if name in managed:
                raise c.err(f"{mw}.name", f"Invalid value: {go_quote(name)}: duplicate extender managed resource name",
                            "list each managed resource in one extender only")
            managed.add(name)
            ext.managed_resources.append((name, ignored))
        out.append(ext)
    if binders > 1:
        raise c.err("extenders", f'Invalid value: "found {binders} extenders implementing bind": '
                    "only one extender can implement bind", "set bindVerb on one extender only")
    return out


def _extender_tls(c: _Ctx, v: object, where: str) -> ExtenderTLS:
    raw = c.mapping(v, where, "an ExtenderTLSConfig")
    c.fields(raw, EXTENDER_TLS_FIELDS, where, "an ExtenderTLSConfig")
    tls = ExtenderTLS()
    if raw.get("insecure") is not None:
        if not isinstance(raw["insecure"], bool):
            raise c.err(f"{where}.insecure", f"expected true or false, got {_show(raw['insecure'])}",
                        "set insecure to true or false")
        tls.insecure = raw["insecure"]
    for key, attr in (("serverName", "server_name"), ("certFile", "cert_file"), ("keyFile", "key_file"),
                      ("caFile", "ca_file")):
        val = raw.get(key)
        if val is not None:
            if not isinstance(val, str):
                raise c.err(f"{where}.{key}", f"expected a string, got {_show(val)}", f"write {key} as a string")
            setattr(tls, attr, val)
    for key, attr in (("certData", "cert_data"), ("keyData", "key_data"), ("caData", "ca_data")):
        val = raw.get(key)
        if val is not None:
            try:
                data = base64.b64decode(val, validate=True) if isinstance(val, str) else None
            except (binascii.Error, ValueError):
                data = None
            if data is None:
                raise c.err(f"{where}.{key}", f"expected base64 text (PEM bytes), got {_show(val)}",
                            f"write {key} as the base64 encoding of the PEM data")
            setattr(tls, attr, data)
    return tls


def _client_connection(c: _Ctx, v: object) -> ClientConnection:
    """clientConnection, decoded strictly, defaulted as kube-scheduler's SetDefaults (qps 0 -> 50,
    burst 0 -> 100) and validated as component-base's ValidateClientConnectionConfiguration
    (burst >= 0). A negative qps stays: client-go then builds no rate limiter."""
    raw = c.mapping(v, "clientConnection", "a ClientConnectionConfiguration")
    c.fields(raw, CLIENT_CONNECTION_FIELDS, "clientConnection", "clientConnection")
    cc = ClientConnection()
    qps = raw.get("qps")
    if qps is not None:
        if isinstance(qps, bool) or not isinstance(qps, (int, float)) or qps != qps:
            raise c.err("clientConnection.qps", f"expected a number, got {_show(qps)}",
                        "set it to requests per second (e.g. 50; a negative value disables the limit)")
        cc.qps = float(qps) or DEFAULT_CLIENT_QPS
    if raw.get("burst") is not None:
        cc.burst = c.integer(raw["burst"], "clientConnection.burst", 0, 2**31 - 1,
                             "a non-negative integer") or DEFAULT_CLIENT_BURST
    for key, attr in (("kubeconfig", "kubeconfig"), ("contentType", "content_type"),
                      ("acceptContentTypes", "accept_content_types")):
        if raw.get(key) is not None:
            if not isinstance(raw[key], str):
                raise c.err(f"clientConnection.{key}", f"expected a string, got {_show(raw[key])}",
                            f"write clientConnection.{key} as a string")
            setattr(cc, attr, raw[key])
    return cc


def _decode_profile(c: _Ctx, raw: dict[str, Any], where: str, single: bool) -> Profile:
    name = raw.get("schedulerName")
    if name is None:
        if not single:
            raise c.err(f"{where}.schedulerName", "required when there are several profiles",
                        "give every profile a unique schedulerName")
        name = DEFAULT_SCHEDULER_NAME
    prof = Profile(scheduler_name=c.string(name, f"{where}.schedulerName", "the profile's scheduler name"))
    if raw.get("percentageOfNodesToScore") is not None:
        prof.percentage_of_nodes_to_score = c.integer(
            raw["percentageOfNodesToScore"], f"{where}.percentageOfNodesToScore", 0, 100,
            "a value in [0-100] (0 = adaptive), or leave it out to use the top-level value")
    custom = _decode_plugins(c, c.mapping(raw.get("plugins"), f"{where}.plugins", "extension points"),
                             f"{where}.plugins")
    merged = merge_plugins(default_plugins(c.registry), custom)
    try:
        prof.plugins = expand_plugins(merged, c.registry, c.resolver)
    except PluginSetError as e:
        raise c.err(_locate(custom, e, f"{where}.plugins"), e.problem, e.fix) from None
    prof.plugin_args = _decode_plugin_config(c, raw.get("pluginConfig"), f"{where}.pluginConfig")
    qs = [r.name for r in prof.plugins["queueSort"]]
    if len(qs) != 1:
        raise c.err(f"{where}.plugins.queueSort", f"{len(qs)} queueSort plugins are enabled ({', '.join(qs)}); "
                    "exactly one is required", "enable exactly one queueSort plugin (PrioritySort by default)")
    if not prof.plugins["bind"]:
        raise c.err(f"{where}.plugins.bind", "no bind plugin is enabled",
                    "enable DefaultBinder (or another bind plugin) at bind or multiPoint")
    return prof


def _locate(custom: dict[str, PluginSet], e: PluginSetError, base: str) -> str:
    """The user's entry an expansion error is about (the last one naming the plugin), if any."""
    ps = custom.get(e.point)
    if ps is not None:
        for j in range(len(ps.enabled) - 1, -1, -1):
            if ps.enabled[j].name == e.name:
                return f"{base}.{e.point}.enabled[{j}]"
    return f"{base}.{e.point}"


def _decode_plugins(c: _Ctx, raw: dict[str, Any], where: str) -> dict[str, PluginSet]:
    c.fields(raw, ALL_POINTS, where, "plugins (extension points)")
    out: dict[str, PluginSet] = {}
    for point, v in raw.items():
        pw = f"{where}.{point}"
        v = c.mapping(v, pw, "enabled/disabled")
        c.fields(v, SET_FIELDS, pw, "a plugin set")
        ps = PluginSet()
        seen: dict[str, int] = {}
        for j, p in enumerate(c.seq(v.get("enabled"), f"{pw}.enabled", "{name, weight}")):
            ew = f"{pw}.enabled[{j}]"
            p = c.mapping(p, ew, "{name, weight}")
            c.fields(p, PLUGIN_FIELDS, ew, "a plugin")
            name = c.string(p.get("name"), f"{ew}.name", "a plugin name")
            if name not in c.registry:
                raise c.unknown_plugin(f"{ew}.name", name)
            cls = c.resolver.cls(name)
            if getattr(cls, "name", None) != name:
                raise c.err(f"{ew}.name", f"plugin {name!r} is registered with class {cls.__module__}."
                            f"{cls.__qualname__}, whose name is {getattr(cls, 'name', None)!r}",
                            "make the class's `name` attribute equal to the name it is registered under")
            weight = 0
            if p.get("weight") is not None:
                weight = c.integer(p["weight"], f"{ew}.weight", 0, MAX_WEIGHT,
                                   f"an integer in [0-{MAX_WEIGHT}] (0 or unset = 1)")
            if point != MULTI_POINT:
                if not c.resolver.implements(name, point):
                    impl = ", ".join(c.resolver.points(name)) or "none"
                    raise c.err(f"{ew}.name", f"plugin {name!r} does not implement the {point} extension point "
                                f"(it implements: {impl})", f"remove it from {pw}.enabled or enable it at multiPoint")
                if name in seen:
                    raise c.err(ew, f"plugin {name!r} is already enabled at {pw}.enabled[{seen[name]}]",
                                "list each plugin once per extension point")
            seen[name] = j
            ps.enabled.append(PluginRef(name, weight))
        for j, p in enumerate(c.seq(v.get("disabled"), f"{pw}.disabled", "{name}")):
            dw = f"{pw}.disabled[{j}]"
            p = c.mapping(p, dw, "{name}")
            c.fields(p, PLUGIN_FIELDS, dw, "a plugin")
            name = c.string(p.get("name"), f"{dw}.name", "a plugin name or '*'")
            if name != "*" and name not in c.registry and name not in KUBE_ONLY_PLUGINS:
                raise c.unknown_plugin(f"{dw}.name", name)
            ps.disabled.append(name)
        out[point] = ps
    return out


class _NoHandle(Exception):
    """A plugin constructor touched the handle while its args were being validated."""


class _ValidationHandle:
    def __getattr__(self, name: str) -> NoReturn:
        raise _NoHandle(name)


def _decode_plugin_config(c: _Ctx, raw: object, where: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    at: dict[str, int] = {}
    for j, entry in enumerate(c.seq(raw, where, "{name, args}")):
        ew = f"{where}[{j}]"
        entry = c.mapping(entry, ew, "{name, args}")
        c.fields(entry, PLUGIN_CONFIG_FIELDS, ew, "a pluginConfig entry")
        name = c.string(entry.get("name"), f"{ew}.name", "a plugin name")
        if name in at:
            raise c.err(f"{ew}.name", f"duplicate pluginConfig for plugin {name!r} (also {where}[{at[name]}])",
                        "merge the two entries into one")
        at[name] = j
        if name not in c.registry:
            raise c.unknown_plugin(f"{ew}.name", name)
        args = dict(c.mapping(entry.get("args"), f"{ew}.args", f"{name}Args"))
        kind = args.pop("kind", None)
        api = args.pop("apiVersion", None)
        if kind is not None and kind != f"{name}Args":
            raise c.err(f"{ew}.args.kind", f"args for plugin {name} must be of kind {name}Args, got {kind!r}",
                        f"set kind: {name}Args or leave it out")
        if api is not None and api != API_VERSION:
            raise c.err(f"{ew}.args.apiVersion", f"unsupported value {api!r}", f"use {API_VERSION} or leave it out")
        _validate_args(c, name, args, f"{ew}.args")
        out[name] = args
    return out


def _validate_args(c: _Ctx, name: str, args: dict[str, Any], where: str) -> None:
    """Plugins validate their own args in their constructors; build one without a handle."""
    try:
        c.registry[name](args, _ValidationHandle())
    except _NoHandle:
        return  # needs the scheduler to finish; the framework validates when it builds the plugin
    except ConfigError as e:
        msg = str(e)
        raise c.err(where, msg if ";" not in msg else msg.split(";", 1)[0],
                    msg.split(";", 1)[1].strip() if ";" in msg else f"fix the args of {name}") from None
    except (ValueError, TypeError, KeyError) as e:
        raise c.err(where, f"invalid args for {name}: {e}", f"fix the args of {name}") from None
    except Exception as e:  # a plugin bug must still end in one line
        raise c.err(where, f"plugin {name} failed to start with these args ({type(e).__name__}: {e})",
                    f"check the args of {name}, or report the plugin bug") from None


def _common_queue_sort(c: _Ctx, profiles: list[Profile], raw_profiles: list[dict[str, Any]]) -> None:
    """validateCommonQueueSort: the queueSort set, plugin and args are the same in all profiles."""
    if len(profiles) < 2:
        return

    def raw_set(i: int) -> tuple[list[tuple[Any, Any]], list[Any]]:
        qs = (raw_profiles[i].get("plugins") or {}).get("queueSort") or {}
        return ([(e.get("name"), e.get("weight") or 0) for e in (qs.get("enabled") or [])],
                [e.get("name") for e in (qs.get("disabled") or [])])

    first = [r.name for r in profiles[0].plugins["queueSort"]]
    sort_name = first[0]
    for i in range(1, len(profiles)):
        cur = [r.name for r in profiles[i].plugins["queueSort"]]
        if raw_set(i) != raw_set(0) or cur != first:
            raise c.err(f"profiles[{i}].plugins.queueSort", f"must be the same for all profiles (profiles[0] "
                        f"sorts with {', '.join(first)}, this one with {', '.join(cur)})",
                        "configure queueSort identically in every profile")
        if sort_name in profiles[i].plugin_args and \
                profiles[i].plugin_args[sort_name] != profiles[0].plugin_args.get(sort_name):
            raise c.err(f"profiles[{i}].pluginConfig", f"args of the queueSort plugin {sort_name} differ from "
                        "profiles[0]", "queueSort must be the same for all profiles: use the same args")
