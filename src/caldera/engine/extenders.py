"""kube-scheduler's HTTP extenders (KubeSchedulerConfiguration `extenders`; pkg/scheduler/extender.go).

An extender is a webhook the scheduler calls at four points of a cycle, each only for a pod the
extender is interested in (it manages no resources, or one of the pod's containers or init
containers requests or limits one of its `managedResources`):

- filter (`filterVerb`), after the filter plugins and the adaptive sampling (findNodesThatPassExtenders):
  extenders run in order over the nodes that passed; each answers the nodes that still fit and,
  per node that does not, a message (`FailedNodes`, or `FailedAndUnresolvableNodes`, which wins
  and keeps preemption off the node). The messages become the nodes' statuses, so the
  FailedScheduling message counts them as it counts plugin reasons. An error (transport, non-200,
  a non-empty `Error`, a node name it was not given) fails the cycle with that error, unless the
  extender is `ignorable`: then it is skipped.
- prioritize (`prioritizeVerb`), when more than one node is feasible: every interested extender's
  `[{Host, Score}]` adds Score x weight x (MaxNodeScore / MaxExtenderPriority = 100 / 10) to the
  node's total (integer arithmetic, as int64 in Go). An extender that fails gives no scores; the
  cycle goes on (ignorable or not, as in kube).
- bind (`bindVerb`, at most one extender): the first extender that binds and is interested in the
  pod binds it instead of the bind plugins; its error fails the binding unless it is ignorable
  (then the next binder, and finally the bind plugins, are asked).

Ignorable extenders are called after the others (buildExtenders appends them at the end). Requests
are Go's JSON of extenderv1.ExtenderArgs (no JSON tags: "Pod", "Nodes" as a NodeList, or
"NodeNames" when `nodeCacheCapable`), with the manifests' pods and nodes as written (Pod.raw /
Node.raw). Answers are read as Go reads them: field names match case-insensitively.

Differences from kube-scheduler:
- the nodes an extender keeps stay in Caldera's node order (kube continues with the order the
  extender answered, which only matters for ties between equal scores, broken by Caldera's own
  seeded choice anyway); with `Nodes` answered, nodes are matched by name, and a name the
  extender was not given is an error, as kube reports for `NodeNames`;
- preempt (`preemptVerb`), when DefaultPreemption has found candidates (callExtenders): each
  interested extender receives {"Pod", "NodeNameToVictims": {node: {"Pods", "NumPDBViolations"}}}
  (or "NodeNameToMetaVictims" with pod UIDs when `nodeCacheCapable`) and answers
  {"NodeNameToMetaVictims"}; the candidates become what it answered (a node left without victims
  is an error unless the extender is ignorable, which drops it). The candidates keep Caldera's
  order (kube rebuilds them from a Go map, in random order, before picking the best); kube's newer
  placeholder candidates without victims (nodes that fit once only an extender frees them) are
  not modelled;
- `tlsConfig.serverName` is not used (the host of `urlPrefix` is verified);
- there is no per-node parallelism: extenders are called one after the other.
"""
from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..api.validation import go_quote
from ..api.webhook import WebhookError, dumps, json_field, post_json, verb_url
from ..config.types import ExtenderConfig
from ..framework.status import Status

DEFAULT_EXTENDER_TIMEOUT = 5.0      # seconds (DefaultExtenderTimeout)
MAX_EXTENDER_PRIORITY = 10          # extenderv1.MaxExtenderPriority
MAX_NODE_SCORE = 100                # framework.MaxNodeScore


class ExtenderError(Exception):
    """A non-ignorable extender failed: the cycle ends with this error."""


def _resource_names(containers: object) -> Iterable[str]:
    if not isinstance(containers, list):
        return
    for c in containers:
        res = c.get("resources") if isinstance(c, dict) else None
        if not isinstance(res, dict):
            continue
        for part in ("requests", "limits"):
            rl = res.get(part)
            if isinstance(rl, dict):
                yield from (str(k) for k in rl)


def pod_uses_any(raw: Mapping[str, Any], managed: set[str] | frozenset[str]) -> bool:
    """Whether a container or init container of the pod manifest requests or limits a resource
    in `managed` (hasManagedResources over Containers, then InitContainers)."""
    spec = raw.get("spec") or {}
    if not isinstance(spec, dict):
        return False
    return any(n in managed for key in ("containers", "initContainers") for n in _resource_names(spec.get(key)))


def _ssl_context(cfg: ExtenderConfig) -> ssl.SSLContext | None:
    """makeTransport: tlsConfig's files and data; enableHTTPS without a CA skips verification."""
    tls = cfg.tls
    if tls is None and not cfg.enable_https:
        return None
    has_ca = tls is not None and bool(tls.ca_file or tls.ca_data)
    insecure = (tls is not None and tls.insecure) or (cfg.enable_https and not has_ca)
    if tls is not None and not (insecure or has_ca or tls.cert_file or tls.cert_data):
        return None
    ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls is None:
        return ctx
    if tls.ca_file or tls.ca_data:
        ctx.load_verify_locations(cafile=tls.ca_file or None, cadata=tls.ca_data.decode() if tls.ca_data else None)
    if tls.cert_file or tls.cert_data:
        if tls.cert_file:
            ctx.load_cert_chain(tls.cert_file, tls.key_file or None)
        else:
            paths = []
            try:
                for data in (tls.cert_data, tls.key_data):
                    fd, p = tempfile.mkstemp(suffix=".pem")
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                    paths.append(p)
                ctx.load_cert_chain(paths[0], paths[1] if tls.key_data else None)
            finally:
                for p in paths:
                    os.unlink(p)
    return ctx


class HTTPExtender:
    """One configured extender (HTTPExtender)."""

    def __init__(self, cfg: ExtenderConfig):
        self.cfg = cfg
        self.url = cfg.url_prefix
        self.timeout = cfg.http_timeout or DEFAULT_EXTENDER_TIMEOUT
        self.managed = frozenset(name for name, _ in cfg.managed_resources)
        self.ignorable = cfg.ignorable
        self._ctx: ssl.SSLContext | None = None
        self._ctx_made = False

    @property
    def name(self) -> str:
        return self.url

    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.cfg.preempt_verb)

    def is_interested(self, pod) -> bool:
        if not self.managed:
            return True
        return pod_uses_any(pod.raw, self.managed)

    def send(self, verb: str, args: Any) -> Any:
        if not self._ctx_made:
            self._ctx = _ssl_context(self.cfg)
            self._ctx_made = True
        try:
            return post_json(verb_url(self.url, verb), verb, dumps(args), self.timeout, context=self._ctx)
        except WebhookError as e:
            raise ExtenderError(str(e)) from None

    def _args(self, pod, nodes: list) -> dict[str, Any]:
        if self.cfg.node_cache_capable:
            return {"Pod": pod.raw, "Nodes": None, "NodeNames": [n.name for n in nodes]}
        return {"Pod": pod.raw, "Nodes": {"metadata": {}, "items": [n.raw for n in nodes]}, "NodeNames": None}

    def filter(self, pod, nodes: list) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """(names of the nodes that pass, failed: name -> message, unresolvable: name -> message)."""
        if not self.cfg.filter_verb:
            return [n.name for n in nodes], {}, {}
        result = self.send(self.cfg.filter_verb, self._args(pod, nodes))
        err = json_field(result, "Error")
        if err:
            raise ExtenderError(str(err))
        given = {n.name for n in nodes}
        names: list[str] = []
        node_names = json_field(result, "NodeNames")
        node_list = json_field(result, "Nodes")
        if self.cfg.node_cache_capable and node_names is not None:
            names = [str(x) for x in node_names] if isinstance(node_names, list) else []
        elif isinstance(node_list, dict):
            items = json_field(node_list, "items") or []
            names = [str(json_field(json_field(it, "metadata"), "name") or "") for it in items]
        for n in names:
            if n not in given:
                raise ExtenderError(f"extender {go_quote(self.url)} claims a filtered node {go_quote(n)} which is "
                                    "not found in the input node list")
        return names, _failed_map(json_field(result, "FailedNodes")), \
            _failed_map(json_field(result, "FailedAndUnresolvableNodes"))

    def prioritize(self, pod, nodes: list) -> tuple[list[tuple[str, int]], int]:
        """([(host, score)], weight)."""
        if not self.cfg.prioritize_verb:
            return [(n.name, 0) for n in nodes], 0
        result = self.send(self.cfg.prioritize_verb, self._args(pod, nodes))
        out: list[tuple[str, int]] = []
        if isinstance(result, list):
            for hp in result:
                score = json_field(hp, "Score")
                out.append((str(json_field(hp, "Host") or ""), int(score) if isinstance(score, (int, float)) else 0))
        elif result is not None:
            raise ExtenderError("json: cannot unmarshal object into Go value of type v1.HostPriorityList")
        return out, self.cfg.weight

    def process_preemption(self, pod, victims: dict[str, tuple[list, int]], table) -> dict[str, tuple[list, int]]:
        """ProcessPreemption: node -> (victim pods, PDB violations) as the extender trims it.
        The answer's NodeNameToMetaVictims are resolved by pod UID among the node's pods."""
        if self.cfg.node_cache_capable:
            meta = {n: {"Pods": [{"UID": p.uid} for p in pods], "NumPDBViolations": k}
                    for n, (pods, k) in victims.items()}
            args = {"Pod": pod.raw, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
        else:
            full = {n: {"Pods": [p.raw for p in pods], "NumPDBViolations": k} for n, (pods, k) in victims.items()}
            args = {"Pod": pod.raw, "NodeNameToVictims": full, "NodeNameToMetaVictims": None}
        result = self.send(self.cfg.preempt_verb, args)
        got = json_field(result, "NodeNameToMetaVictims")
        out: dict[str, tuple[list, int]] = {}
        if not isinstance(got, dict):
            return out
        for name, mv in got.items():
            i = table.index.get(name)
            if i is None:
                raise ExtenderError(f"nodeinfo not found for node name {go_quote(str(name))}")
            if mv is None:
                out[str(name)] = ([], 0)
                continue
            on_node = {p.uid: p for p in table.pods[i].values()}
            pods = []
            for mp in json_field(mv, "Pods") or []:
                uid = str(json_field(mp, "UID") or "")
                if uid not in on_node:
                    raise ExtenderError(f"extender: {self.url} claims to preempt pod (UID: &{{{uid}}}) on node: "
                                        f"{name}, but the pod is not found on that node")
                pods.append(on_node[uid])
            k = json_field(mv, "NumPDBViolations")
            out[str(name)] = (pods, int(k) if isinstance(k, int) and not isinstance(k, bool) else 0)
        return out

    def bind(self, pod, node: str) -> None:
        result = self.send(self.cfg.bind_verb, {"PodName": pod.name, "PodNamespace": pod.namespace,
                                                "PodUID": pod.uid, "Node": node})
        err = json_field(result, "Error")
        if err:
            raise ExtenderError(str(err))


def _failed_map(v: object) -> dict[str, str]:
    if not isinstance(v, dict):
        return {}
    return {str(k): str(m) for k, m in v.items()}


def build_extenders(cfgs: list[ExtenderConfig]) -> list[HTTPExtender]:
    """buildExtenders: in configuration order, the ignorable ones moved to the end."""
    exts = [HTTPExtender(c) for c in cfgs]
    return [e for e in exts if not e.ignorable] + [e for e in exts if e.ignorable]


def find_nodes_that_pass_extenders(extenders: list[HTTPExtender], pod, table, alive: np.ndarray,
                                   statuses: dict[int, Status]) -> np.ndarray:
    """findNodesThatPassExtenders over node rows `alive`: the rows that pass every interested
    extender; the failed rows' statuses are set in `statuses`. Raises ExtenderError."""
    nodes = table.nodes
    for ext in extenders:
        if alive.size == 0:
            break
        if not ext.is_interested(pod):
            continue
        try:
            names, failed, unresolvable = ext.filter(pod, [nodes[i] for i in alive.tolist()])
        except ExtenderError:
            if ext.ignorable:
                continue
            raise
        index = table.index
        for name, msg in unresolvable.items():
            i = index.get(name)
            if i is not None:
                statuses[i] = Status.unresolvable(msg)
        for name, msg in failed.items():
            i = index.get(name)
            if i is not None and name not in unresolvable:
                statuses[i] = Status.unschedulable(msg)
        keep = {index[n] for n in names}
        alive = alive[np.fromiter((i in keep for i in alive.tolist()), dtype=bool, count=alive.size)]
    return alive


def extender_scores(extenders: list[HTTPExtender], pod, table, alive: np.ndarray,
                    detail: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
    """prioritizeNodes' extender part: per row of `alive`, the sum over interested extenders of
    score x weight x (MaxNodeScore / MaxExtenderPriority); None when no extender is interested.
    With `detail`, each extender's part is stored under its name (urlPrefix)."""
    interested = [e for e in extenders if e.is_interested(pod)]
    if not interested:
        return None
    nodes = table.nodes
    given = [nodes[i] for i in alive.tolist()]
    pos = {n.name: j for j, n in enumerate(given)}
    total = np.zeros(alive.size, dtype=np.int64)
    for ext in interested:
        try:
            prioritized, weight = ext.prioritize(pod, given)
        except ExtenderError:
            continue            # no score from this extender; the others and the plugins decide
        part = np.zeros(alive.size, dtype=np.int64)
        for host, score in prioritized:
            j = pos.get(host)
            if j is not None:
                part[j] += score * weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        total += part
        if detail is not None:
            prev = detail.get(ext.name)
            detail[ext.name] = part if prev is None else prev + part
    return total


def call_extenders_for_preemption(extenders: list[HTTPExtender], pod, table,
                                  victims: dict[str, tuple[list, int]]) -> dict[str, tuple[list, int]]:
    """Evaluator.callExtenders: each interested extender that supports preemption trims the
    candidates (node -> (victims, PDB violations)), in turn. Raises ExtenderError (kube's error
    status) for a non-ignorable extender's error or a node it leaves without victims."""
    if not victims:
        return victims
    for ext in extenders:
        if not ext.supports_preemption() or not ext.is_interested(pod):
            continue
        try:
            got = ext.process_preemption(pod, victims, table)
        except ExtenderError:
            if ext.ignorable:
                continue
            raise
        for name in list(got):
            if not got[name][0]:
                if ext.ignorable:
                    del got[name]
                    continue
                raise ExtenderError(f"expected at least one victim pod on node {go_quote(name)}")
        victims = got
        if not victims:
            break
    return victims


def extenders_binding(extenders: list[HTTPExtender], pod, node: str) -> Status | None:
    """extendersBinding: the status of the extender that bound the pod (an error if it failed),
    or None when no extender binds it (the bind plugins do)."""
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        try:
            ext.bind(pod, node)
        except ExtenderError as e:
            if ext.ignorable:
                continue
            return Status.error(str(e))
        return Status()
    return None
