"""read_cluster / read_workload: the trace formats `caldera simulate` reads, and their errors."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from caldera.errors import InputError
from caldera.sim.traces import read_cluster, read_workload

OPENB = Path("/work/shared/data/openb")
needs_openb = pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not available")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return str(path)


def error(paths: list[str], reader=read_workload) -> str:
    with pytest.raises(InputError) as e:
        reader(paths)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# ---- Caldera CSV ------------------------------------------------------------------------------
CALDERA = """
    job,arrival,duration,tasks,min_available,cpu,memory,gpu,queue,priority,namespace,labels
    web,0,,1,,500m,1Gi,0,,,,app=web;tier=front
    train,12.5,3600,3,2,2,4Gi,1,research,100,ml,
    solo,3,60,,,1,,,team-a,-5,,
    """


def test_caldera_csv_rows_become_pods(tmp_path):
    w = read_workload([write(tmp_path, "trace.csv", CALDERA)])
    assert [sp.pod.key for sp in w.pods] == ["default/web-0", "ml/train-0", "ml/train-1", "ml/train-2",
                                             "default/solo-0"]
    assert [sp.pod.seq for sp in w.pods] == [0, 1, 2, 3, 4]
    web, train0, solo = w.pods[0], w.pods[1], w.pods[4]
    assert (web.arrival, web.duration, web.grace) == (0.0, None, 30.0)
    assert web.pod.requests == {"cpu": 500, "memory": 2**30}
    assert web.pod.labels == {"app": "web", "tier": "front"}
    assert web.pod.scheduler_name == "default-scheduler"
    assert web.pod.priority == 0 and not web.pod.annotations
    assert (train0.arrival, train0.duration) == (12.5, 3600.0)
    assert train0.pod.requests == {"cpu": 2000, "memory": 4 * 2**30, "nvidia.com/gpu": 1}
    assert train0.pod.priority == 100
    assert train0.pod.annotations == {"scheduling.k8s.io/group-name": "train",
                                      "scheduling.volcano.sh/queue-name": "research"}
    assert solo.pod.priority == -5 and solo.pod.requests == {"cpu": 1000}
    assert solo.pod.annotations == {"scheduling.volcano.sh/queue-name": "team-a"}


def test_caldera_csv_gangs_get_a_podgroup(tmp_path):
    w = read_workload([write(tmp_path, "trace.csv", CALDERA)])
    assert len(w.volcano_objects) == 1               # only train: tasks > 1 (web and solo are single pods)
    source, pg = w.volcano_objects[0]
    assert source.endswith("trace.csv")
    assert pg["kind"] == "PodGroup" and pg["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert pg["metadata"]["name"] == "train" and pg["metadata"]["namespace"] == "ml"
    assert pg["metadata"]["annotations"] == {"simulation.caldera/arrival": "12.5",
                                             "simulation.caldera/duration": "3600"}
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["queue"] == "research"
    assert pg["spec"]["minResources"] == {"cpu": "4", "memory": str(8 * 2**30), "nvidia.com/gpu": "2"}


def test_caldera_csv_min_available_alone_makes_a_gang(tmp_path):
    w = read_workload([write(tmp_path, "t.csv", "job,arrival,min_available\nj,0,1\n")])
    assert len(w.pods) == 1 and w.pods[0].pod.annotations["scheduling.k8s.io/group-name"] == "j"
    assert w.volcano_objects[0][1]["spec"] == {"minMember": 1, "queue": "default", "minResources": {}}


def test_caldera_csv_scheduler(tmp_path):
    path = write(tmp_path, "t.csv", "job,arrival,scheduler\na,0,\nb,0,custom\n")
    assert [sp.pod.scheduler_name for sp in read_workload([path]).pods] == ["default-scheduler", "custom"]
    w = read_workload([path], default_scheduler="volcano")
    assert [sp.pod.scheduler_name for sp in w.pods] == ["volcano", "custom"]


def test_caldera_csv_minimal_columns_in_any_order(tmp_path):
    w = read_workload([write(tmp_path, "t.csv", "arrival,job\n1,a\n")])
    assert len(w.pods) == 1 and w.pods[0].arrival == 1.0 and w.pods[0].pod.requests == {}


# ---- openb CSVs -------------------------------------------------------------------------------
OPENB_PODS = """
    name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
    p0,12000,16384,1,1000,,LS,Running,0,100,0
    p1,6000,12288,1,460,nan,LS,Running,50,,50
    p2,8000,1024,4,1000,V100M16|V100M32,LS,Running,,70,
    p3,4000,2048,0,0,T4,BE,Failed,10,20,10
    """


def test_openb_pods(tmp_path):
    w = read_workload([write(tmp_path, "pods.csv", OPENB_PODS)])
    p0, p1, p2, p3 = w.pods
    assert [sp.pod.key for sp in w.pods] == ["openb/p0", "openb/p1", "openb/p2", "openb/p3"]
    assert (p0.arrival, p0.duration) == (0.0, 100.0)
    assert (p1.arrival, p1.duration) == (50.0, None)
    assert (p2.arrival, p2.duration) == (0.0, None)
    assert (p3.arrival, p3.duration) == (10.0, 10.0)
    assert p0.pod.requests == {"cpu": 12000, "memory": 16384 * 2**20, "alibabacloud.com/gpu-milli": 1000,
                               "nvidia.com/gpu": 1}
    assert p1.pod.requests == {"cpu": 6000, "memory": 12288 * 2**20, "alibabacloud.com/gpu-milli": 460}
    assert p2.pod.requests["nvidia.com/gpu"] == 4 and p2.pod.requests["alibabacloud.com/gpu-milli"] == 4000
    assert p3.pod.requests == {"cpu": 4000, "memory": 2048 * 2**20}
    assert not p0.pod.affinity and not p1.pod.affinity and not p3.pod.affinity   # any model / CPU-only
    terms = p2.pod.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                            "values": ["V100M16", "V100M32"]}]}]


def test_openb_pods_without_times(tmp_path):
    w = read_workload([write(tmp_path, "multigpu.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                                          "a,1000,10,8,1000\n")])
    assert (w.pods[0].arrival, w.pods[0].duration) == (0.0, None)
    assert w.pods[0].pod.requests["nvidia.com/gpu"] == 8


def test_openb_nodes(tmp_path):
    path = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,32000,1024,0,\n")
    c = read_cluster([path])
    n0, n1 = c.nodes
    assert n0.name == "n0"
    assert n0.labels == {"kubernetes.io/hostname": "n0", "nvidia.com/gpu.product": "P100"}
    assert n0.allocatable == n0.capacity == {"cpu": 64000, "memory": 262144 * 2**20, "pods": 1001,
                                             "nvidia.com/gpu": 2, "alibabacloud.com/gpu-milli": 2000}
    assert n1.labels == {"kubernetes.io/hostname": "n1"}
    assert n1.allocatable == {"cpu": 32000, "memory": 2**30, "pods": 1001}


@needs_openb
def test_real_openb_default_trace():
    w = read_workload([str(OPENB / "openb_pod_list_default.csv")])
    assert len(w.pods) == 8152
    first = w.pods[0]
    assert first.pod.key == "openb/openb-pod-0000"
    assert (first.arrival, first.duration) == (0.0, 12537496.0)
    assert first.pod.requests == {"cpu": 12000, "memory": 16384 * 2**20, "alibabacloud.com/gpu-milli": 1000,
                                  "nvidia.com/gpu": 1}
    second = w.pods[1]
    assert (second.arrival, second.duration) == (427061.0, 12902960.0 - 427061.0)
    assert second.pod.requests["alibabacloud.com/gpu-milli"] == 460 and "nvidia.com/gpu" not in second.pod.requests
    assert [sp.pod.seq for sp in w.pods] == list(range(8152))
    assert sum(sp.pod.requests.get("alibabacloud.com/gpu-milli", 0) for sp in w.pods) / 6_212_000 == \
        pytest.approx(0.980, abs=0.001)               # EXPERIMENT.md: 98.0 % of the capacity


@needs_openb
def test_real_openb_gpu_nodes():
    c = read_cluster([str(OPENB / "openb_node_list_gpu_node.csv")])
    assert len(c.nodes) == 1213
    assert sum(n.allocatable["nvidia.com/gpu"] for n in c.nodes) == 6212
    assert sum(n.allocatable["alibabacloud.com/gpu-milli"] for n in c.nodes) == 6_212_000
    assert sum(n.allocatable["cpu"] for n in c.nodes) == 107_018_000
    assert sum(n.allocatable["memory"] for n in c.nodes) == 503_828_480 * 2**20


# ---- manifests --------------------------------------------------------------------------------
PODS_YAML = """
    apiVersion: scheduling.k8s.io/v1
    kind: PriorityClass
    metadata: {name: high}
    value: 1000
    ---
    apiVersion: v1
    kind: Pod
    metadata:
      name: a
      annotations: {simulation.caldera/arrival: "5", simulation.caldera/duration: "60.5"}
    spec:
      priorityClassName: high
      terminationGracePeriodSeconds: 10
      containers: [{name: c, resources: {requests: {cpu: 100m}}}]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: b, namespace: other}
    spec:
      schedulerName: mine
      containers: [{name: c}]
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: s}
    """


def test_manifest_pods(tmp_path):
    w = read_workload([write(tmp_path, "pods.yaml", PODS_YAML)])
    a, b = w.pods
    assert (a.pod.key, a.arrival, a.duration, a.grace) == ("default/a", 5.0, 60.5, 10.0)
    assert a.pod.priority == 1000 and a.pod.scheduler_name == "default-scheduler"
    assert (b.pod.key, b.arrival, b.duration, b.grace) == ("other/b", 0.0, None, 30.0)
    assert b.pod.scheduler_name == "mine"
    assert set(w.priority_classes) == {"high"}
    assert any("Service" in m and "skipped" in m for m in w.warnings)


def test_default_scheduler_applies_to_manifest_pods_that_name_none(tmp_path):
    w = read_workload([write(tmp_path, "pods.yaml", PODS_YAML)], default_scheduler="volcano")
    assert [sp.pod.scheduler_name for sp in w.pods] == ["volcano", "mine"]


def test_priority_classes_global_default_and_given(tmp_path):
    from caldera.api.objects import PriorityClass
    pods = write(tmp_path, "pods.yaml", """
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: base}
        value: 7
        globalDefault: true
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: a}
        spec: {containers: [{name: c}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: b}
        spec: {priorityClassName: from-cluster, containers: [{name: c}]}
        """)
    given = {"from-cluster": PriorityClass({"metadata": {"name": "from-cluster"}, "value": 42})}
    w = read_workload([pods], priority_classes=given)
    assert [sp.pod.priority for sp in w.pods] == [7, 42]
    w = read_workload([pods])
    assert [sp.pod.priority for sp in w.pods] == [7, 0]
    assert any("from-cluster" in m and "not found" in m for m in w.warnings)


VCJOB_YAML = """
    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata:
      name: train
      annotations: {simulation.caldera/arrival: "100", simulation.caldera/duration: "50"}
    spec:
      minAvailable: 2
      queue: research
      tasks:
      - name: ps
        replicas: 1
        template:
          metadata: {annotations: {simulation.caldera/arrival: "90", simulation.caldera/duration: "500"}}
          spec: {terminationGracePeriodSeconds: 5, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
      - name: worker
        replicas: 2
        template:
          spec: {containers: [{name: c, resources: {requests: {cpu: "2"}}}]}
    ---
    apiVersion: scheduling.volcano.sh/v1beta1
    kind: Queue
    metadata: {name: research}
    spec: {weight: 2}
    ---
    apiVersion: scheduling.volcano.sh/v1beta1
    kind: PodGroup
    metadata: {name: pg, annotations: {simulation.caldera/arrival: "7"}}
    spec: {minMember: 1}
    """


def test_volcano_job_queue_and_podgroup(tmp_path):
    w = read_workload([write(tmp_path, "jobs.yaml", VCJOB_YAML)])
    assert [sp.pod.name for sp in w.pods] == ["train-ps-0", "train-worker-0", "train-worker-1"]
    ps, w0, w1 = w.pods
    assert (w1.arrival, w1.duration) == (100.0, 50.0)
    assert (ps.arrival, ps.duration, ps.grace) == (90.0, 500.0, 5.0)     # the template's own
    assert (w0.arrival, w0.duration, w0.grace) == (100.0, 50.0, 30.0)    # the job's
    assert w0.pod.scheduler_name == "volcano"
    assert w0.pod.annotations["scheduling.k8s.io/group-name"] == "train"
    kinds = [(doc["kind"], doc["metadata"]["name"]) for _, doc in w.volcano_objects]
    assert kinds == [("PodGroup", "train"), ("Queue", "research"), ("PodGroup", "pg")]
    assert w.volcano_objects[0][1]["spec"]["minMember"] == 2


NODES_YAML = """
    apiVersion: v1
    kind: Node
    metadata:
      name: late
      annotations: {simulation.caldera/arrival: "60", simulation.caldera/remove: "600", simulation.caldera/cordon: "60"}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    ---
    apiVersion: v1
    kind: Node
    metadata:
      name: old
      annotations: {simulation.caldera/cordon: "30", simulation.caldera/uncordon: "90"}
    """


def test_node_events(tmp_path):
    w = read_workload([write(tmp_path, "nodes.yaml", NODES_YAML)])
    events = [(e.time, e.action, e.name) for e in w.node_events]
    assert events == [(30.0, "cordon", "old"), (60.0, "add", "late"), (60.0, "cordon", "late"),
                      (90.0, "uncordon", "old"), (600.0, "remove", "late")]
    add = w.node_events[1]
    assert add.node is not None and add.node.allocatable["cpu"] == 4000
    assert all(e.node is None for e in w.node_events if e.action != "add")


def test_directory_mixes_formats_in_sorted_order(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    write(d, "b.csv", "job,arrival\nx,1\n")
    write(d, "a.yaml", PODS_YAML)
    write(d, "c.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nq,1,1,0,0\n")
    write(d, "notes.txt", "ignored")
    w = read_workload([str(d)])
    assert [sp.pod.key for sp in w.pods] == ["default/a", "other/b", "default/x-0", "openb/q"]
    assert [sp.pod.seq for sp in w.pods] == [0, 1, 2, 3]


def test_read_cluster_manifests_and_node_csv(tmp_path):
    manifests = write(tmp_path, "cluster.yaml", """
        apiVersion: v1
        kind: Node
        metadata: {name: m0}
        status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: running}
        spec: {nodeName: n0, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
        """)
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,1,T4\n")
    c = read_cluster([nodes, manifests])
    assert [n.name for n in c.nodes] == ["n0", "m0"]
    assert [(p.key, p.node_name) for p in c.pods] == [("default/running", "n0")]
    assert [n.name for n in read_cluster([manifests, nodes]).nodes] == ["m0", "n0"]


# ---- errors -------------------------------------------------------------------------------------
def test_missing_column(tmp_path):
    msg = error([write(tmp_path, "trace.csv", "job,duration\na,1\n")])
    assert msg.startswith(f"{tmp_path}/trace.csv: row 1 (header): missing column 'arrival'")


def test_negative_duration_caldera(tmp_path):
    msg = error([write(tmp_path, "trace.csv", "job,arrival,duration\na,0,1\nb,0,-5\n")])
    assert msg == f"{tmp_path}/trace.csv: row 3: duration: must be a number >= 0, got '-5'"


def test_negative_duration_openb(tmp_path):
    path = write(tmp_path, "pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
                                       "a,1,1,0,0,100,50\n")
    assert error([path]).startswith(f"{path}: row 2: deletion_time: 50 is before creation_time 100")


@pytest.mark.parametrize(("row", "column"), [("a,x", "arrival"), ("a,1,,2.5", "tasks"), ("a,1,,,,lots", "cpu"),
                                             ("a,1,,,,,,many", "gpu"), ("a,1,,,,,,,,high", "priority"),
                                             ("a,nan", "arrival"), ("a,1,,2,3", "min_available")])
def test_unparseable_caldera_cells(tmp_path, row, column):
    header = "job,arrival,duration,tasks,min_available,cpu,memory,gpu,queue,priority\n"
    msg = error([write(tmp_path, "trace.csv", header + row + ",,,,,,,,,,"[: 9 - row.count(",")] + "\n")])
    assert msg.startswith(f"{tmp_path}/trace.csv: row 2: {column}: ")


def test_unparseable_openb_number(tmp_path):
    path = write(tmp_path, "pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,0,0\nb,12k,1,0,0\n")
    assert error([path]) == f"{path}: row 3: cpu_milli: must be a whole number >= 0, got '12k'"
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,-1,T4\n")
    assert error([nodes], read_cluster) == f"{nodes}: row 2: gpu: must be a whole number >= 0, got '-1'"


def test_pod_with_node_name_in_workload(tmp_path):
    path = write(tmp_path, "pods.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: bound}
        spec: {nodeName: n1, containers: [{name: c}]}
        """)
    msg = error([path])
    assert msg.startswith(f"{path}: Pod bound: spec.nodeName:") and "--cluster" in msg


def test_unknown_csv_header(tmp_path):
    path = write(tmp_path, "trace.csv", "a,b,c\n1,2,3\n")
    msg = error([path])
    assert msg.startswith(f"{path}: row 1: unknown CSV header 'a,b,c'")
    assert error([path], read_cluster).startswith(f"{path}: row 1: unknown CSV header")


def test_unknown_caldera_column(tmp_path):
    msg = error([write(tmp_path, "trace.csv", "job,arrival,memroy\na,0,1Gi\n")])
    assert "row 1 (header): unknown column 'memroy'" in msg


def test_formats_given_to_the_wrong_reader(tmp_path):
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,0,\n")
    assert "--cluster" in error([nodes])
    trace = write(tmp_path, "trace.csv", "job,arrival\na,0\n")
    assert "--workload" in error([trace], read_cluster)


def test_duplicate_names(tmp_path):
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,0,\nm,1,1,0,\nn,1,1,0,\n")
    assert error([nodes], read_cluster) == f"{nodes}: row 4: duplicate Node name 'n': every node needs its own name"
    trace = write(tmp_path, "trace.csv", "job,arrival,tasks\na,0,2\na,5,1\n")
    assert error([trace]).startswith(f"{trace}: row 3: duplicate Pod default/a-0")


def test_bad_manifest_inputs(tmp_path):
    bad_arrival = write(tmp_path, "a.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: p, annotations: {simulation.caldera/arrival: soon}}
        spec: {containers: [{name: c}]}
        """)
    assert error([bad_arrival]) == (f"{bad_arrival}: Pod p: metadata.annotations[simulation.caldera/arrival]: "
                                    "must be a number of seconds >= 0, got 'soon'")
    plain_node = write(tmp_path, "n.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    assert error([plain_node]).startswith(f"{plain_node}: Node n: a Node in the workload is a node event")
    early = write(tmp_path, "e.yaml", """
        apiVersion: v1
        kind: Node
        metadata: {name: n, annotations: {simulation.caldera/arrival: "10", simulation.caldera/remove: "5"}}
        """)
    assert "is before the node joins" in error([early])
    broken = write(tmp_path, "broken.yaml", "kind: Pod\nmetadata: {name: [\n")
    assert error([broken]).startswith(f"{broken}: malformed YAML")
    assert error([str(tmp_path / "missing.csv")]) == f"{tmp_path}/missing.csv: no such file or directory"


def test_short_rows_and_extra_cells(tmp_path):
    w = read_workload([write(tmp_path, "trace.csv", "job,arrival,duration,cpu\na,1\n\nb,2,3\n")])
    assert [(sp.pod.name, sp.arrival, sp.duration) for sp in w.pods] == [("a-0", 1.0, None), ("b-0", 2.0, 3.0)]
    path = write(tmp_path, "wide.csv", "job,arrival\na,1,2\n")
    assert error([path]) == f"{path}: row 2: 3 cells, but the header has 2 columns"


def test_manifests_from_stdin(monkeypatch):
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                                                 "spec: {containers: [{name: c}]}\n"))
    w = read_workload(["-"])
    assert [sp.pod.key for sp in w.pods] == ["default/p"]


def test_duplicate_podgroups_and_finished_pods(tmp_path):
    pg = write(tmp_path, "pg.yaml", """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: train}
        spec: {minMember: 1}
        """)
    trace = write(tmp_path, "trace.csv", "job,arrival,tasks\ntrain,0,2\n")
    assert error([pg, trace]) == (f"{trace}: row 2: duplicate PodGroup default/train: it is already defined "
                                  "earlier in the workload")
    done = write(tmp_path, "done.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: done}
        spec: {containers: [{name: c}]}
        status: {phase: Succeeded}
        """)
    w = read_workload([done])
    assert not w.pods and w.warnings == [f"{done}: Pod done: status.phase is Succeeded, a finished pod; skipped"]


def test_manifest_pods_get_the_api_servers_checks(tmp_path):
    """As `caldera schedule`'s input: a pod the API server would refuse is a one-line error
    naming the file and the pod (here requests above limits), also in a Volcano Job's pods."""
    pods = write(tmp_path, "pods.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: greedy, namespace: default}
        spec:
          containers:
          - name: c
            image: busybox
            resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}
        """)
    msg = error([pods])
    assert "pods.yaml" in msg and "greedy" in msg and "must be less than or equal to cpu limit" in msg


def test_workload_priority_classes_follow_the_api_servers_rules(tmp_path):
    """scheduling.k8s.io/v1 only, and no second globalDefault, as in `caldera schedule`."""
    old = write(tmp_path, "old.yaml", """
        apiVersion: scheduling.k8s.io/v1beta1
        kind: PriorityClass
        metadata: {name: high}
        value: 1000
        """)
    assert "old.yaml" in error([old]) and "scheduling.k8s.io/v1" in error([old])
    two = write(tmp_path, "two.yaml", """
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: a}
        value: 1
        globalDefault: true
        ---
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: b}
        value: 2
        globalDefault: true
        """)
    assert "PriorityClass a is already marked as default" in error([two])
