"""GangScheduling (kube v1.35.4 framework/plugins/gangscheduling/gangscheduling_test.go), ported:
the queueing hints, and the PreEnqueue / Reserve / Permit flow over one workload manager state,
with the exact kube statuses."""
from __future__ import annotations

from typing import Any

import pytest

from caldera.api.objects import Pod
from caldera.api.workload import parse_workload
from caldera.config import featuregates
from caldera.framework.status import Code, Status
from caldera.framework.waiting import WaitingPod, WaitingPods
from caldera.plugins.gangscheduling import GangScheduling
from caldera.plugins.gangscheduling.manager import DEFAULT_SCHEDULING_TIMEOUT


@pytest.fixture(autouse=True)
def _gates():
    with featuregates.use(featuregates.parse("GenericWorkload=true,GangScheduling=true")):
        yield


def pod(name: str = "", ns: str = "default", ref: dict | None = None, uid: str = "", node: str = "") -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if ref is not None:
        spec["workloadRef"] = ref
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name or "x", "namespace": ns}
    if uid:
        meta["uid"] = uid
    return Pod({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def workload(name: str, ns: str = "default", groups: tuple = (("pg", 1),)):
    """groups: (name, minCount) for a gang group, (name, None) for a basic one."""
    pgs = [{"name": g, "policy": {"basic": {}} if mc is None else {"gang": {"minCount": mc}}} for g, mc in groups]
    return parse_workload({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
                           "metadata": {"name": name, "namespace": ns}, "spec": {"podGroups": pgs}})


class FakeHandle:
    """What the plugin asks of the framework: the pod lister (kube's workload manager is fed by
    it), the clock, the waiting pods and the pod activator (podActivatorMock)."""

    def __init__(self, pods: list[Pod]):
        self.pods = pods
        self.waiting = WaitingPods()
        self.activated: list[Pod] = []

    def list_pods(self) -> list[Pod]:
        return self.pods

    def now(self) -> float:
        return 0.0

    def activate(self, pods: list[Pod]) -> None:
        self.activated.extend(pods)

    def get_waiting_pod(self, uid: str):
        return self.waiting.get(uid)


def plugin(pods: list[Pod], workloads: list) -> tuple[GangScheduling, FakeHandle]:
    h = FakeHandle(pods)
    wls = {w.key: w for w in workloads}
    return GangScheduling({}, h, workloads=lambda: wls), h


# ---- Test_isSchedulableAfterPodAdded -------------------------------------------------------
@pytest.mark.parametrize("target, new, queue", [
    pytest.param({"name": "w1", "podGroup": "pg"}, ("default", {"name": "w1", "podGroup": "pg"}), True,
                 id="add a newPod which matches the pod's workload and pod group"),
    pytest.param({"name": "w1", "podGroup": "pg", "podGroupReplicaKey": "3"},
                 ("default", {"name": "w1", "podGroup": "pg", "podGroupReplicaKey": "3"}), True,
                 id="add a newPod which matches the pod's workload, pod group and replica key"),
    pytest.param({"name": "w1", "podGroup": "pg"}, ("foo", {"name": "w1", "podGroup": "pg"}), False,
                 id="add a newPod which doesn't match the pod's namespace"),
    pytest.param({"name": "w1", "podGroup": "pg"}, ("default", {"name": "w2", "podGroup": "pg"}), False,
                 id="add a newPod which doesn't match the pod's workload name"),
    pytest.param({"name": "w1", "podGroup": "pg"}, ("default", {"name": "w1", "podGroup": "pg2"}), False,
                 id="add a newPod which doesn't match the pod's pod group name"),
    pytest.param({"name": "w1", "podGroup": "pg", "podGroupReplicaKey": "3"},
                 ("default", {"name": "w1", "podGroup": "pg", "podGroupReplicaKey": "4"}), False,
                 id="add a newPod which doesn't match the pod's replica key"),
])
def test_is_schedulable_after_pod_added(target, new, queue):
    pl, _ = plugin([], [])
    assert pl.is_schedulable_after_pod_added(pod("p", ref=target), pod("q", ns=new[0], ref=new[1])) is queue


# ---- Test_isSchedulableAfterWorkloadAdded -------------------------------------------------
@pytest.mark.parametrize("pod_ns, ref_name, wl_ns, queue", [
    pytest.param("default", "w1", "default", True, id="add a workload which matches the pod's workload name"),
    pytest.param("default", "w2", "default", False, id="add a workload which doesn't match the pod's workload name"),
    pytest.param("ns1", "w1", "ns2", False, id="add a workload which doesn't match the pod's workload namespace"),
])
def test_is_schedulable_after_workload_added(pod_ns, ref_name, wl_ns, queue):
    pl, _ = plugin([], [])
    p = pod("p", ns=pod_ns, ref={"name": ref_name, "podGroup": "pg"})
    assert pl.is_schedulable_after_workload_added(p, workload("w1", ns=wl_ns)) is queue


def test_events_to_register():
    pl, _ = plugin([], [])
    assert pl.events_to_register() == ["Pod/Add", "Workload/Add"]


# ---- TestGangSchedulingFlow --------------------------------------------------------------
GANG = workload("gang-wl", "ns1", (("pg1", 3), ("pg2", 4)))
BASIC = workload("basic-wl", "ns1", (("pg1", None),))


def _pods() -> dict[str, Pod]:
    def ref(group, key=""):
        r = {"name": "gang-wl", "podGroup": group}
        if key:
            r["podGroupReplicaKey"] = key
        return r
    return {
        "p1": pod("p1", "ns1", ref("pg1"), "p1"), "p2": pod("p2", "ns1", ref("pg1"), "p2"),
        "p3": pod("p3", "ns1", ref("pg1"), "p3"), "p4": pod("p4", "ns1", ref("pg2"), "p4"),
        "p5": pod("p5", "ns1", ref("pg1", "2"), "p5"),
        "basic-pod": pod("basic-pod", "ns1", {"name": "basic-wl", "podGroup": "pg1"}, "basic-pod"),
        "non-gang": pod("non-gang", "ns1", None, "non-gang"),
    }


FLOW = [
    # (name, pod, initial pods, workloads, pods waiting on Permit, PreEnqueue, Permit, activated, allowed)
    ("non-gang pod succeeds immediately", "non-gang", [], [GANG, BASIC], [], None, None, [], []),
    ("basic policy pod succeeds immediately", "basic-pod", [], [GANG, BASIC], [], None, None, [], []),
    ("gang pod fails PreEnqueue when workload is not yet created", "p1", ["p2", "p3", "p4", "p5"], [], [],
     Status.unresolvable('waiting for pods\'s workload "gang-wl" to appear in scheduling queue'), None, [], []),
    ("gang pod fails PreEnqueue when quorum is not met", "p1", ["p2", "p4", "p5"], [GANG], [],
     Status.unresolvable("waiting for minCount pods from a gang to appear in scheduling queue"), None, [], []),
    ("gang pod passes PreEnqueue, but waits at Permit", "p1", ["p2", "p3", "p4", "p5"], [GANG],
     ["p2", "p4", "p5"], None, Status(Code.WAIT, "waiting for minCount pods from a gang to be waiting on permit"),
     ["p3"], []),
    ("final gang pod arrives at Permit and allows all waiting pods from a gang", "p1", ["p2", "p3", "p4", "p5"],
     [GANG], ["p2", "p3", "p4", "p5"], None, None, [], ["p2", "p3"]),
]


@pytest.mark.parametrize("name, target, initial, wls, waiting, want_pre, want_permit, want_activated, want_allowed",
                         FLOW, ids=[f[0] for f in FLOW])
def test_gang_scheduling_flow(name, target, initial, wls, waiting, want_pre, want_permit, want_activated,
                              want_allowed):
    ps = _pods()
    the_pod = ps[target]
    pl, h = plugin([ps[n] for n in initial] + [the_pod], wls)
    got = pl.pre_enqueue(the_pod)
    assert got == want_pre
    if got is not None:
        return
    waiting_pods = {}
    for n in waiting:      # other pods already reached Permit and wait there
        p = ps[n]
        assert pl.reserve(None, p, "some-node") is None
        s = pl.permit(None, p, "some-node")
        assert s is not None and s.code == Code.WAIT, n
        assert s.timeout == DEFAULT_SCHEDULING_TIMEOUT
        waiting_pods[n] = wp = WaitingPod(p, "some-node", {"GangScheduling": s.timeout})
        h.waiting.add(wp)
    assert pl.reserve(None, the_pod, "some-node") is None
    h.activated.clear()
    got = pl.permit(None, the_pod, "some-node")
    assert got == want_permit
    if want_permit is not None and want_permit.code == Code.WAIT:
        assert [p.name for p in h.activated] == want_activated
        pl.unreserve(None, the_pod, "some-node")
        return
    assert [p.name for p in h.activated] == want_activated
    for n in want_allowed:
        assert waiting_pods[n].outcome is not None and waiting_pods[n].outcome.is_success(), n
    for n, wp in waiting_pods.items():
        if n not in want_allowed:
            assert wp.outcome is None, n


# ---- Reserve / Unreserve / bound pods ---------------------------------------------------
def test_unreserve_forgets_the_pod():
    ps = _pods()
    pods = [ps["p1"], ps["p2"], ps["p3"]]
    pl, _ = plugin(pods, [GANG])
    for p in pods[:2]:
        pl.reserve(None, p, "n")
        assert pl.permit(None, p, "n").code == Code.WAIT
    pl.unreserve(None, pods[1], "n")          # p2 leaves: two assumed are needed again
    pl.reserve(None, pods[2], "n")
    assert pl.permit(None, pods[2], "n").code == Code.WAIT
    pl.reserve(None, pods[1], "n")
    assert pl.permit(None, pods[1], "n") is None


def test_bound_pods_count_towards_the_quorum():
    """Permit counts assumed or assigned (bound) pods of the group."""
    ps = _pods()
    bound = [pod(n, "ns1", {"name": "gang-wl", "podGroup": "pg1"}, n, node="n0") for n in ("b1", "b2")]
    pl, _ = plugin(bound + [ps["p1"]], [GANG])
    assert pl.pre_enqueue(ps["p1"]) is None
    pl.reserve(None, ps["p1"], "n")
    assert pl.permit(None, ps["p1"], "n") is None


def test_pod_group_missing_from_the_workload():
    p = pod("p", "ns1", {"name": "gang-wl", "podGroup": "nope"}, "p")
    pl, _ = plugin([p], [GANG])
    assert pl.pre_enqueue(p) == Status.unresolvable('pod group "nope" doesn\'t exist for a workload "gang-wl"')
    s = pl.permit(None, p, "n")
    assert s.code == Code.ERROR and s.message() == 'pod group "nope" doesn\'t exist for a workload "gang-wl"'


def test_workload_deleted_before_permit_is_an_error():
    ps = _pods()
    pl, _ = plugin([ps["p1"]], [])
    s = pl.permit(None, ps["p1"], "n")
    assert s.code == Code.ERROR
    assert s.message() == 'failed to get workload ns1/gang-wl: workload.scheduling.k8s.io "gang-wl" not found'


def test_scheduling_timeout_is_kept_then_renewed():
    ps = _pods()
    pl, h = plugin([ps["p1"], ps["p2"], ps["p3"]], [GANG])
    t = [0.0]
    h.now = lambda: t[0]                     # type: ignore[method-assign]
    pl.reserve(None, ps["p1"], "n")
    assert pl.permit(None, ps["p1"], "n").timeout == 300.0
    t[0] = 100.0
    pl.reserve(None, ps["p2"], "n")
    assert pl.permit(None, ps["p2"], "n").timeout == 200.0      # the group's deadline, not a new one
    pl.unreserve(None, ps["p2"], "n")
    t[0] = 301.0
    pl.reserve(None, ps["p2"], "n")
    assert pl.permit(None, ps["p2"], "n").timeout == 300.0      # the old deadline passed: a new one


def test_without_generic_workload_the_ref_is_dropped():
    """The API server drops spec.workloadRef while GenericWorkload is off: the plugin passes every pod."""
    ps = _pods()
    with featuregates.use(None):
        pl, _ = plugin([ps["p1"]], [])
        assert pl.pre_enqueue(ps["p1"]) is None
        assert pl.reserve(None, ps["p1"], "n") is None
        assert pl.permit(None, ps["p1"], "n") is None
