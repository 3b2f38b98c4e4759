"""Hypothesis strategies for `caldera schedule`'s inputs: manifests (Nodes, Pods, PriorityClasses,
PDBs, Volcano PodGroups / Queues / Jobs), KubeSchedulerConfigurations and volcano-scheduler.confs.

Each starts from mostly valid objects, then `mutated` breaks some of them (wrong types, missing
or unknown fields, odd quantities, unicode, nesting, nulls, lists for maps, unknown kinds,
duplicates), and `serialised` writes them as YAML or JSON, sometimes as malformed text.
"""
from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import strategies as st

# ---- leaves ---------------------------------------------------------------------------------------
# The base strategies build objects an API server would accept (so that most examples reach the
# scheduler itself); `mutated` then breaks some of them.
NODE_NAMES = ["n0", "n1", "n2", "gpu-0", "node-x"]
NAMESPACES = ["default", "ns", "team-a", "kube-system"]
POD_NAMES = ["p0", "p1", "p2", "web", "job-0", "job-1"]
LABEL_KEYS = ["zone", "disktype", "app", "topology.kubernetes.io/zone", "kubernetes.io/hostname", "tier"]
LABEL_VALUES = ["a", "b", "ssd", "z1", "z2", "web", ""]
BASIC_RESOURCES = ["cpu", "memory", "ephemeral-storage"]
EXTENDED_RESOURCES = ["nvidia.com/gpu", "example.com/foo"]
RESOURCES = [*BASIC_RESOURCES, "pods", *EXTENDED_RESOURCES, "hugepages-2Mi"]
SCHEDULERS = ["default-scheduler", "volcano", "other"]
PRIORITY_CLASSES = ["high", "low"]
PODGROUPS = ["pg0", "pg1", "pg2"]
QUEUES = ["default", "qa", "qb"]
TIMESTAMPS = ["2024-01-01T00:00:00Z", "2024-01-01T00:00:05Z", "2024-01-01T00:01:00+02:00"]

ODD_QUANTITIES = ["1.5.3Gi", "-1", "1e309", "1e-309", "1E3", "0.0000001m", "Infinity", "NaN", "+1", "1Ki1",
                  "\u0663", "\uff11", "9" * 40, "1Pi", "0x10", ".5", "5.", "1e3Ki", "-0", "1 Gi", "", "1m", "1n",
                  "18446744073709551616", "1Ei", "8Ei", "0.1", "1.5", "m", "Gi", "1u", "1e18", "9223372036854775807"]
GOOD_QUANTITIES = ["0", "1", "2", "4", "100m", "500m", "1500m", "1Gi", "2Gi", "512Mi", "4G", "8", "16"]


def odd_quantities() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(ODD_QUANTITIES), st.floats(allow_nan=True, allow_infinity=True),
                     st.integers(-(2 ** 70), 2 ** 70))


def quantities() -> st.SearchStrategy[Any]:
    """Mostly valid (an object with many quantities should still often be valid as a whole)."""
    good = st.one_of(st.sampled_from(GOOD_QUANTITIES), st.integers(0, 64))
    return st.one_of(good, good, good, good, good, good, odd_quantities())


def good_quantities() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(GOOD_QUANTITIES), st.integers(0, 64))


def labels() -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=3)


def _requirement(keys: list[str], ops: list[str], values: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """{key, operator, values} with the values its operator requires."""
    def build(op: str) -> st.SearchStrategy[dict[str, Any]]:
        if op in ("Exists", "DoesNotExist"):
            vals: st.SearchStrategy[list[str]] = st.just([])
        elif op in ("Gt", "Lt"):
            vals = st.sampled_from(["0", "1", "10"]).map(lambda v: [v])
        else:
            vals = st.lists(st.sampled_from(values), min_size=1, max_size=3)
        return st.fixed_dictionaries({"key": st.sampled_from(keys), "operator": st.just(op), "values": vals}).map(
            lambda d: {k: v for k, v in d.items() if k != "values" or v})
    return st.sampled_from(ops).flatmap(build)


def label_selector() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "matchLabels": labels(),
        "matchExpressions": st.lists(_requirement(LABEL_KEYS, ["In", "NotIn", "Exists", "DoesNotExist"],
                                                  LABEL_VALUES), max_size=2)})


def node_selector_term() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"matchExpressions": st.lists(
        _requirement(LABEL_KEYS, ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"], LABEL_VALUES),
        min_size=1, max_size=2)},
        optional={"matchFields": st.lists(_requirement(["metadata.name"], ["In", "NotIn"], NODE_NAMES),
                                          max_size=1)})


def pod_affinity_term() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"topologyKey": st.sampled_from(LABEL_KEYS)},
        optional={"labelSelector": label_selector(), "namespaces": st.lists(st.sampled_from(NAMESPACES), max_size=2),
                  "namespaceSelector": label_selector()})


def weighted(term: st.SearchStrategy[dict[str, Any]], key: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"weight": st.integers(1, 100), key: term})


def affinity() -> st.SearchStrategy[dict[str, Any]]:
    node = st.fixed_dictionaries({}, optional={
        "requiredDuringSchedulingIgnoredDuringExecution":
            st.fixed_dictionaries({"nodeSelectorTerms": st.lists(node_selector_term(), min_size=1, max_size=2)}),
        "preferredDuringSchedulingIgnoredDuringExecution":
            st.lists(weighted(node_selector_term(), "preference"), max_size=2)})
    pod = st.fixed_dictionaries({}, optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(pod_affinity_term(), max_size=2),
        "preferredDuringSchedulingIgnoredDuringExecution":
            st.lists(weighted(pod_affinity_term(), "podAffinityTerm"), max_size=2)})
    return st.fixed_dictionaries({}, optional={"nodeAffinity": node, "podAffinity": pod, "podAntiAffinity": pod})


def toleration() -> st.SearchStrategy[dict[str, Any]]:
    effect = st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", ""])
    exists = st.fixed_dictionaries({"operator": st.just("Exists")},
                                   optional={"key": st.sampled_from(["dedicated", "zone"]), "effect": effect})
    equal = st.fixed_dictionaries({"key": st.sampled_from(["dedicated", "zone"])},
                                  optional={"operator": st.just("Equal"), "value": st.sampled_from(["gpu", "a", ""]),
                                            "effect": effect})
    timed = st.fixed_dictionaries({"key": st.just("node.kubernetes.io/unreachable"), "operator": st.just("Exists"),
                                   "effect": st.just("NoExecute"), "tolerationSeconds": st.integers(0, 600)})
    return st.one_of(exists, equal, timed)


def taint() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"key": st.sampled_from(["dedicated", "zone", "node.kubernetes.io/unreachable"]),
                                  "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])},
                                 optional={"value": st.sampled_from(["gpu", "a"])})


def spread_constraint() -> st.SearchStrategy[dict[str, Any]]:
    def build(when: str) -> st.SearchStrategy[dict[str, Any]]:
        opt: dict[str, st.SearchStrategy[Any]] = {
            "labelSelector": label_selector(),
            "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore"]),
            "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore"])}
        if when == "DoNotSchedule":
            opt["minDomains"] = st.integers(1, 4)
        return st.fixed_dictionaries({"maxSkew": st.integers(1, 3), "topologyKey": st.sampled_from(LABEL_KEYS),
                                      "whenUnsatisfiable": st.just(when)}, optional=opt)
    return st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]).flatmap(build)


def resources() -> st.SearchStrategy[dict[str, Any]]:
    """requests/limits: basic resources freely, extended ones with limits == requests."""
    @st.composite
    def build(draw):
        req = draw(st.dictionaries(st.sampled_from(BASIC_RESOURCES), quantities(), max_size=3))
        lim = draw(st.dictionaries(st.sampled_from(BASIC_RESOURCES), quantities(), max_size=2))
        ext = draw(st.dictionaries(st.sampled_from(EXTENDED_RESOURCES), st.integers(0, 4).map(str), max_size=1))
        req.update(ext)
        lim.update(ext)
        out = {}
        if req:
            out["requests"] = req
        if lim:
            out["limits"] = lim
        return out
    return build()


def container(i: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    port = st.fixed_dictionaries({"containerPort": st.integers(1, 65535)},
                                 optional={"hostPort": st.sampled_from([80, 8080, 9000]),
                                           "protocol": st.sampled_from(["TCP", "UDP", "SCTP"]),
                                           "hostIP": st.sampled_from(["0.0.0.0", "127.0.0.1"])})
    return st.fixed_dictionaries(
        {"name": st.just(f"c{i}"), "image": st.sampled_from(["nginx", "nginx:1.25", "busybox", "gcr.io/x/y:z"])},
        optional={"resources": resources(),
                  "ports": st.lists(port, max_size=2, unique_by=lambda p: p["containerPort"])})


def containers() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.integers(1, 3).flatmap(lambda n: st.tuples(*[container(i) for i in range(n)]).map(list))


def metadata(names: list[str], namespaced: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    opt: dict[str, st.SearchStrategy[Any]] = {
        "labels": labels(),
        "annotations": st.dictionaries(st.sampled_from(["scheduling.k8s.io/group-name", "note",
                                                        "volcano.sh/preemptable"]),
                                       st.sampled_from(PODGROUPS + ["true", "false", ""]), max_size=2),
        "creationTimestamp": st.sampled_from(TIMESTAMPS),
        "uid": st.sampled_from(["u1", "u2", "u3"]),
    }
    if namespaced:
        opt["namespace"] = st.sampled_from(NAMESPACES)
    return st.fixed_dictionaries({"name": st.sampled_from(names)}, optional=opt)


def pod_spec(with_node: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    opt: dict[str, st.SearchStrategy[Any]] = {
        "initContainers": st.lists(container(9), max_size=1),
        "nodeSelector": labels(),
        "affinity": affinity(),
        "tolerations": st.lists(toleration(), max_size=3),
        "topologySpreadConstraints": st.lists(spread_constraint(), max_size=2,
                                              unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"])),
        "priority": st.integers(-100, 2000),
        "priorityClassName": st.sampled_from([*PRIORITY_CLASSES, "system-node-critical", "missing"]),
        "preemptionPolicy": st.sampled_from(["PreemptLowerPriority", "Never"]),
        "schedulerName": st.sampled_from(SCHEDULERS),
        "schedulingGates": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["g1", "g2"])}), max_size=2,
                                    unique_by=lambda g: g["name"]),
        "overhead": st.dictionaries(st.sampled_from(["cpu", "memory"]), good_quantities(), max_size=2),
    }
    if with_node:
        opt["nodeName"] = st.sampled_from(NODE_NAMES)
    return st.fixed_dictionaries({"containers": containers()}, optional=opt)


def pod() -> st.SearchStrategy[dict[str, Any]]:
    status = st.fixed_dictionaries({}, optional={"phase": st.sampled_from(["Pending", "Running", "Succeeded",
                                                                           "Failed"]),
                                                 "nominatedNodeName": st.sampled_from(NODE_NAMES)})
    return st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Pod"),
                                  "metadata": metadata(POD_NAMES), "spec": pod_spec()},
                                 optional={"status": status})


def node() -> st.SearchStrategy[dict[str, Any]]:
    images = st.lists(st.fixed_dictionaries({"names": st.lists(st.sampled_from(["nginx", "nginx:1.25", "busybox"]),
                                                               min_size=1, max_size=2),
                                             "sizeBytes": st.integers(0, 10 ** 10)}), max_size=2)
    alloc = st.fixed_dictionaries({"cpu": quantities(), "memory": quantities(), "pods": st.integers(0, 20)},
                                  optional={"nvidia.com/gpu": st.integers(0, 8), "ephemeral-storage": quantities()})
    spec = st.fixed_dictionaries({}, optional={"unschedulable": st.booleans(), "taints": st.lists(taint(), max_size=2)})
    status = st.fixed_dictionaries({"allocatable": alloc}, optional={"images": images})
    return st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Node"),
                                  "metadata": metadata(NODE_NAMES, namespaced=False), "status": status},
                                 optional={"spec": spec})


def priority_class() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"apiVersion": st.just("scheduling.k8s.io/v1"), "kind": st.just("PriorityClass"),
         "metadata": metadata(PRIORITY_CLASSES, namespaced=False), "value": st.integers(-1000, 10 ** 9)},
        optional={"globalDefault": st.booleans(),
                  "preemptionPolicy": st.sampled_from(["Never", "PreemptLowerPriority"])})


def pdb() -> st.SearchStrategy[dict[str, Any]]:
    int_or_pct = st.one_of(st.integers(0, 5), st.sampled_from(["50%", "0%", "100%"]))
    spec = st.fixed_dictionaries({"selector": label_selector()}).flatmap(
        lambda d: st.one_of(st.just(d), int_or_pct.map(lambda v: {**d, "minAvailable": v}),
                            int_or_pct.map(lambda v: {**d, "maxUnavailable": v})))
    return st.fixed_dictionaries(
        {"apiVersion": st.sampled_from(["policy/v1", "policy/v1", "policy/v1beta1"]),
         "kind": st.just("PodDisruptionBudget"), "metadata": metadata(["pdb0", "pdb1"]), "spec": spec},
        optional={"status": st.fixed_dictionaries({"disruptionsAllowed": st.integers(0, 5)})})


def podgroup() -> st.SearchStrategy[dict[str, Any]]:
    spec = st.fixed_dictionaries({}, optional={
        "minMember": st.integers(0, 8), "queue": st.sampled_from(QUEUES),
        "minResources": st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), good_quantities(),
                                        max_size=3),
        "priorityClassName": st.sampled_from(PRIORITY_CLASSES),
        "minTaskMember": st.dictionaries(st.sampled_from(["ps", "worker"]), st.integers(0, 4), max_size=2)})
    status = st.fixed_dictionaries({}, optional={"phase": st.sampled_from(["Pending", "Inqueue", "Running",
                                                                           "Unknown", "Completed"])})
    return st.fixed_dictionaries({"apiVersion": st.just("scheduling.volcano.sh/v1beta1"), "kind": st.just("PodGroup"),
                                  "metadata": metadata(PODGROUPS), "spec": spec}, optional={"status": status})


def queue() -> st.SearchStrategy[dict[str, Any]]:
    res = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), good_quantities(), max_size=3)
    spec = st.fixed_dictionaries({}, optional={
        "weight": st.integers(1, 10), "capability": res, "deserved": res,
        "guarantee": st.fixed_dictionaries({"resource": res}), "reclaimable": st.booleans()})
    status = st.fixed_dictionaries({}, optional={"state": st.sampled_from(["Open", "Closed", "Closing"])})
    return st.fixed_dictionaries({"apiVersion": st.just("scheduling.volcano.sh/v1beta1"), "kind": st.just("Queue"),
                                  "metadata": metadata(QUEUES, namespaced=False), "spec": spec},
                                 optional={"status": status})


MAX_REPLICAS = 50   # huge replica counts are a known problem being fixed elsewhere


def vcjob() -> st.SearchStrategy[dict[str, Any]]:
    def task(name: str) -> st.SearchStrategy[dict[str, Any]]:
        return st.integers(0, 6).flatmap(lambda n: st.fixed_dictionaries(
            {"name": st.just(name), "replicas": st.just(n),
             "template": st.fixed_dictionaries({"spec": pod_spec(with_node=False)},
                                               optional={"metadata": st.fixed_dictionaries({}, optional={
                                                   "labels": labels()})})},
            optional={"minAvailable": st.integers(0, n)}))
    tasks = st.lists(st.sampled_from(["ps", "worker", "eval"]), min_size=1, max_size=3, unique=True).flatmap(
        lambda names: st.tuples(*[task(n) for n in names]).map(list))
    spec = st.fixed_dictionaries({"tasks": tasks}, optional={
        "minAvailable": st.integers(0, 6), "queue": st.sampled_from(QUEUES),
        "schedulerName": st.sampled_from(["volcano", "volcano", "default-scheduler"]),
        "priorityClassName": st.sampled_from(PRIORITY_CLASSES)})
    return st.fixed_dictionaries({"apiVersion": st.just("batch.volcano.sh/v1alpha1"), "kind": st.just("Job"),
                                  "metadata": metadata(["job-a", "job-b"]), "spec": spec})


def unknown_object() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"apiVersion": st.sampled_from(["v1", "apps/v1", "x.io/v9", ""]),
                                  "kind": st.sampled_from(["Service", "Deployment", "ConfigMap", "Pdo", "", "List"]),
                                  "metadata": metadata(["thing"])})


def objects() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(node(), node(), pod(), pod(), pod(), priority_class(), pdb(), podgroup(), queue(), vcjob(),
                     unknown_object())


# ---- mutations ------------------------------------------------------------------------------------
def nested(depth: int) -> Any:
    v: Any = "leaf"
    for i in range(depth):
        v = {"k": v} if i % 2 else [v]
    return v


def weird_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),                                   # unicode of every kind
        odd_quantities(),
        st.sampled_from(["", "\u0000", "ß", "名前", "\u202e", "a" * 300, "ns/name", "-", "*", "yes", "null"]),
        st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=4)), max_size=3),
        st.dictionaries(st.text(max_size=4), st.one_of(st.none(), st.integers(), st.text(max_size=4)), max_size=3),
        st.integers(1, 40).map(nested),
    )


def _paths(v: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, (*prefix, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, (*prefix, i))
    return out


def _set(root: Any, path: tuple, value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    parent = root
    for p in path[:-1]:
        parent = parent[p]
    if delete:
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return root


@st.composite
def mutated(draw, base: st.SearchStrategy[Any], max_mutations: int = 3) -> Any:
    """`base`'s value with up to `max_mutations` random breakages anywhere in it (none half of
    the time)."""
    v = draw(base)
    if draw(st.booleans()):
        return v
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = _paths(v)[1:] or [()]   # not the value itself (garbage text covers that)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "delete", "add", "listify", "wrap", "copy", "dup"]))
        if op == "dup" and isinstance(v, list) and v:       # a second object of the same kind and name
            v.append(json.loads(json.dumps(draw(st.sampled_from(v)))))
        elif op == "replace":
            v = _set(v, path, draw(weird_values()))
        elif op == "delete" and path:
            v = _set(v, path, None, delete=True)
        elif op == "add":
            target = v
            for p in path:
                target = target[p]
            if isinstance(target, dict):
                target[draw(st.sampled_from(["bogus", "kind", "metadata", "spec", "name", "value", "items"]))] = \
                    draw(weird_values())
            elif isinstance(target, list):
                target.append(draw(weird_values()))
        elif op == "listify":                               # a list where a map (or scalar) is expected
            target = v
            for p in path:
                target = target[p]
            v = _set(v, path, [target])
        elif op == "wrap":                                  # a map where a scalar or list is expected
            target = v
            for p in path:
                target = target[p]
            v = _set(v, path, {"value": target})
        elif op == "copy" and len(path) >= 1:               # a sibling's value (keeps types plausible)
            sibs = _paths(v)
            src = draw(st.sampled_from(sibs))
            target = v
            for p in src:
                target = target[p]
            v = _set(v, path, json.loads(json.dumps(target)))
    return v


# ---- serialisation --------------------------------------------------------------------------------
def _yaml(docs: list[Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)


@st.composite
def serialised(draw, docs_strategy: st.SearchStrategy[list[Any]]) -> tuple[str, str]:
    """(file suffix, text) for a list of documents: multi-document YAML, a JSON List or array, a
    single JSON object, and sometimes text broken after the fact."""
    docs = draw(docs_strategy)
    if not isinstance(docs, list):      # (a mutation replaced the whole, empty, list)
        docs = [docs]
    form = draw(st.sampled_from(["yaml", "yaml", "json-list", "json-array", "json-one", "yaml-list"]))
    if form == "yaml":
        suffix, text = draw(st.sampled_from([".yaml", ".yml"])), _yaml(docs)
    elif form == "yaml-list":
        suffix, text = ".yaml", _yaml([{"apiVersion": "v1", "kind": "List", "items": docs}])
    elif form == "json-list":
        suffix, text = ".json", json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    elif form == "json-array":
        suffix, text = ".json", json.dumps(docs)
    else:
        suffix, text = ".json", json.dumps(docs[0] if docs else {})
    return suffix, draw(broken_text(text))


@st.composite
def broken_text(draw, text: str) -> str:
    """The text as is (mostly), or truncated, with bytes spliced in, duplicated keys, or tabs."""
    how = draw(st.sampled_from(["as-is"] * 6 + ["truncate", "splice", "dupkey", "tabs", "garbage"]))
    if how == "truncate" and text:
        return text[:draw(st.integers(0, len(text) - 1))]
    if how == "splice":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from(["{", "]", ":", "\t", "---\n", "&a *a", "!!python/object:os.system",
                                                 "\u0000", "\ufeff", "? ", "'", "\"", "%YAML 9.9\n", "<<: *x\n"])) \
            + text[at:]
    if how == "dupkey":
        return text.replace("kind: ", "kind: Pod\nkind: ", 1)
    if how == "tabs":
        return text.replace("  ", "\t", 3)
    if how == "garbage":
        return draw(st.text(max_size=60))
    return text


def manifests(max_docs: int = 8) -> st.SearchStrategy[tuple[str, str]]:
    return serialised(mutated(st.lists(objects(), min_size=0, max_size=max_docs)))


# ---- a small valid cluster, for fuzzing the configs -----------------------------------------------
def small_cluster() -> str:
    docs: list[dict[str, Any]] = []
    for i, zone in enumerate(["z1", "z1", "z2"]):
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": f"n{i}", "labels": {"zone": zone, "kubernetes.io/hostname": f"n{i}"}},
                     "spec": ({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
                              if i == 2 else {}),
                     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10", "nvidia.com/gpu": "2"},
                                "images": [{"names": ["nginx"], "sizeBytes": 500_000_000}]}})
    docs.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                 "value": 1000})
    docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "running", "namespace": "ns",
                                                                 "labels": {"app": "web"}},
                 "spec": {"nodeName": "n0", "priority": 0,
                          "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "3"}}}]}})
    docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "qa"},
                 "spec": {"weight": 2}})
    docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "pg0", "namespace": "ns"}, "spec": {"minMember": 2, "queue": "qa"}})
    for i in range(4):
        docs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"p{i}", "namespace": "ns", "labels": {"app": "web"},
                                  "annotations": {"scheduling.k8s.io/group-name": "pg0"} if i < 2 else {}},
                     "spec": {"schedulerName": "volcano" if i % 2 else "default-scheduler",
                              "priorityClassName": "high" if i == 3 else None,
                              "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                                  {"weight": 10, "podAffinityTerm": {
                                      "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}}]}},
                              "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                             "whenUnsatisfiable": "ScheduleAnyway",
                                                             "labelSelector": {"matchLabels": {"app": "web"}}}],
                              "containers": [{"name": "c", "image": "nginx",
                                              "resources": {"requests": {"cpu": "1", "memory": "1Gi",
                                                                         "nvidia.com/gpu": str(i % 2)},
                                                            "limits": {"nvidia.com/gpu": str(i % 2)}}}]}})
    for d in docs:
        if d["kind"] == "Pod" and d["spec"].get("priorityClassName") is None:
            d["spec"].pop("priorityClassName", None)
    return _yaml(docs)


# ---- KubeSchedulerConfiguration -------------------------------------------------------------------
KUBE_PLUGINS = ["DefaultBinder", "DefaultPreemption", "ImageLocality", "InterPodAffinity", "NodeAffinity", "NodeName",
                "NodePorts", "NodeResourcesBalancedAllocation", "NodeResourcesFit", "NodeUnschedulable",
                "NodeVolumeLimits", "PodTopologySpread", "PrioritySort", "SchedulingGates", "TaintToleration",
                "VolumeBinding", "VolumeRestrictions", "VolumeZone"]
EXTENSION_POINTS = ["multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
                    "reserve", "permit", "preBind", "bind", "postBind"]
ARGS_API = "kubescheduler.config.k8s.io/v1"


SCORE_PLUGINS = ["ImageLocality", "InterPodAffinity", "NodeAffinity", "NodeResourcesBalancedAllocation",
                 "NodeResourcesFit", "PodTopologySpread", "TaintToleration"]
FILTER_PLUGINS = ["InterPodAffinity", "NodeAffinity", "NodeName", "NodePorts", "NodeResourcesFit",
                  "NodeUnschedulable", "PodTopologySpread", "TaintToleration", "VolumeBinding"]


def plugin_set(point: str) -> st.SearchStrategy[dict[str, Any]]:
    names = {"score": SCORE_PLUGINS, "multiPoint": SCORE_PLUGINS, "filter": FILTER_PLUGINS,
             "preFilter": FILTER_PLUGINS, "postFilter": ["DefaultPreemption"], "queueSort": ["PrioritySort"],
             "bind": ["DefaultBinder"], "preEnqueue": ["SchedulingGates"]}[point]
    weight = {"weight": st.integers(1, 100)} if point in ("score", "multiPoint") else {}
    enabled = st.fixed_dictionaries({"name": st.sampled_from(names)}, optional=weight)
    disabled = st.fixed_dictionaries({"name": st.sampled_from([*names, "*"])})
    return st.fixed_dictionaries({}, optional={
        "enabled": st.lists(enabled, max_size=3, unique_by=lambda p: p["name"]),
        "disabled": st.lists(disabled, max_size=2, unique_by=lambda p: p["name"])})


def plugins_config() -> st.SearchStrategy[dict[str, Any]]:
    points = ["multiPoint", "score", "filter", "preFilter", "postFilter", "queueSort", "bind", "preEnqueue"]
    return st.lists(st.sampled_from(points), max_size=3, unique=True).flatmap(
        lambda ps: st.fixed_dictionaries({p: plugin_set(p) for p in ps}))


def resource_weights() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(st.fixed_dictionaries({"name": st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]),
                                           "weight": st.integers(1, 100)}),
                    min_size=1, max_size=3, unique_by=lambda r: r["name"])


def plugin_args() -> st.SearchStrategy[dict[str, Any]]:
    def args(kind: str, body: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries({"name": st.just(kind[:-4])},
                                     optional={"args": body.map(lambda b: {"apiVersion": ARGS_API, "kind": kind, **b})})
    shape = st.lists(st.fixed_dictionaries({"utilization": st.integers(0, 100), "score": st.integers(0, 10)}),
                     min_size=1, max_size=3, unique_by=lambda p: p["utilization"]).map(
        lambda pts: sorted(pts, key=lambda p: p["utilization"]))
    strategy = st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["LeastAllocated", "MostAllocated"])},
                              optional={"resources": resource_weights()}),
        st.fixed_dictionaries({"type": st.just("RequestedToCapacityRatio"),
                               "requestedToCapacityRatio": st.fixed_dictionaries({"shape": shape})},
                              optional={"resources": resource_weights()}))
    fit = st.fixed_dictionaries({}, optional={
        "scoringStrategy": strategy,
        "ignoredResources": st.lists(st.sampled_from(["example.com/foo", "nvidia.com/gpu"]), max_size=2, unique=True),
        "ignoredResourceGroups": st.lists(st.sampled_from(["example.com"]), max_size=1)})
    spread = st.one_of(st.fixed_dictionaries({"defaultingType": st.just("System")}),
                       st.fixed_dictionaries({"defaultingType": st.just("List"), "defaultConstraints": st.lists(
                           spread_constraint().map(lambda c: {k: v for k, v in c.items() if k == "maxSkew" or
                                                              k in ("topologyKey", "whenUnsatisfiable")}),
                           max_size=2, unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"]))}))
    return st.one_of(
        args("NodeResourcesFitArgs", fit),
        args("NodeResourcesBalancedAllocationArgs",
             st.fixed_dictionaries({}, optional={"resources": resource_weights()})),
        args("PodTopologySpreadArgs", spread),
        args("InterPodAffinityArgs", st.fixed_dictionaries({}, optional={
            "hardPodAffinityWeight": st.integers(0, 100), "ignorePreferredTermsOfExistingPods": st.booleans()})),
        args("NodeAffinityArgs", st.fixed_dictionaries({}, optional={"addedAffinity": affinity().map(
            lambda a: a.get("nodeAffinity", {}))})),
        args("DefaultPreemptionArgs", st.fixed_dictionaries({}, optional={
            "minCandidateNodesPercentage": st.integers(0, 100), "minCandidateNodesAbsolute": st.integers(0, 200)})),
    )


def profile(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"schedulerName": st.just(name)},
        optional={"percentageOfNodesToScore": st.integers(0, 100),
                  "plugins": plugins_config(),
                  "pluginConfig": st.lists(plugin_args(), max_size=3, unique_by=lambda a: a["name"])})


def kube_config() -> st.SearchStrategy[dict[str, Any]]:
    profiles = st.lists(st.sampled_from(["default-scheduler", "volcano", "other"]), min_size=1, max_size=2,
                        unique=True).flatmap(lambda names: st.tuples(*[profile(n) for n in names]).map(list))
    return st.fixed_dictionaries(
        {"apiVersion": st.just(ARGS_API), "kind": st.just("KubeSchedulerConfiguration"), "profiles": profiles},
        optional={"percentageOfNodesToScore": st.integers(0, 100), "parallelism": st.integers(1, 32),
                  "leaderElection": st.fixed_dictionaries({"leaderElect": st.booleans()})})


# ---- volcano-scheduler.conf -----------------------------------------------------------------------
VOLCANO_ACTIONS = ["enqueue", "allocate", "backfill", "preempt", "reclaim"]
VOLCANO_PLUGINS = ["priority", "gang", "conformance", "drf", "proportion", "capacity", "overcommit", "binpack",
                   "nodeorder", "predicates"]
VOLCANO_FLAGS = ["enableJobOrder", "enableHierarchy", "enableJobReady", "enableJobPipelined", "enableTaskOrder",
                 "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enablePredicate",
                 "enableBestNode", "enableNodeOrder", "enableJobEnqueued", "enabledVictim", "enableJobStarving",
                 "enabledOverused", "enabledAllocatable"]
VOLCANO_ARGS = {
    "binpack": ["binpack.weight", "binpack.cpu", "binpack.memory", "binpack.resources",
                "binpack.resources.nvidia.com/gpu"],
    "nodeorder": ["leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
                  "podaffinity.weight", "tainttoleration.weight", "podtopologyspread.weight", "imagelocality.weight"],
    "overcommit": ["overcommit-factor"],
    "predicates": ["predicate.NodeAffinityEnable", "predicate.NodePortsEnable", "predicate.TaintTolerationEnable",
                   "predicate.PodAffinityEnable", "predicate.PodTopologySpreadEnable", "predicate.CacheEnable"],
}


def volcano_plugin() -> st.SearchStrategy[dict[str, Any]]:
    def build(name: str) -> st.SearchStrategy[dict[str, Any]]:
        arg_value = st.one_of(st.integers(-1, 10), st.sampled_from(["1", "2.5", "true", "false", "nvidia.com/gpu",
                                                                     "x", ""]), st.floats(-1, 10), st.booleans(),
                              st.sampled_from([1e308, -1e308, "1e309", "-1e309", "NaN", "inf", 2 ** 63, -(2 ** 63),
                                               "9223372036854775808", 0.1, "0x10"]))
        keys = VOLCANO_ARGS.get(name, ["bogus.weight"])
        return st.fixed_dictionaries(
            {"name": st.just(name)},
            optional={"arguments": st.dictionaries(st.sampled_from(keys), arg_value, max_size=3)}
        ).flatmap(lambda d: st.dictionaries(st.sampled_from(VOLCANO_FLAGS), st.booleans(), max_size=3)
                  .map(lambda flags: {**d, **flags}))
    return st.sampled_from(VOLCANO_PLUGINS).flatmap(build)


def volcano_conf() -> st.SearchStrategy[dict[str, Any]]:
    actions = st.lists(st.sampled_from(VOLCANO_ACTIONS), min_size=1, max_size=5).map(", ".join)
    tier = st.fixed_dictionaries({"plugins": st.lists(volcano_plugin(), min_size=1, max_size=5,
                                                      unique_by=lambda p: p["name"])})
    configuration = st.fixed_dictionaries({"name": st.sampled_from(VOLCANO_ACTIONS)}, optional={
        "arguments": st.dictionaries(st.sampled_from(["enableTopologyAwarePreemption", "predicateErrorCacheEnable",
                                                      "bogus"]), st.sampled_from([True, False, "true", "x"]),
                                     max_size=2)})
    return st.fixed_dictionaries({}, optional={"actions": actions, "tiers": st.lists(tier, min_size=1, max_size=3),
                                               "configurations": st.lists(configuration, max_size=2)}).filter(bool)


def config_text(config: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[tuple[str, str]]:
    """(suffix, text) of one mutated config document, as YAML or JSON, sometimes broken."""
    @st.composite
    def build(draw):
        doc = draw(mutated(config))
        if draw(st.booleans()):
            suffix, text = draw(st.sampled_from([".yaml", ".conf"])), yaml.safe_dump(doc, sort_keys=False,
                                                                                    allow_unicode=True)
        else:
            suffix, text = ".json", json.dumps(doc)
        return suffix, draw(broken_text(text))
    return build()
