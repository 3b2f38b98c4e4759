"""Static checks of deploy/: every manifest parses, objects are where they belong and refer to
each other correctly, RBAC stays least-privilege (no wildcards; the exact rule set is pinned so a
new permission is a deliberate edit), the ConfigMap's configuration loads with Caldera's own
loader, and the Volcano CRDs are valid apiextensions.k8s.io/v1 structural schemas."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NS = "caldera-system"
SA = "caldera-scheduler"
KNOWN_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}


def load_all() -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(DEPLOY.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                out.append((path, doc))
    return out


DOCS = load_all()


def one(kind: str, name: str | None = None) -> dict:
    found = [d for _, d in DOCS if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def test_every_manifest_parses_with_expected_kinds():
    assert DOCS, "no manifests under deploy/"
    kinds = sorted(d["kind"] for _, d in DOCS)
    assert kinds == sorted(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                            "RoleBinding", "ConfigMap", "Deployment", "CustomResourceDefinition",
                            "CustomResourceDefinition", "CustomResourceDefinition"])
    for path, d in DOCS:
        assert d.get("apiVersion") and d.get("metadata", {}).get("name"), path
    expected_files = {"namespace.yaml", "serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml",
                      "configmap.yaml", "deployment.yaml", "README.md"}
    assert expected_files <= {p.name for p in DEPLOY.iterdir()}


def test_namespaced_objects_live_in_caldera_system():
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
    for path, d in DOCS:
        if d["kind"] in cluster_scoped:
            assert "namespace" not in d["metadata"], path
        else:
            assert d["metadata"].get("namespace") == NS, (path, d["kind"])
    assert one("Namespace")["metadata"]["name"] == NS
    assert one("ServiceAccount")["metadata"]["name"] == SA


# ---- RBAC -----------------------------------------------------------------------------------
def rules_map(rules) -> dict:
    out: dict = {}
    for r in rules:
        for g in r["apiGroups"]:
            for res in r["resources"]:
                key = (g, res, tuple(r.get("resourceNames", ())))
                out.setdefault(key, set()).update(r["verbs"])
    return out


def test_cluster_role_has_no_wildcards_and_known_verbs():
    for kind in ("ClusterRole", "Role"):
        role = one(kind)
        for rule in role["rules"]:
            assert "nonResourceURLs" not in rule
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                for v in rule.get(field, []):
                    assert "*" not in v, f"{kind} wildcard in {field}: {rule}"
            assert set(rule["verbs"]) <= KNOWN_VERBS, rule
            assert not {"secrets", "configmaps"} & set(rule["resources"]), "config is mounted, not read via the API"


def test_cluster_role_is_exactly_what_caldera_run_uses():
    # Pinned: widening this is a deliberate edit of both clusterrole.yaml and this table.
    assert rules_map(one("ClusterRole", "caldera-scheduler")["rules"]) == {
        ("", "nodes", ()): {"list", "watch"},
        ("", "pods", ()): {"get", "list", "watch", "delete"},
        ("", "pods/binding", ()): {"create"},
        ("", "pods/status", ()): {"patch"},
        ("scheduling.k8s.io", "priorityclasses", ()): {"list", "watch"},
        ("events.k8s.io", "events", ()): {"create"},
        ("scheduling.volcano.sh", "podgroups", ()): {"list", "watch", "patch"},
        ("scheduling.volcano.sh", "queues", ()): {"list", "watch"},
        ("scheduling.x-k8s.io", "podgroups", ()): {"list", "watch"},
        ("scheduling.k8s.io", "workloads", ()): {"get", "list", "watch"},
        ("topology.volcano.sh", "hypernodes", ()): {"list", "watch"},
        ("policy", "poddisruptionbudgets", ()): {"list", "watch"},
        ("", "resourcequotas", ()): {"list", "watch"},
        ("nodeinfo.volcano.sh", "numatopologies", ()): {"list", "watch"},
        ("", "namespaces", ()): {"list", "watch"},
        ("", "services", ()): {"list", "watch"},
        ("", "replicationcontrollers", ()): {"list", "watch"},
        ("apps", "replicasets", ()): {"list", "watch"},
        ("apps", "statefulsets", ()): {"list", "watch"},
        # DRA and storage: kube's system:kube-scheduler (+ system:volume-scheduler) rules for them
        ("resource.k8s.io", "deviceclasses", ()): {"get", "list", "watch"},
        ("resource.k8s.io", "resourceslices", ()): {"get", "list", "watch"},
        ("resource.k8s.io", "resourceclaims", ()): {"get", "list", "watch", "update", "patch"},
        ("resource.k8s.io", "resourceclaims/status", ()): {"get", "list", "watch", "update", "patch"},
        ("", "pods/finalizers", ()): {"update"},
        ("", "persistentvolumes", ()): {"get", "list", "watch", "update", "patch"},
        ("", "persistentvolumeclaims", ()): {"get", "list", "watch", "update", "patch"},
        ("storage.k8s.io", "storageclasses", ()): {"get", "list", "watch"},
        ("storage.k8s.io", "csinodes", ()): {"get", "list", "watch"},
        ("storage.k8s.io", "csidrivers", ()): {"get", "list", "watch"},
        ("storage.k8s.io", "csistoragecapacities", ()): {"get", "list", "watch"},
    }


def test_every_rule_is_commented():
    for name in ("clusterrole.yaml", "leader-election-role.yaml"):
        lines = (DEPLOY / name).read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith("- apiGroups:"):
                assert lines[i - 1].strip().startswith("#"), f"{name}:{i + 1}: rule without a comment"


def test_leases_are_namespaced_and_match_the_leader_election_config():
    le = leader_election()
    role = one("Role")
    assert role["metadata"]["namespace"] == le["resourceNamespace"] == NS
    assert rules_map(role["rules"]) == {
        ("coordination.k8s.io", "leases", ()): {"create"},
        ("coordination.k8s.io", "leases", (le["resourceName"],)): {"get", "update"},
    }
    # no lease rights cluster-wide
    assert not any(res == "leases" for _, res, _ in rules_map(one("ClusterRole")["rules"]))


@pytest.mark.parametrize("kind,role_kind", [("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")])
def test_bindings_bind_the_service_account(kind, role_kind):
    b = one(kind)
    assert b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                            "name": one(role_kind)["metadata"]["name"]}
    assert b["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]


# ---- ConfigMap and Deployment ---------------------------------------------------------------
def scheduler_config() -> dict:
    return yaml.safe_load(one("ConfigMap")["data"]["config.yaml"])


def leader_election() -> dict:
    return scheduler_config()["leaderElection"]


def seconds(d: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)s", d)
    assert m, d
    return float(m.group(1))


def test_configmap_is_a_valid_caldera_configuration(tmp_path):
    from caldera.configfile import load_config
    from caldera.plugins.registry import build_registry
    f = tmp_path / "config.yaml"
    f.write_text(one("ConfigMap")["data"]["config.yaml"])
    cfg = load_config(str(f), build_registry())
    assert [p.scheduler_name for p in cfg.profiles] == ["caldera-scheduler"]
    le = leader_election()
    assert le["leaderElect"] is True and le["resourceLock"] == "leases"
    assert seconds(le["retryPeriod"]) < seconds(le["renewDeadline"]) < seconds(le["leaseDuration"])


def test_deployment():
    dep = one("Deployment")
    spec = dep["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert pod["serviceAccountName"] == SA
    assert "schedulerName" not in pod, "Caldera itself is placed by the default scheduler"
    (c,) = pod["containers"]
    assert c["image"] == "caldera:dev"
    args = c["args"]
    assert args[0] == "run" and "--leader-elect" in args
    assert "--metrics-addr=0.0.0.0:10259" in args
    cfg_arg = next(a for a in args if a.startswith("--config="))
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}
    cfg_mount = next(m for m in mounts.values() if cfg_arg.split("=", 1)[1].startswith(m["mountPath"] + "/"))
    assert vols[cfg_mount["name"]]["configMap"]["name"] == one("ConfigMap")["metadata"]["name"]
    assert cfg_arg.rsplit("/", 1)[1] in one("ConfigMap")["data"]
    port = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c[probe]["httpGet"]
        assert get["path"] == path and port[get["port"]] == 10259 and get["scheme"] == "HTTP"
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    assert c["resources"]["limits"]["memory"]
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["runAsNonRoot"] is True


# ---- CRDs -----------------------------------------------------------------------------------
CRDS = [d for _, d in DOCS if d["kind"] == "CustomResourceDefinition"]
INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]


def structural_errors(s: dict, where: str, root: bool = False) -> list[str]:
    """apiextensions.k8s.io/v1 structural-schema rules (the ones a handwritten schema can break)."""
    errs = []
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    if "type" not in s and not int_or_string and s.get("x-kubernetes-preserve-unknown-fields") is not True:
        errs.append(f"{where}: no type")
    if root and s.get("type") != "object":
        errs.append(f"{where}: root must be type object")
    for k in ("allOf", "oneOf", "not"):
        if k in s:
            errs.append(f"{where}: {k} is not used by these CRDs")
    if "anyOf" in s and not (int_or_string and s["anyOf"] == INT_OR_STRING_ANYOF):
        errs.append(f"{where}: anyOf only as the int-or-string pattern")
    if "properties" in s and "additionalProperties" in s:
        errs.append(f"{where}: properties and additionalProperties are exclusive")
    if s.get("type") == "array" and "items" not in s:
        errs.append(f"{where}: array without items")
    if s.get("type") != "object" and ("properties" in s or "additionalProperties" in s):
        errs.append(f"{where}: properties on a non-object")
    if "enum" in s and "default" in s and s["default"] not in s["enum"]:
        errs.append(f"{where}: default {s['default']!r} not in enum")
    if "default" in s:
        t = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}[s["type"]]
        if not isinstance(s["default"], t):
            errs.append(f"{where}: default of the wrong type")
    for name, sub in (s.get("properties") or {}).items():
        if root and name == "metadata":
            if sub != {"type": "object"}:
                errs.append(f"{where}.metadata: only type: object is allowed here")
            continue
        errs += structural_errors(sub, f"{where}.{name}")
    if isinstance(s.get("additionalProperties"), dict):
        errs += structural_errors(s["additionalProperties"], f"{where}[*]")
    if "items" in s:
        errs += structural_errors(s["items"], f"{where}[]")
    if "pattern" in s:
        re.compile(s["pattern"])
    return errs


@pytest.mark.parametrize("crd", CRDS, ids=lambda c: c["metadata"]["name"])
def test_crd_is_valid_v1_structural(crd):
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    assert spec["scope"] in ("Namespaced", "Cluster")
    assert sum(v["storage"] for v in spec["versions"]) == 1
    for v in spec["versions"]:
        assert v["served"] is True
        assert structural_errors(v["schema"]["openAPIV3Schema"], v["name"], root=True) == []
        for col in v.get("additionalPrinterColumns", []):
            assert col["type"] in ("integer", "number", "string", "boolean", "date")
            assert col["jsonPath"].startswith(".") and col["name"]
        assert set(v.get("subresources", {})) <= {"status", "scale"}


def test_hypernode_crd_matches_volcano_shape():
    hn = one("CustomResourceDefinition", "hypernodes.topology.volcano.sh")["spec"]
    assert (hn["group"], hn["scope"], hn["names"]["kind"]) == ("topology.volcano.sh", "Cluster", "HyperNode")
    assert hn["names"]["shortNames"] == ["hn"]
    (v,) = hn["versions"]
    assert v["name"] == "v1alpha1" and v["subresources"] == {"status": {}}
    assert [(c["name"], c["jsonPath"]) for c in v["additionalPrinterColumns"]] == [
        ("Tier", ".spec.tier"), ("TierName", ".spec.tierName"), ("NodeCount", ".status.nodeCount"),
        ("Age", ".metadata.creationTimestamp")]
    spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["tier"] and sorted(spec["properties"]) == ["members", "tier", "tierName"]
    sel = spec["properties"]["members"]["items"]["properties"]["selector"]["properties"]
    assert sorted(sel) == ["exactMatch", "labelMatch", "regexMatch"]


def test_crds_match_volcano_shape():
    pg = one("CustomResourceDefinition", "podgroups.scheduling.volcano.sh")["spec"]
    q = one("CustomResourceDefinition", "queues.scheduling.volcano.sh")["spec"]
    assert (pg["group"], pg["scope"], pg["names"]["kind"]) == ("scheduling.volcano.sh", "Namespaced", "PodGroup")
    assert (q["group"], q["scope"], q["names"]["kind"]) == ("scheduling.volcano.sh", "Cluster", "Queue")
    assert pg["names"]["shortNames"] == ["pg", "podgroup-v1beta1"]
    assert q["names"]["shortNames"] == ["q", "queue-v1beta1"]
    (pgv,), (qv,) = pg["versions"], q["versions"]
    assert pgv["name"] == qv["name"] == "v1beta1"
    # Volcano: PodGroup status is written through the main resource, Queue has a status subresource
    assert pgv["subresources"] == {} and qv["subresources"] == {"status": {}}
    assert [(c["name"], c["jsonPath"]) for c in pgv["additionalPrinterColumns"]] == [
        ("STATUS", ".status.phase"), ("minMember", ".spec.minMember"), ("RUNNINGS", ".status.running"),
        ("AGE", ".metadata.creationTimestamp"), ("QUEUE", ".spec.queue")]
    assert [(c["name"], c["jsonPath"]) for c in qv["additionalPrinterColumns"]] == [("PARENT", ".spec.parent")]
    pgs = pgv["schema"]["openAPIV3Schema"]["properties"]
    assert sorted(pgs["spec"]["properties"]) == ["minMember", "minResources", "minTaskMember", "networkTopology",
                                                 "priorityClassName", "queue", "subGroupPolicy"]
    assert sorted(pgs["status"]["properties"]) == ["conditions", "failed", "phase", "running", "succeeded"]
    assert pgs["status"]["properties"]["phase"]["enum"] == ["Pending", "Running", "Unknown", "Inqueue", "Completed"]
    assert pgs["spec"]["properties"]["queue"]["default"] == "default"
    qs = qv["schema"]["openAPIV3Schema"]["properties"]
    assert sorted(qs["spec"]["properties"]) == ["affinity", "capability", "dequeueStrategy", "deserved",
                                                "extendClusters", "guarantee", "parent", "priority", "reclaimable",
                                                "type", "weight"]
    assert sorted(qs["status"]["properties"]) == ["allocated", "completed", "inqueue", "pending", "reservation",
                                                  "running", "state", "unknown"]
    w = qs["spec"]["properties"]["weight"]
    assert (w["default"], w["minimum"], w["maximum"], w["format"]) == (1, 1, 65535, "int32")


def test_crd_objects_from_examples_are_accepted_by_the_schema():
    """The PodGroups/Queues Caldera's batch examples use only fields the CRD schemas declare."""
    schemas = {c["spec"]["names"]["kind"]: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] for c in CRDS}
    seen = 0
    for path in sorted((DEPLOY.parent / "examples").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in schemas and \
                    str(doc.get("apiVersion", "")).startswith("scheduling.volcano.sh/"):
                seen += 1
                assert unknown_fields(doc, schemas[doc["kind"]], doc["kind"]) == [], path
    if not seen:
        pytest.skip("no PodGroup/Queue manifests under examples/")


def unknown_fields(obj, schema: dict, where: str) -> list[str]:
    out = []
    if isinstance(obj, dict) and schema.get("type") == "object":
        props, extra = schema.get("properties"), schema.get("additionalProperties")
        for k, v in obj.items():
            if props is not None and k in props:
                if not (where.count(".") == 0 and k == "metadata"):
                    out += unknown_fields(v, props[k], f"{where}.{k}")
            elif isinstance(extra, dict):
                out += unknown_fields(v, extra, f"{where}[{k}]")
            elif props is not None:
                out.append(f"{where}.{k}")
    elif isinstance(obj, list) and "items" in schema:
        for i, v in enumerate(obj):
            out += unknown_fields(v, schema["items"], f"{where}[{i}]")
    return out
