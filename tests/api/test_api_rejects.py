"""What the API server (v1.35) refuses, Caldera refuses too: `caldera schedule -f FILE` exits 2 with
one line naming the file, the object and kube's own field error, and never a traceback. Also
the limits on what one input may expand into (Volcano Job replicas, trace tasks)."""
from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from caldera.cli.main import cli

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110", example.com/gpu: "4"}}
---
"""


def pod(spec: str = "containers: [{name: c, image: i}]", name: str = "x", namespace: str = "default",
        meta: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(spec).strip(), "  ")
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}{meta}}}\n"
            f"spec:\n{body}\n---\n")


def pc(name: str, value: int = 100, extra: str = "", api: str = "scheduling.k8s.io/v1") -> str:
    return f"apiVersion: {api}\nkind: PriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\n{extra}---\n"


def run(tmp_path, text: str, *args: str, name: str = "m.yaml"):
    f = tmp_path / name
    f.write_text(text)
    return str(f), CliRunner().invoke(cli, ["schedule", "-f", str(f), *args])


def one_line_error(tmp_path, text: str, obj: str, problem: str, *args: str) -> str:
    """The run fails with exactly `caldera: error: FILE: OBJ: PROBLEM` (problem: the whole message)."""
    path, r = run(tmp_path, text, *args)
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert isinstance(r.exception, SystemExit)          # no other exception escaped: no traceback
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0] == f"caldera: error: {path}: {obj}: {problem}"
    return lines[0]


RFC1123_SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                     "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                     "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
RFC1123_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
LABEL_KEY_NAME = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                  "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                  "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"

POD_CASES = [
    # ---- validateResourceRequirements -------------------------------------------------------
    ("requests above limits (the issue's example)",
     pod("containers: [{name: c, image: i, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]"),
     'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    ("quantities printed as kube's Quantity.String()",
     pod("containers: [{name: c, image: i, resources: {requests: {memory: 1024Mi}, limits: {memory: 0.5Gi}}}]"),
     'spec.containers[0].resources.requests: Invalid value: "1Gi": must be less than or equal to memory limit '
     'of 512Mi'),
    ("init containers too",
     pod("""
         containers: [{name: c, image: i}]
         initContainers: [{name: i, image: i, resources: {requests: {cpu: 1500m}, limits: {cpu: '1'}}}]"""),
     'spec.initContainers[0].resources.requests: Invalid value: "1500m": must be less than or equal to cpu '
     'limit of 1'),
    ("pod-level resources too",
     pod("""
         containers: [{name: c, image: i}]
         resources: {requests: {cpu: '3'}, limits: {cpu: '2'}}"""),
     'spec.resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2'),
    ("an extended resource needs a limit",
     pod("containers: [{name: c, image: i, resources: {requests: {example.com/gpu: '1'}}}]"),
     "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"),
    ("an extended resource's request equals its limit",
     pod("containers: [{name: c, image: i, resources: {requests: {example.com/gpu: '1'}, "
         "limits: {example.com/gpu: '2'}}}]"),
     'spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2'),
    ("an extended resource comes in whole units",
     pod("containers: [{name: c, image: i, resources: {limits: {example.com/gpu: 500m}}}]"),
     "[spec.containers[0].resources.limits[example.com/gpu]: Invalid value: 500m: must be an integer, "
     "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: 500m: must be an integer]"),
    ("a resource name that is neither standard nor qualified",
     pod("containers: [{name: c, image: i, resources: {requests: {gpu: '1'}}}]"),
     '[spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or '
     'fully qualified, spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard '
     'resource for containers]'),
    # ---- validateContainers, ObjectMeta -----------------------------------------------------------
    ("no containers", pod("containers: []"), "spec.containers: Required value"),
    ("no spec at all", "apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default}\n",
     "spec.containers: Required value"),
    ("an invalid name", pod(name="My_Pod"),
     f'metadata.name: Invalid value: "My_Pod": {RFC1123_SUBDOMAIN}'),
    ("an invalid namespace", pod(namespace="Team_A"),
     f'metadata.namespace: Invalid value: "Team_A": {RFC1123_LABEL}'),
    ("an invalid label key", pod(meta=", labels: {-app: web}"),
     f'metadata.labels: Invalid value: "-app": {LABEL_KEY_NAME}'),
    ("errors listed together, as kube lists them", pod("containers: []", name="A"),
     f'[metadata.name: Invalid value: "A": {RFC1123_SUBDOMAIN}, spec.containers: Required value]'),
    # ---- the rest of ValidatePodSpec that Caldera reads -------------------------------------------
    ("an invalid nodeSelector value", pod("""
         containers: [{name: c, image: i}]
         nodeSelector: {zone: a b}"""),
     'spec.nodeSelector: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric '
     "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
     "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ("duplicate scheduling gates", pod("""
         containers: [{name: c, image: i}]
         schedulingGates: [{name: example.com/g}, {name: example.com/g}]"""),
     'spec.schedulingGates[1]: Duplicate value: "example.com/g"'),
    ("an invalid priorityClassName", pod("""
         containers: [{name: c, image: i}]
         priorityClassName: High"""),
     f'spec.priorityClassName: Invalid value: "High": {RFC1123_SUBDOMAIN}'),
    ("an unknown preemptionPolicy", pod("""
         containers: [{name: c, image: i}]
         preemptionPolicy: Sometimes"""),
     'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"'),
    ("a hostPort out of range", pod("containers: [{name: c, image: i, ports: [{containerPort: 80, "
                                    "hostPort: 70000}]}]"),
     "spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive"),
    # ---- node affinity: checked when the pod is read, so the error names file and pod ----------------
    ("node affinity: an unknown operator (the issue's example)", pod(f"""
         containers: [{{name: c, image: i}}]
         affinity:
           nodeAffinity:
             {REQ}:
               nodeSelectorTerms: [{{matchExpressions: [{{key: zone, operator: Equals, values: [a]}}]}}]"""),
     f'spec.affinity.nodeAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: '
     '"Equals": not a valid selector operator'),
    ("node affinity: In without values", pod(f"""
         containers: [{{name: c, image: i}}]
         affinity: {{nodeAffinity: {{{REQ}: {{nodeSelectorTerms: [{{matchExpressions: [{{key: zone,
                   operator: In}}]}}]}}}}}}"""),
     f"spec.affinity.nodeAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must "
     "be specified when `operator` is 'In' or 'NotIn'"),
    ("node affinity: no terms", pod(f"""
         containers: [{{name: c, image: i}}]
         affinity: {{nodeAffinity: {{{REQ}: {{nodeSelectorTerms: []}}}}}}"""),
     f"spec.affinity.nodeAffinity.{REQ}.nodeSelectorTerms: Required value: must have at least one node selector "
     "term"),
    ("node affinity: matchFields on another field", pod(f"""
         containers: [{{name: c, image: i}}]
         affinity: {{nodeAffinity: {{{REQ}: {{nodeSelectorTerms: [{{matchFields: [{{key: metadata.uid,
                   operator: In, values: [u]}}]}}]}}}}}}"""),
     f'spec.affinity.nodeAffinity.{REQ}.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "metadata.uid": '
     "not a valid field selector key"),
    ("node affinity: a preferred weight out of range", pod(f"""
         containers: [{{name: c, image: i}}]
         affinity: {{nodeAffinity: {{{PREF}: [{{weight: 0, preference: {{matchExpressions: [{{key: zone,
                   operator: Exists}}]}}}}]}}}}"""),
     f"spec.affinity.nodeAffinity.{PREF}[0].weight: Invalid value: 0: must be in the range 1-100"),
    ("node affinity: malformed structure still names file and pod", pod("""
         containers: [{name: c, image: i}]
         affinity: {nodeAffinity: zone}"""),
     "spec.affinity.nodeAffinity: must be a mapping"),
]


@pytest.mark.parametrize("text,problem", [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_pod_refused(tmp_path, text, problem):
    obj = "Pod default/My_Pod" if "My_Pod" in text else "Pod Team_A/x" if "Team_A" in text else \
        "Pod default/A" if "name: A," in text else "Pod default/x"
    one_line_error(tmp_path, NODE + text, obj, problem)


def test_node_name_and_duplicates(tmp_path):
    bad = "apiVersion: v1\nkind: Node\nmetadata: {name: Node_1}\n"
    one_line_error(tmp_path, bad, "Node Node_1", f'metadata.name: Invalid value: "Node_1": {RFC1123_SUBDOMAIN}')
    one_line_error(tmp_path, NODE + NODE, "Node n1", 'nodes "n1" already exists')
    one_line_error(tmp_path, NODE + pod() + pod(), "Pod default/x", 'pods "x" already exists')


PDB = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p, namespace: default}\n" \
      "spec: {selector: {matchLabels: {app: a}}}\nstatus: {disruptionsAllowed: 1}\n---\n"


def test_duplicate_pdb(tmp_path):
    one_line_error(tmp_path, NODE + PDB + PDB, "PodDisruptionBudget default/p",
                   'poddisruptionbudgets.policy "p" already exists')


PC_CASES = [
    ("the same name twice", pc("high") + pc("high", 10), "PriorityClass high",
     'priorityclasses.scheduling.k8s.io "high" already exists'),
    ("v1beta1 is not served", pc("high", api="scheduling.k8s.io/v1beta1"), "PriorityClass high",
     'no matches for kind "PriorityClass" in version "scheduling.k8s.io/v1beta1" (not served since Kubernetes '
     "1.22); use apiVersion scheduling.k8s.io/v1"),
    ("nor v1alpha1", pc("high", api="scheduling.k8s.io/v1alpha1"), "PriorityClass high",
     'no matches for kind "PriorityClass" in version "scheduling.k8s.io/v1alpha1"; use apiVersion '
     "scheduling.k8s.io/v1"),
    ("a second globalDefault (admission)", pc("a", 10, "globalDefault: true\n") + pc("b", 20, "globalDefault: true\n"),
     "PriorityClass b", 'priorityclasses.scheduling.k8s.io "b" is forbidden: PriorityClass a is already marked as '
                        "default. Only one default can exist"),
    ("a user value above 1000000000", pc("huge", 1_000_000_001), "PriorityClass huge",
     "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"),
    ("an unknown system- name", pc("system-high", 5), "PriorityClass system-high",
     "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
     "error: system-high is not a known system priority class"),
    ("a built-in system- class with another value", pc("system-node-critical", 5), "PriorityClass system-node-critical",
     "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
     "error: value of system-node-critical PriorityClass must be 2000001000"),
    ("an unknown preemptionPolicy", pc("p", 5, "preemptionPolicy: Always\n"), "PriorityClass p",
     'preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"'),
    ("an invalid name", pc("High"), "PriorityClass High",
     f'metadata.name: Invalid value: "High": {RFC1123_SUBDOMAIN}'),
]


@pytest.mark.parametrize("text,obj,problem", [c[1:] for c in PC_CASES], ids=[c[0] for c in PC_CASES])
def test_priority_class_refused(tmp_path, text, obj, problem):
    one_line_error(tmp_path, NODE + text, obj, problem)


def test_builtin_system_class_as_dumped_from_a_cluster_is_accepted(tmp_path):
    _, r = run(tmp_path, NODE + pc("system-cluster-critical", 2_000_000_000) + pod("""
        containers: [{name: c, image: i}]
        priorityClassName: system-cluster-critical"""), "-o", "json")
    assert r.exit_code == 0, r.output


def test_lowest_global_default_wins_in_resolve_priorities():
    """Only a race gives a cluster two global defaults; admission then takes the lowest value."""
    from caldera.api.loader import Cluster, resolve_priorities
    from caldera.api.objects import Pod, PriorityClass
    c = Cluster()
    for name, v in (("a", 30), ("b", 10), ("c", 20)):
        c.priority_classes[name] = PriorityClass({"metadata": {"name": name}, "value": v, "globalDefault": True})
    c.pods.append(Pod({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}))
    resolve_priorities(c)
    assert c.pods[0].priority == 10


# ---- Volcano objects -----------------------------------------------------------------------------
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: 1}\n---\n"
PODGROUP = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: default}\n"
            "spec: {minMember: 1}\n---\n")


def job(replicas: int, name: str = "j") -> str:
    return (f"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: default}}\n"
            f"spec:\n  tasks:\n  - {{name: w, replicas: {replicas}, template: {{spec: {{containers: "
            "[{name: c, image: i}]}}}\n---\n")


@pytest.mark.parametrize("text,obj,problem", [
    (QUEUE + QUEUE, "Queue q", 'queues.scheduling.volcano.sh "q" already exists'),
    (PODGROUP + PODGROUP, "PodGroup default/g", 'podgroups.scheduling.volcano.sh "g" already exists'),
    (job(1) + job(1), "Job default/j", 'jobs.batch.volcano.sh "j" already exists'),
], ids=["queue", "podgroup", "job"])
def test_duplicate_volcano_objects(tmp_path, text, obj, problem):
    one_line_error(tmp_path, NODE + text, obj, problem)


def test_job_replicas_capped_before_expansion(tmp_path):
    """The issue's 100000000 replicas: refused at once (it took 104 s and 5.8 GB, then a MemoryError)."""
    one_line_error(tmp_path, NODE + job(100_000_000), "Job default/j",
                   "spec.tasks: 100000000 pods are more than the 1000000 pods Caldera creates from one input "
                   "(no real cluster holds that many); lower the tasks' replicas")


def test_jobs_capped_together(tmp_path, monkeypatch):
    from caldera.api import objects
    monkeypatch.setattr(objects, "MAX_PODS", 10)     # the jobs' pods and the manifests' pods count together
    one_line_error(tmp_path, NODE + pod() + job(6, "a") + job(4, "b"), "Job default/b",
                   "spec.tasks: 4 pods (with the 7 pods before it, 11) are more than the 10 pods Caldera creates "
                   "from one input (no real cluster holds that many); lower the tasks' replicas")


def test_expansion_checks_memory(monkeypatch):
    from caldera.api import objects
    monkeypatch.setattr(objects, "physical_memory", lambda: 2**30)
    assert objects.expansion_error(1000, 0, 4000, "tasks") == ""
    assert objects.expansion_error(500_000, 0, 4000, "tasks") == (
        "500000 pods would need at least 1.9 GiB, more than the 1.0 GiB of memory of this machine; lower the tasks")


def test_job_template_pods_are_validated(tmp_path):
    text = NODE + job(1).replace("[{name: c, image: i}]",
                                 "[{name: c, image: i, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]")
    one_line_error(tmp_path, text, "Job default/j",
                   'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu '
                   "limit of 1")


def test_trace_tasks_capped(tmp_path):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODE)
    trace = tmp_path / "t.csv"
    trace.write_text("job,arrival,tasks,cpu\na,0,100000000,1\n")
    r = CliRunner().invoke(cli, ["simulate", "--cluster", str(nodes), "--workload", str(trace),
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code == 2, (r.output, r.exception)
    assert r.stderr.strip() == (f"caldera: error: {trace}: row 2: tasks: 100000000 pods are more than the 1000000 "
                                "pods Caldera creates from one input (no real cluster holds that many); lower the "
                                "tasks")


# ---- what the API server accepts is still accepted -----------------------------------------------
def test_valid_input_still_schedules(tmp_path):
    text = NODE + pc("high", 10, "globalDefault: true\n") + PDB + pod(f"""
        containers: [{{name: c, image: i, resources: {{requests: {{cpu: 500m, example.com/gpu: '1'}},
                      limits: {{cpu: '1', example.com/gpu: '1'}}}}, ports: [{{containerPort: 80, hostPort: 80}}]}}]
        initContainers: [{{name: i, image: i, resources: {{limits: {{memory: 1Gi}}}}}}]
        nodeSelector: {{kubernetes.io/hostname: n1}}
        affinity:
          nodeAffinity:
            {REQ}: {{nodeSelectorTerms: [{{matchFields: [{{key: metadata.name, operator: In, values: [n1]}}]}}]}}
            {PREF}: [{{weight: 5, preference: {{matchExpressions: [{{key: zone, operator: Gt, values: ['3']}}]}}}}]
        schedulingGates: []""", meta=", labels: {app: web, example.com/tier: '1'}")
    _, r = run(tmp_path, text, "-o", "json")
    assert r.exit_code == 0, (r.output, r.exception)
    assert '"node": "n1"' in r.stdout


def test_gt_value_kube_accepts_is_left_to_the_scheduler(tmp_path):
    """A Gt/Lt value that is no integer passes API validation; kube-scheduler's parse then
    matches no node with it. Caldera accepts the pod and reports it unschedulable."""
    _, r = run(tmp_path, NODE + pod(f"""
        containers: [{{name: c, image: i}}]
        affinity: {{nodeAffinity: {{{REQ}: {{nodeSelectorTerms: [{{matchExpressions: [{{key: zone, operator: Gt,
                  values: [abc]}}]}}]}}}}}}"""), "-o", "json")
    assert r.exit_code == 0, (r.output, r.exception)
    assert '"pod": "default/x"' in r.stdout and "didn't match Pod's node affinity/selector" in r.stdout


# Found by the fuzzing suite (tests/fuzz/test_fuzz_cli.py): a selector's list given as a scalar was
# iterated and crashed with a TypeError traceback.
PDB_EXPRS = ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: pdb0, namespace: default}}\n"
             "spec:\n  selector: {{matchLabels: {{}}, matchExpressions: {exprs}}}\n---\n")


@pytest.mark.parametrize("exprs", ["true", "3", "'In'", "{key: a}"])
@pytest.mark.parametrize("volcano", [False, True])
def test_a_selector_list_given_as_a_scalar_is_a_one_line_error(tmp_path, exprs, volcano):
    args = ("--config", "examples/batch/volcano-scheduler.conf") if volcano else ()
    got = type(__import__("yaml").safe_load(exprs)).__name__
    one_line_error(tmp_path, NODE + PDB_EXPRS.format(exprs=exprs), "PodDisruptionBudget default/pdb0",
                   f"spec.selector.matchExpressions: must be a list, got {got}", *args)


@pytest.mark.parametrize("field", ["matchExpressions", "matchFields"])
def test_a_node_selector_terms_list_given_as_a_scalar_is_a_one_line_error(tmp_path, field):
    spec = f"""\
        containers: [{{name: c, image: i}}]
        affinity:
          nodeAffinity:
            {REQ}:
              nodeSelectorTerms: [{{{field}: true}}]"""
    _, r = run(tmp_path, NODE + pod(spec))
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), (r.output, r.exception)
    assert f"nodeSelectorTerms[0].{field}: must be a list" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
