"""scheduling.k8s.io/v1alpha1 Workload and spec.workloadRef (api/workload.py): decoded, and refused
with the API server's validation messages (pkg/apis/scheduling/validation ValidateWorkload, core
validateWorkloadReference) as one-line errors naming the file and object."""
from __future__ import annotations

import pytest
import yaml

from caldera.api.loader import load_cluster
from caldera.api.workload import check_workload_ref, parse_workload, workload_ref
from caldera.errors import InputError


def wl(spec, name="job", ns="default"):
    return {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_decodes_groups_and_policies():
    w = parse_workload(wl({"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
                           "podGroups": [{"name": "a", "policy": {"gang": {"minCount": 3}}},
                                         {"name": "b", "policy": {"basic": {}}}]}))
    assert w.key == "default/job"
    assert w.policy("a").gang_min_count == 3
    assert w.policy("b").gang_min_count is None
    assert w.policy("c") is None


BAD = [
    ({"podGroups": []}, "spec.podGroups: Required value: must have at least one item"),
    ({}, "spec.podGroups: Required value: must have at least one item"),
    ({"podGroups": [{"name": f"g{i}", "policy": {"basic": {}}} for i in range(9)]},
     "spec.podGroups: Too many: 9: must have at most 8 items"),
    ({"podGroups": [{"name": "a", "policy": {"gang": {"minCount": 0}}}]},
     "spec.podGroups[0].policy.gang.minCount: Invalid value: 0: must be greater than zero"),
    ({"podGroups": [{"name": "a", "policy": {"gang": {}}}]},
     "spec.podGroups[0].policy.gang.minCount: Invalid value: 0: must be greater than zero"),
    ({"podGroups": [{"name": "a", "policy": {}}]},
     "spec.podGroups[0].policy: Required value: exactly one of `basic`, `gang` is required"),
    ({"podGroups": [{"name": "a", "policy": {"basic": {}, "gang": {"minCount": 1}}}]},
     'spec.podGroups[0].policy: Invalid value: "{`basic`, `gang`}": exactly one of `basic`, `gang` is required, '
     "but multiple fields are set"),
    ({"podGroups": [{"name": "a", "policy": {"basic": {}}}, {"name": "a", "policy": {"basic": {}}}]},
     'spec.podGroups[1].name: Duplicate value: "a"'),
    ({"podGroups": [{"name": "A.b", "policy": {"basic": {}}}]}, 'spec.podGroups[0].name: Invalid value: "A.b": '),
    ({"controllerRef": {"name": "a/b"}, "podGroups": [{"name": "a", "policy": {"basic": {}}}]},
     "[spec.controllerRef.kind: Required value, spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/']"),
    ({"podGroups": [{"name": "a", "policy": {"gang": {"minCount": "3"}}}]},
     "spec.podGroups[0].policy.gang.minCount: must be an int32, got '3'"),
]


@pytest.mark.parametrize("spec, msg", BAD)
def test_validation(spec, msg):
    with pytest.raises(InputError) as e:
        parse_workload(wl(spec))
    assert msg in str(e.value)


@pytest.mark.parametrize("ref, msg", [
    ({"name": "w", "podGroup": "g"}, None),
    ({"name": "w", "podGroup": "g", "podGroupReplicaKey": "r-1"}, None),
    ({"name": "W", "podGroup": "g"}, 'spec.workloadRef.name: Invalid value: "W": a lowercase RFC 1123 subdomain'),
    ({"name": "w"}, 'spec.workloadRef.podGroup: Invalid value: "": a lowercase RFC 1123 label'),
    ({"name": "w", "podGroup": "g", "podGroupReplicaKey": "a.b"},
     'spec.workloadRef.podGroupReplicaKey: Invalid value: "a.b": must not contain dots'),
])
def test_workload_ref_validation(ref, msg):
    if msg is None:
        check_workload_ref({"workloadRef": ref})
        return
    with pytest.raises(InputError) as e:
        check_workload_ref({"workloadRef": ref})
    assert msg in str(e.value)


def _write(tmp_path, docs):
    p = tmp_path / "in.yaml"
    p.write_text(yaml.safe_dump_all(docs))
    return str(p)


def _pod(name, ref=None):
    spec = {"containers": [{"name": "c", "image": "i"}]}
    if ref is not None:
        spec["workloadRef"] = ref
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_loader_reads_workloads_and_refs(tmp_path):
    c = load_cluster([_write(tmp_path, [wl({"podGroups": [{"name": "g", "policy": {"gang": {"minCount": 2}}}]}),
                                        _pod("p", {"name": "job", "podGroup": "g", "podGroupReplicaKey": "0"})])])
    assert list(c.gang_workloads) == ["default/job"]
    assert workload_ref(c.pods[0]).replica_key == "0"
    assert [(i.kind, i.name) for i in c.ignored] == [("Workload", "default/job")]


def test_loader_errors_name_file_and_object(tmp_path):
    path = _write(tmp_path, [wl({"podGroups": [{"name": "g", "policy": {"gang": {"minCount": -1}}}]})])
    with pytest.raises(InputError) as e:
        load_cluster([path])
    assert str(e.value) == (f"{path}: Workload default/job: spec.podGroups[0].policy.gang.minCount: "
                            "Invalid value: -1: must be greater than zero")
    path = _write(tmp_path, [_pod("p", {"name": "job", "podGroup": "G"})])
    with pytest.raises(InputError) as e:
        load_cluster([path])
    assert str(e.value).startswith(f'{path}: Pod p: spec.workloadRef.podGroup: Invalid value: "G": ')
    w = wl({"podGroups": [{"name": "g", "policy": {"basic": {}}}]})
    with pytest.raises(InputError, match=r'workloads\.scheduling\.k8s\.io "job" already exists'):
        load_cluster([_write(tmp_path, [w, w])])
