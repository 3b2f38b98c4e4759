"""conformance plugin: port of volcano pkg/scheduler/plugins/conformance/conformance_test.go
(TestConformancePlugin), plus table tests of the protected-pod rule read off conformance.go."""
from __future__ import annotations

import pytest

from caldera.api.objects import Pod
from caldera.batch.api.info import TaskInfo
from caldera.batch.conf import FLAGS
from caldera.batch.plugins.base import PERMIT

from .helpers import node, open_session, pod, queue, rl

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}


def go_conf(**flags) -> dict:
    return {"actions": "allocate", "tiers": [{"plugins": [{**ALL_OFF, "name": "conformance", **flags}]}]}


def task(ns: str, name: str, priority_class: str = "") -> TaskInfo:
    """api.NewTaskInfo(util.BuildPod(ns, name, "test-node", Running, 1 cpu/1Gi, "pg1", ...))."""
    extra = {"priorityClassName": priority_class} if priority_class else {}
    raw = pod(ns, name, node="test-node", phase="Running", req=rl("1", "1Gi"), group="pg1", **extra)
    return TaskInfo(Pod(raw), f"{ns}/pg1")


def session(**flags):
    return open_session([queue("default"), node("test-node", rl("4", "8Gi"))], go_conf(**flags))


# --- conformance_test.go: TestConformancePlugin -----------------------------------------------------
def test_conformance_plugin():
    task1 = task("kube-system", "test-pod")
    task2 = task("test-namespace", "test-pod")
    ssn = session(enablePreemptable=True)
    victims = ssn.preemptable(None, [task1, task2])
    assert victims == [task2]


# --- the rule, for both hooks ----------------------------------------------------------------------
@pytest.mark.parametrize("ns,pc,protected", [
    ("kube-system", "", True),
    ("default", "system-cluster-critical", True),
    ("default", "system-node-critical", True),
    ("team", "high-priority", False),
    ("kube-public", "", False),
    ("team", "system-critical", False),       # only the two built-in class names
])
@pytest.mark.parametrize("hook,flag", [("preemptable", "enablePreemptable"), ("reclaimable", "enableReclaimable")])
def test_protected_pods_never_victims(ns, pc, protected, hook, flag):
    ssn = session(**{flag: True})
    t = task(ns, "p", pc)
    other = task("team", "q")
    got, vote = ssn.fns[hook]["conformance"](None, [t, other])
    assert vote == PERMIT
    assert got == ([other] if protected else [t, other])
    via_ssn = ssn.preemptable(None, [t, other]) if hook == "preemptable" else ssn.reclaimable(None, [t, other])
    assert via_ssn == ([other] if protected else [t, other])


def test_all_protected_gives_no_victims():
    ssn = session(enablePreemptable=True, enableReclaimable=True)
    cands = [task("kube-system", "a"), task("x", "b", "system-node-critical")]
    assert ssn.preemptable(None, cands) is None
    assert ssn.reclaimable(None, cands) is None


def test_disabled_flag_means_no_opinion():
    ssn = session(enablePreemptable=False, enableReclaimable=False)
    assert ssn.preemptable(None, [task("kube-system", "a")]) is None
