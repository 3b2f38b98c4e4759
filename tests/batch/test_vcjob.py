"""expand_job: a Volcano Job -> the PodGroup and Pods Volcano's job controller creates.

Expected values follow volcano-sh/volcano: createJobPod (job_controller_util.go), createOrUpdatePodGroup
and calcPGMinResources (job_controller_actions.go), the mutating webhook's defaults (mutate_job.go) and
the validating webhook / admission policy (admit_job.go, validating-admission-policy.yaml).
"""
from __future__ import annotations

import copy

import pytest

from caldera.api.objects import Pod
from caldera.batch.controller.vcjob import expand_job
from caldera.errors import InputError


def task(name, replicas, cpu=None, memory=None, min_available=None, pc=None, **extra):
    res = {}
    if cpu is not None:
        res["cpu"] = cpu
    if memory is not None:
        res["memory"] = memory
    spec = {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": res}}]}
    if pc:
        spec["priorityClassName"] = pc
    t = {"name": name, "replicas": replicas, "template": {"spec": spec}}
    if min_available is not None:
        t["minAvailable"] = min_available
    t.update(extra)
    return t


def job(*tasks, name="tf", ns="team", uid=None, **spec):
    meta = {"name": name, "namespace": ns}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta,
            "spec": {"tasks": list(tasks), **spec}}


PS_WORKER = (task("ps", 1, cpu="1"), task("worker", 3, cpu="2"))


# ---- names -------------------------------------------------------------------------------
def test_pod_names_follow_make_pod_name_in_task_order():
    _, pods = expand_job(job(*PS_WORKER))
    assert [p["metadata"]["name"] for p in pods] == ["tf-ps-0", "tf-worker-0", "tf-worker-1", "tf-worker-2"]
    assert {p["metadata"]["namespace"] for p in pods} == {"team"}
    assert pods[1]["metadata"]["uid"] == "team-tf-worker-0"
    assert all(p["status"] == {"phase": "Pending"} and "nodeName" not in p["spec"] for p in pods)


@pytest.mark.parametrize("uid,expected", [("3f2a-77", "tf-3f2a-77"), (None, "tf")])
def test_podgroup_name_is_job_dash_uid_else_job_name(uid, expected):
    pg, pods = expand_job(job(*PS_WORKER, uid=uid))
    assert pg["metadata"]["name"] == expected
    assert pg["metadata"]["namespace"] == "team"
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {expected}


def test_default_task_names_and_namespace():
    t0, t1 = task(None, 1, cpu="1"), task("", 1, cpu="1")
    pg, pods = expand_job(job(t0, t1, ns=None))
    assert [p["metadata"]["name"] for p in pods] == ["tf-default0-0", "tf-default1-0"]
    assert pg["spec"]["minTaskMember"] == {"default0": 1, "default1": 1}
    assert pods[0]["metadata"]["namespace"] == "default"


def test_missing_replicas_creates_no_pods():
    pg, pods = expand_job(job(task("a", None, cpu="1"), task("b", 2, cpu="1")))
    assert [p["metadata"]["name"] for p in pods] == ["tf-b-0", "tf-b-1"]
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["minTaskMember"] == {"a": 0, "b": 2}


# ---- labels / annotations ----------------------------------------------------------------
def test_pod_labels_and_annotations_exact():
    t = task("worker", 2, cpu="1")
    t["template"]["metadata"] = {"labels": {"app": "tf"}, "annotations": {"note": "x"}}
    j = job(t, uid="u1", queue="q1")
    j["metadata"]["labels"] = {"volcano.sh/preemptable": "true", "team": "a"}
    j["metadata"]["annotations"] = {"volcano.sh/preemptable": "false", "volcano.sh/revocable-zone": "*",
                                    "volcano.sh/jdb-max-unavailable": "1", "other": "y"}
    j["status"] = {"version": 3, "retryCount": 2}
    _, pods = expand_job(j)
    p = pods[1]["metadata"]
    assert p["labels"] == {
        "app": "tf", "volcano.sh/task-index": "1", "volcano.sh/job-name": "tf",
        "volcano.sh/task-spec": "worker", "volcano.sh/job-namespace": "team",
        "volcano.sh/queue-name": "q1", "volcano.sh/preemptable": "true"}
    assert p["annotations"] == {
        "note": "x", "volcano.sh/task-index": "1", "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": "tf-u1", "volcano.sh/job-name": "tf",
        "volcano.sh/queue-name": "q1", "volcano.sh/job-version": "3",
        "volcano.sh/template-uid": "tf-worker", "volcano.sh/job-retry-count": "2",
        "volcano.sh/preemptable": "false", "volcano.sh/revocable-zone": "*",
        "volcano.sh/jdb-max-unavailable": "1"}
    assert p["ownerReferences"] == [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "tf",
                                     "uid": "u1", "controller": True, "blockOwnerDeletion": True}]


def test_jdb_min_available_wins_over_max_unavailable_and_numa_policy():
    t = task("w", 1, cpu="1", topologyPolicy="single-numa-node")
    j = job(t)
    j["metadata"]["annotations"] = {"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"}
    ann = expand_job(j)[1][0]["metadata"]["annotations"]
    assert ann["volcano.sh/jdb-min-available"] == "1"
    assert "volcano.sh/jdb-max-unavailable" not in ann
    assert ann["volcano.sh/numa-topology-policy"] == "single-numa-node"


def test_partition_id_label():
    t = task("w", 5, cpu="1", partitionPolicy={"partitionSize": 2, "totalPartitions": 3})
    _, pods = expand_job(job(t))
    assert [p["metadata"]["labels"]["volcano.sh/partition-id"] for p in pods] == ["0", "0", "1", "1", "2"]


def test_podgroup_copies_job_labels_annotations_and_defaults():
    j = job(*PS_WORKER, uid="u1")
    j["metadata"].update(labels={"team": "a"}, annotations={"volcano.sh/preemptable": "true"},
                         creationTimestamp="2024-01-01T00:00:00Z")
    pg, pods = expand_job(j)
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1" and pg["kind"] == "PodGroup"
    assert pg["metadata"]["labels"] == {"team": "a"}
    assert pg["metadata"]["annotations"] == {"volcano.sh/preemptable": "true"}
    assert pg["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert {p["metadata"]["creationTimestamp"] for p in pods} == {"2024-01-01T00:00:00Z"}
    assert pg["spec"]["queue"] == "default" and "priorityClassName" not in pg["spec"]
    assert pg["status"] == {"phase": "Pending"}
    assert "creationTimestamp" not in expand_job(job(*PS_WORKER))[1][0]["metadata"]


def test_input_not_mutated():
    j = job(*PS_WORKER)
    before = copy.deepcopy(j)
    _, pods = expand_job(j)
    pods[0]["spec"]["containers"][0]["image"] = "changed"
    assert j == before


# ---- scheduler name / priority class -----------------------------------------------------
def test_scheduler_name_default_job_and_template():
    t = task("own", 1, cpu="1")
    t["template"]["spec"]["schedulerName"] = "custom"
    _, pods = expand_job(job(task("a", 1, cpu="1"), t))
    assert [p["spec"]["schedulerName"] for p in pods] == ["volcano", "custom"]
    _, pods = expand_job(job(task("a", 1, cpu="1"), t, schedulerName="kube"))
    assert [p["spec"]["schedulerName"] for p in pods] == ["kube", "custom"]


def test_priority_class_template_wins_over_job():
    pg, pods = expand_job(job(task("a", 1, cpu="1", pc="high"), task("b", 1, cpu="1"), priorityClassName="low"))
    assert [p["spec"]["priorityClassName"] for p in pods] == ["high", "low"]
    assert pg["spec"]["priorityClassName"] == "low"
    _, pods = expand_job(job(task("a", 1, cpu="1")))
    assert "priorityClassName" not in pods[0]["spec"]


def test_host_network_gets_cluster_first_with_host_net():
    t = task("a", 1, cpu="1")
    t["template"]["spec"]["hostNetwork"] = True
    assert expand_job(job(t))[1][0]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"


# ---- minMember / minTaskMember -----------------------------------------------------------
@pytest.mark.parametrize("spec,tasks,min_member,min_task", [
    ({}, PS_WORKER, 4, {"ps": 1, "worker": 3}),
    ({"minAvailable": 0}, PS_WORKER, 4, {"ps": 1, "worker": 3}),           # 0 is defaulted too
    ({"minAvailable": 2}, PS_WORKER, 2, {"ps": 1, "worker": 3}),
    ({}, (task("ps", 1, cpu="1"), task("worker", 3, cpu="2", min_available=1)), 2, {"ps": 1, "worker": 1}),
    ({"minAvailable": 3}, (task("ps", 1, cpu="1"), task("worker", 3, cpu="2", min_available=0)), 3,
     {"ps": 1, "worker": 0}),
])
def test_min_member_and_min_task_member(spec, tasks, min_member, min_task):
    pg, _ = expand_job(job(*tasks, **spec))
    assert pg["spec"]["minMember"] == min_member
    assert pg["spec"]["minTaskMember"] == min_task


# ---- minResources ------------------------------------------------------------------------
def cpu_pods(n_pods, cpu):
    return {"count/pods": str(n_pods), "pods": str(n_pods), "cpu": cpu, "requests.cpu": cpu}


@pytest.mark.parametrize("tasks,min_available,pcs,job_pc,expected", [
    # minAvailable 3 < sum(task minAvailable)=4: first 3 pods in spec order (equal priority): ps + 2 workers
    (PS_WORKER, 3, None, None, cpu_pods(3, "5")),
    # worker's template priority class is higher: 3 workers first
    ((task("ps", 1, cpu="1"), task("worker", 3, cpu="2", pc="high")), 3, {"high": 100}, None, cpu_pods(3, "6")),
    # an unknown priority class counts as 0; ties keep spec order
    ((task("ps", 1, cpu="1", pc="nope"), task("worker", 3, cpu="2")), 3, None, None, cpu_pods(3, "5")),
    # only template priority classes order tasks: worker would inherit the job's "high" on its pods, but
    # calcPGMinResources reads task.Template.Spec.PriorityClassName, so ps ("low"=1) beats worker (0)
    ((task("ps", 1, cpu="1", pc="low"), task("worker", 3, cpu="2")), 1, {"high": 100, "low": 1}, "high",
     cpu_pods(1, "1")),
    # minAvailable 2 < sum(task minAvailable)=3: the first 2 pods by replicas (2 ps), not by task minAvailable
    ((task("ps", 3, cpu="1", min_available=1), task("worker", 2, cpu="2")), 2, None, None, cpu_pods(2, "2")),
    # defaulted: all pods
    (PS_WORKER, None, None, None, cpu_pods(4, "7")),
    # minAvailable 3 >= sum(task minAvailable)=2: ps 1 + worker 1, then 1 more worker from the rest
    ((task("ps", 1, cpu="1"), task("worker", 3, cpu="2", min_available=1)), 3, None, None, cpu_pods(3, "5")),
    # fill-up goes by priority: worker(min 0) high priority gets its minAvailable 0 then fills 2
    ((task("ps", 2, cpu="1", min_available=1), task("worker", 3, cpu="2", min_available=0, pc="high")), 3,
     {"high": 5}, None, cpu_pods(3, "5")),
    # same without priority: ps fills its remaining replica first
    ((task("ps", 2, cpu="1", min_available=1), task("worker", 3, cpu="2", min_available=0)), 3,
     None, None, cpu_pods(3, "4")),
    # milli and memory quantities sum exactly
    ((task("a", 3, cpu="250m", memory="1Gi"),), 3, None, None,
     {"count/pods": "3", "pods": "3", "cpu": "750m", "requests.cpu": "750m",
      "memory": str(3 * 2**30), "requests.memory": str(3 * 2**30)}),
])
def test_min_resources(tasks, min_available, pcs, job_pc, expected):
    spec = {"priorityClassName": job_pc} if job_pc else {}
    if min_available is not None:
        spec["minAvailable"] = min_available
    pg, _ = expand_job(job(*tasks, **spec), priority_classes=pcs)
    assert pg["spec"]["minResources"] == expected


def test_min_resources_pod_usage_keys():
    spec = {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": "1", "nvidia.com/gpu": 2, "hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"},
        "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 2}}}],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
        "overhead": {"cpu": "100m", "memory": "10Mi"}}
    j = job({"name": "t", "replicas": 2, "template": {"spec": spec}})
    pg, _ = expand_job(j)
    # requests: cpu max(1, init 3) + 100m overhead; memory has no request (a vcjob template is not defaulted
    # from limits) but gets the overhead; limits: only set limits get overhead.
    assert pg["spec"]["minResources"] == {
        "count/pods": "2", "pods": "2",
        "cpu": "6200m", "requests.cpu": "6200m", "limits.cpu": "4200m",
        "memory": str(2 * 10 * 2**20), "requests.memory": str(2 * 10 * 2**20),
        "limits.memory": str(2 * (2**30 + 10 * 2**20)),
        "ephemeral-storage": str(2 * 2**30), "requests.ephemeral-storage": str(2 * 2**30),
        "hugepages-2Mi": str(8 * 2**20), "requests.hugepages-2Mi": str(8 * 2**20),
        "nvidia.com/gpu": "4", "requests.nvidia.com/gpu": "4"}


def test_overhead_adds_to_limits_only_where_a_limit_is_set():
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}], "overhead": {"memory": "10Mi"}}
    pg, _ = expand_job(job({"name": "t", "replicas": 1, "template": {"spec": spec}}))
    assert pg["spec"]["minResources"] == {"count/pods": "1", "pods": "1", "limits.cpu": "1",
                                          "memory": str(10 * 2**20), "requests.memory": str(10 * 2**20)}


def test_min_resources_sidecar_init_container():
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                               {"name": "i", "resources": {"requests": {"cpu": "2"}}}]}
    pg, _ = expand_job(job({"name": "t", "replicas": 1, "template": {"spec": spec}}))
    assert pg["spec"]["minResources"]["cpu"] == "2500m"       # max(1 + 0.5, 2 + 0.5)


def test_expanded_pods_parse_as_caldera_pods():
    _, pods = expand_job(job(*PS_WORKER, priorityClassName="low"))
    p = Pod(pods[1])
    assert p.key == "team/tf-worker-0" and p.requests == {"cpu": 2000}
    assert p.scheduler_name == "volcano" and p.priority_class_name == "low"


def test_policies_and_plugins_are_ignored():
    base = expand_job(job(*PS_WORKER))
    other = expand_job(job(*PS_WORKER, policies=[{"event": "PodEvicted", "action": "RestartJob"}],
                           plugins={"ssh": [], "svc": []}))
    assert base == other


# ---- validation --------------------------------------------------------------------------
def bad(mutate):
    j = job(*copy.deepcopy(PS_WORKER))
    mutate(j)
    return j


@pytest.mark.parametrize("mutate,match", [
    (lambda j: j["spec"].pop("tasks"), r"^spec\.tasks: No task specified in job spec; add"),
    (lambda j: j["spec"].update(tasks=[]), r"^spec\.tasks: No task specified"),
    (lambda j: j["spec"].update(tasks={"a": 1}), r"^spec\.tasks: must be a list"),
    (lambda j: j["spec"]["tasks"][1].update(name="ps"), r"^spec\.tasks\[1\]\.name: duplicated task name ps; give"),
    (lambda j: j["spec"]["tasks"][0].update(replicas=-1), r"^spec\.tasks\[0\]\.replicas: 'replicas' < 0 in task ps"),
    (lambda j: j["spec"]["tasks"][0].update(replicas="2"), r"^spec\.tasks\[0\]\.replicas: must be an integer"),
    (lambda j: j["spec"]["tasks"][0].update(minAvailable=-1), r"^spec\.tasks\[0\]\.minAvailable: 'minAvailable' < 0"),
    (lambda j: j["spec"]["tasks"][1].update(minAvailable=4),
     r"^spec\.tasks\[1\]\.minAvailable: 'minAvailable' is greater than 'replicas' in task worker \(4 > 3\); lower"),
    (lambda j: j["spec"].update(minAvailable=5),
     r"^spec\.minAvailable: job 'minAvailable' should not be greater than total replicas in tasks \(5 > 4\); lower"),
    (lambda j: j["spec"].update(minAvailable=-1), r"^spec\.minAvailable: job 'minAvailable' must be >= 0"),
    (lambda j: j["spec"]["tasks"][0].update(template="pod"),
     r"^spec\.tasks\[0\]\.template: must be a mapping \(a pod template with metadata and spec\), got str$"),
    (lambda j: j["spec"]["tasks"][0].update(template=["x"]), r"^spec\.tasks\[0\]\.template: must be a mapping"),
    (lambda j: j["spec"]["tasks"][0].pop("template"), r"^spec\.tasks\[0\]\.template: required"),
    (lambda j: j["spec"]["tasks"][0]["template"].update(spec={}),
     r"^spec\.tasks\[0\]\.template\.spec\.containers: Required"),
    (lambda j: j["spec"]["tasks"][0]["template"].update(spec=[]),
     r"^spec\.tasks\[0\]\.template\.spec: must be a mapping"),
    (lambda j: j["spec"]["tasks"][0].update(name="PS"),
     r"^spec\.tasks\[0\]\.name: invalid task name 'PS': a lowercase RFC 1123 label must consist"),
    (lambda j: j["spec"]["tasks"].__setitem__(0, "ps"), r"^spec\.tasks\[0\]: must be a mapping"),
    (lambda j: j["metadata"].pop("name"), r"^metadata\.name: required"),
    (lambda j: j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"].update(cpu="x"),
     r"^spec\.tasks\[0\]\.template\.spec\.containers\[0\]\.resources\.requests\.cpu: invalid quantity"),
])
def test_validation_errors(mutate, match):
    with pytest.raises(InputError, match=match) as e:
        expand_job(bad(mutate))
    assert "\n" not in str(e.value)


def test_task_min_available_equal_to_replicas_and_job_min_equal_total_are_valid():
    pg, pods = expand_job(job(task("a", 2, cpu="1", min_available=2), minAvailable=2))
    assert pg["spec"]["minMember"] == 2 and len(pods) == 2
