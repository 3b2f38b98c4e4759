"""Nothing dropped in silence (issue 14): every object read and not used, and every pending pod
that no profile (kube) or the Volcano scheduler name claims, is listed under `ignored` in the
output and counted in one stderr summary line; kube mode schedules only pods whose schedulerName
is one of its profiles, as kube-scheduler does."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from caldera.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
VOLCANO_CONF = str(ROOT / "examples/batch/volcano-scheduler.conf")

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
"""


def pod(name: str, *, scheduler: str | None = None, node: str | None = None, cpu: str = "1",
        phase: str | None = None, ns: str = "default") -> str:
    spec = f"  containers: [{{name: c, image: x, resources: {{requests: {{cpu: '{cpu}'}}}}}}]\n"
    if scheduler:
        spec += f"  schedulerName: {scheduler}\n"
    if node:
        spec += f"  nodeName: {node}\n"
    out = f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n{spec}"
    if phase:
        out += f"status: {{phase: {phase}}}\n"
    return out


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def schedule(*args: str):
    r = CliRunner().invoke(cli, ["schedule", *args])
    assert r.exit_code == 0, (r.exit_code, r.stdout, r.stderr, r.exception)
    return r


def out_of(r) -> dict:
    return json.loads(r.stdout)


def warnings(r) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("caldera: warning:")]


# ---- kube mode -------------------------------------------------------------------------------------
def test_kube_mode_does_not_bind_a_pod_for_another_scheduler(tmp_path):
    f = write(tmp_path, NODE + pod("mine") + pod("theirs", scheduler="volcano"))
    r = schedule("-f", f, "-o", "json")
    out = out_of(r)
    assert out["bindings"] == [{"pod": "default/mine", "node": "n1"}]
    assert out["unschedulable"] == []
    assert out["ignored"] == [{
        "kind": "Pod", "name": "default/theirs", "source": f,
        "reason": 'schedulerName "volcano" is not a profile of this configuration (profiles: default-scheduler)'}]
    assert warnings(r) == ["caldera: warning: ignored 1 object: 1 Pod (schedulerName not served) "
                           "(listed under \"ignored\")"]


def test_kube_mode_profiles_of_a_config(tmp_path):
    conf = write(tmp_path, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                           "profiles:\n- schedulerName: a\n- schedulerName: b\n", "c.yaml")
    f = write(tmp_path, NODE + pod("pa", scheduler="a") + pod("pb", scheduler="b") + pod("pd"))
    out = out_of(schedule("-f", f, "--config", conf, "-o", "json"))
    assert sorted(b["pod"] for b in out["bindings"]) == ["default/pa", "default/pb"]
    assert [(i["name"], i["reason"]) for i in out["ignored"]] == [
        ("default/pd", 'schedulerName "default-scheduler" is not a profile of this configuration (profiles: a, b)')]


def test_scheduler_name_flag_ignores_the_other_pods(tmp_path):
    f = write(tmp_path, NODE + pod("pa", scheduler="a") + pod("pd"))
    out = out_of(schedule("-f", f, "--scheduler-name", "a", "-o", "json"))
    assert out["bindings"] == [{"pod": "default/pa", "node": "n1"}]
    assert [(i["name"], i["reason"]) for i in out["ignored"]] == [
        ("default/pd", 'schedulerName "default-scheduler" is not the one --scheduler-name selects ("a")')]


def test_running_and_finished_pods_are_used_not_ignored(tmp_path):
    f = write(tmp_path, NODE + pod("run", node="n1", cpu="3", scheduler="other")
              + pod("done", node="n1", cpu="3", phase="Succeeded") + pod("new", cpu="2"))
    out = out_of(schedule("-f", f, "-o", "json"))
    assert out["ignored"] == []
    assert out["unschedulable"][0]["pod"] == "default/new"    # the running pod of another scheduler uses capacity


def test_pod_bound_to_a_node_not_in_the_input(tmp_path):
    f = write(tmp_path, NODE + pod("lost", node="gone"))
    out = out_of(schedule("-f", f, "-o", "json"))
    assert out["ignored"] == [{"kind": "Pod", "name": "default/lost", "source": f,
                               "reason": 'bound to node "gone", which is not in the input'}]


# ---- objects that are read and not used -----------------------------------------------------------
OTHER_KINDS = """---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
"""


def test_unused_kinds_are_listed_with_one_summary_line(tmp_path):
    f = write(tmp_path, NODE + OTHER_KINDS)
    r = schedule("-f", f, "-o", "json")
    # Services and Namespaces are read (PodTopologySpread's default selector, InterPodAffinity)
    assert out_of(r)["ignored"] == [
        {"kind": "ConfigMap", "name": "default/settings", "source": f,
         "reason": "kind ConfigMap is not used by the scheduler"},
        {"kind": "Deployment", "name": "shop/web", "source": f,
         "reason": "kind Deployment is not used by the scheduler"},
    ]
    assert warnings(r) == [
        "caldera: warning: ignored 2 objects: 1 ConfigMap, 1 Deployment "
        "(kind not used by the scheduler) (listed under \"ignored\")"]


def test_many_objects_are_one_line_and_the_table_points_to_json(tmp_path):
    svcs = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: s{i}}}\n" for i in range(120))
    f = write(tmp_path, NODE + svcs + pod("x", scheduler="volcano") + pod("y", scheduler="volcano"))
    r = schedule("-f", f)
    assert warnings(r) == ["caldera: warning: ignored 122 objects: 120 ConfigMap (kind not used by the scheduler); "
                           "2 Pod (schedulerName not served) (-o json lists them)"]
    assert "Traceback" not in r.stderr


def test_ignored_is_always_in_the_output(tmp_path):
    out = out_of(schedule("-f", write(tmp_path, NODE + pod("p")), "-o", "json"))
    assert out["ignored"] == []
    import yaml
    r = schedule("-f", write(tmp_path, NODE + OTHER_KINDS), "-o", "yaml")
    assert len(yaml.safe_load(r.stdout)["ignored"]) == 2


def test_pdb_v1beta1_is_refused_like_a_v1beta1_priority_class(tmp_path):
    """Kubernetes 1.35 serves neither policy/v1beta1 PodDisruptionBudgets nor
    scheduling.k8s.io/v1beta1 PriorityClasses: both are one-line errors naming the object."""
    pdb = "---\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: x}\n" \
          "spec: {minAvailable: 1}\n"
    r = CliRunner().invoke(cli, ["schedule", "-f", write(tmp_path, NODE + pdb), "-o", "json"])
    assert r.exit_code == 2
    assert "PodDisruptionBudget x/db" in r.stderr
    assert 'no matches for kind "PodDisruptionBudget" in version "policy/v1beta1" (not served since ' \
           'Kubernetes 1.25); use apiVersion policy/v1' in r.stderr


PODGROUP = """---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg1, namespace: team}
spec: {minMember: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec: {weight: 1}
"""


def test_volcano_objects_without_a_volcano_conf_are_ignored(tmp_path):
    f = write(tmp_path, NODE + PODGROUP)
    r = schedule("-f", f, "-o", "json")
    why = "Volcano objects are scheduled only with a volcano-scheduler.conf as --config (no --config was given)"
    assert out_of(r)["ignored"] == [
        {"kind": "PodGroup", "name": "team/pg1", "source": f, "reason": why},
        {"kind": "Queue", "name": "q1", "source": f, "reason": why}]
    assert len(warnings(r)) == 1


# ---- Volcano mode ----------------------------------------------------------------------------------
def test_volcano_mode_lists_pending_pods_of_other_schedulers(tmp_path):
    f = write(tmp_path, NODE + pod("kube-running", node="n1", cpu="3")
              + pod("kube-pending") + pod("v", scheduler="volcano", cpu="2"))
    r = schedule("-f", f, "--config", VOLCANO_CONF, "-o", "json")
    out = out_of(r)
    assert out["bindings"] == []     # the running kube pod uses 3 of the 4 CPUs
    assert [u["pod"] for u in out["unschedulable"]] == ["default/v"]
    assert out["ignored"] == [{"kind": "Pod", "name": "default/kube-pending", "source": f,
                               "reason": 'schedulerName "default-scheduler" is not the Volcano scheduler\'s '
                                         '("volcano")'}]
    assert warnings(r) == ["caldera: warning: ignored 1 object: 1 Pod (schedulerName not served) "
                           "(listed under \"ignored\")"]


def test_volcano_mode_pdbs_and_unused_kinds(tmp_path):
    pdb = "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\n" \
          "spec: {minAvailable: 1}\nstatus: {disruptionsAllowed: 0}\n"
    f = write(tmp_path, NODE + pdb + OTHER_KINDS + pod("lost", node="gone", scheduler="volcano"))
    out = out_of(schedule("-f", f, "--config", VOLCANO_CONF, "-o", "json"))
    kinds = [(i["kind"], i["name"]) for i in out["ignored"]]
    assert kinds == [("PodDisruptionBudget", "default/db"), ("Service", "shop/web"), ("ConfigMap", "default/settings"),
                     ("Deployment", "shop/web"), ("Namespace", "shop"), ("Pod", "default/lost")]
    assert "not used by the Volcano scheduler" in out["ignored"][0]["reason"]


# ---- empty input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", ["empty-file", "comments-only", "empty-dir"])
def test_empty_input_warns(tmp_path, make):
    if make == "empty-dir":
        target = tmp_path / "d"
        target.mkdir()
        path = str(target)
    else:
        path = write(tmp_path, "" if make == "empty-file" else "# nothing\n---\n")
    r = schedule("-f", path, "-o", "json")
    assert warnings(r) == [f"caldera: warning: no objects in {path}"]
    assert out_of(r)["bindings"] == [] and out_of(r)["ignored"] == []
