"""Smoke test of the live control plane (scripts/control-plane): a real kube-apiserver of the built
version, backed by a real etcd, with authentication and RBAC on."""
from __future__ import annotations

import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


def test_version_is_the_built_release(control_plane, k8s_admin):
    info = client.VersionApi(k8s_admin).get_code()
    assert info.git_version == control_plane.version
    assert control_plane.version.startswith("v1.")
    assert info.major == "1" and info.minor == control_plane.version.split(".")[1]


def test_node_and_pod_round_trip(k8s_admin):
    core = client.CoreV1Api(k8s_admin)
    tag = uuid.uuid4().hex[:8]
    node_name, pod_name = f"smoke-node-{tag}", f"smoke-pod-{tag}"
    node = client.V1Node(
        metadata=client.V1ObjectMeta(name=node_name, labels={"caldera-smoke": tag}),
        spec=client.V1NodeSpec(taints=[client.V1Taint(key="dedicated", value="x", effect="NoSchedule")]))
    core.create_node(node)
    try:
        # Node status is a subresource: set capacity the way a kubelet would.
        core.patch_node_status(node_name, {"status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "fake"}]}})
        got = core.read_node(node_name)
        assert got.metadata.labels["caldera-smoke"] == tag
        # exactly our taint: TaintNodesByCondition (not-ready taint) is disabled on purpose
        assert [(t.key, t.effect) for t in got.spec.taints] == [("dedicated", "NoSchedule")]
        assert got.status.allocatable["cpu"] == "4"

        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name=pod_name, namespace="default"),
            spec=client.V1PodSpec(
                scheduler_name="caldera",
                containers=[client.V1Container(
                    name="c", image="registry.k8s.io/pause:3.10",
                    resources=client.V1ResourceRequirements(requests={"cpu": "100m", "memory": "64Mi"}))]))
        core.create_namespaced_pod("default", pod)
        try:
            p = core.read_namespaced_pod(pod_name, "default")
            assert p.spec.scheduler_name == "caldera"
            assert p.spec.node_name is None
            assert p.status.phase == "Pending"
            assert p.spec.containers[0].resources.requests == {"cpu": "100m", "memory": "64Mi"}
            # default admission ran (Priority, DefaultTolerationSeconds), ServiceAccount did not
            assert p.spec.priority == 0
            assert {t.key for t in p.spec.tolerations} == {
                "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
            assert not p.spec.volumes
            pods = core.list_namespaced_pod("default", field_selector=f"metadata.name={pod_name}")
            assert [x.metadata.name for x in pods.items] == [pod_name]
        finally:
            core.delete_namespaced_pod(pod_name, "default", grace_period_seconds=0)
    finally:
        core.delete_node(node_name)
    with pytest.raises(ApiException) as e:
        core.read_node(node_name)
    assert e.value.status == 404


def test_scheduler_token_is_denied_without_rbac(k8s_scheduler):
    core = client.CoreV1Api(k8s_scheduler)
    with pytest.raises(ApiException) as e:
        core.list_pod_for_all_namespaces()
    assert e.value.status == 403
    assert "caldera-scheduler" in e.value.body


def test_scheduler_token_works_once_rbac_grants_it(k8s_admin, k8s_scheduler):
    rbac = client.RbacAuthorizationV1Api(k8s_admin)
    name = f"caldera-smoke-{uuid.uuid4().hex[:8]}"
    rbac.create_cluster_role(client.V1ClusterRole(
        metadata=client.V1ObjectMeta(name=name),
        rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["list"])]))
    rbac.create_cluster_role_binding(client.V1ClusterRoleBinding(
        metadata=client.V1ObjectMeta(name=name),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=name),
        subjects=[client.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="User",
                                       name="caldera-scheduler")]))
    try:
        core = client.CoreV1Api(k8s_scheduler)
        deadline = time.monotonic() + 10   # the RBAC authorizer reads from an informer cache
        while True:
            try:
                core.list_pod_for_all_namespaces()
                break
            except ApiException as e:
                if e.status != 403 or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with pytest.raises(ApiException) as e:   # only what was granted
            core.list_node()
        assert e.value.status == 403
    finally:
        rbac.delete_cluster_role_binding(name)
        rbac.delete_cluster_role(name)
