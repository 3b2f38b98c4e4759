"""NodePorts: the cases of kube's node_ports_test.go (TestNodePorts, TestFits), the incremental
used-port index, and the default profile end to end."""
import numpy as np
import pytest

from caldera.errors import InputError
from caldera.framework.interface import CycleState
from caldera.framework.status import Code, Status
from caldera.plugins.nodeports import ERR_REASON, host_ports

from ..builders import make_node, make_pod, make_scheduler, make_table, run_filter

CONFLICT = Status.unschedulable(ERR_REASON)
_n = [0]


def ports(*infos):
    """'UDP/127.0.0.1/8080' -> container port dicts, like kube's newPod helper."""
    out = []
    for info in infos:
        proto, ip, port = info.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": proto})
    return out


def new_pod(*infos, node=None):
    _n[0] += 1
    return make_pod(f"p{_n[0]}", node=node, ports=ports(*infos) if infos else None)


def init_port_pod(sidecar: bool, node=None):
    _n[0] += 1
    ic = {"name": "init", "image": "busybox",
          "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}
    if sidecar:
        ic["restartPolicy"] = "Always"
    return make_pod(f"p{_n[0]}", node=node, init_containers=[ic])


def _filter(pod, existing):
    """PreFilter then Filter of NodePorts on one node "m1" holding `existing` pods."""
    table = make_table([make_node("m1")], existing)
    s = make_scheduler(table, {"preFilter": ["NodePorts"], "filter": ["NodePorts"]})
    pl = s.default_framework.plugin("NodePorts")
    state = CycleState()
    pf = pl.pre_filter(state, pod)
    if pf is not None:
        return pf, None
    ok = pl.filter(state, pod, table, np.array([0], dtype=np.intp))
    return None, (None if ok[0] else pl.filter_status(state, pod, table, 0))


CASES = [
    ("skip filter", lambda: new_pod(), list, Status.skip(), None),
    ("other port", lambda: new_pod("UDP/127.0.0.1/8080"), lambda: [new_pod("UDP/127.0.0.1/9090", node="m1")],
     None, None),
    ("same udp port", lambda: new_pod("UDP/127.0.0.1/8080"), lambda: [new_pod("UDP/127.0.0.1/8080", node="m1")],
     None, CONFLICT),
    ("same tcp port", lambda: new_pod("TCP/127.0.0.1/8080"), lambda: [new_pod("TCP/127.0.0.1/8080", node="m1")],
     None, CONFLICT),
    ("different host ip", lambda: new_pod("TCP/127.0.0.1/8080"), lambda: [new_pod("TCP/127.0.0.2/8080", node="m1")],
     None, None),
    ("different protocol", lambda: new_pod("UDP/127.0.0.1/8080"), lambda: [new_pod("TCP/127.0.0.1/8080", node="m1")],
     None, None),
    ("second udp port conflict", lambda: new_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
     lambda: [new_pod("UDP/127.0.0.1/8080", node="m1")], None, CONFLICT),
    ("first tcp port conflict", lambda: new_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
     lambda: [new_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081", node="m1")], None, CONFLICT),
    ("first tcp port conflict due to 0.0.0.0 hostIP", lambda: new_pod("TCP/0.0.0.0/8001"),
     lambda: [new_pod("TCP/127.0.0.1/8001", node="m1")], None, CONFLICT),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", lambda: new_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
     lambda: [new_pod("TCP/127.0.0.1/8001", node="m1")], None, CONFLICT),
    ("second tcp port conflict to 0.0.0.0 hostIP", lambda: new_pod("TCP/127.0.0.1/8001"),
     lambda: [new_pod("TCP/0.0.0.0/8001", node="m1")], None, CONFLICT),
    ("second different protocol", lambda: new_pod("UDP/127.0.0.1/8001"),
     lambda: [new_pod("TCP/0.0.0.0/8001", node="m1")], None, None),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", lambda: new_pod("UDP/127.0.0.1/8001"),
     lambda: [new_pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001", node="m1")], None, CONFLICT),
    ("non-sidecar initContainer using hostPort", lambda: init_port_pod(False),
     lambda: [new_pod("TCP/0.0.0.0/8001", node="m1")], Status.skip(), None),
    ("TCP hostPort conflict from sidecar initContainer", lambda: init_port_pod(True),
     lambda: [new_pod("TCP/0.0.0.0/8001", node="m1")], None, CONFLICT),
    # beyond kube's table: a running pod's sidecar port is used; empty hostIP/protocol default
    ("used port from running pod's sidecar", lambda: new_pod("TCP/0.0.0.0/8001"),
     lambda: [init_port_pod(True, node="m1")], None, CONFLICT),
    ("running pod's non-sidecar init port is not used", lambda: new_pod("TCP/0.0.0.0/8001"),
     lambda: [init_port_pod(False, node="m1")], None, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_node_ports(case):
    _, mk_pod, mk_existing, want_pf, want = case
    pf, got = _filter(mk_pod(), mk_existing())
    assert pf == want_pf
    assert got == want
    if want is not None:
        assert got.code == Code.UNSCHEDULABLE


FITS = [
    ("non-conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/9090"], True),
    ("multiple non-conflicting ports",
     ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"], True),
    ("same ports on different protocols", ["TCP/127.0.0.1/80"], ["UDP/127.0.0.1/80"], True),
    ("conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/80"], False),
    ("multiple ports, some conflicting",
     ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"], False),
]


@pytest.mark.parametrize("case", FITS, ids=[c[0] for c in FITS])
def test_fits(case):
    _, want_ports, existing, fits = case
    _, got = _filter(new_pod(*want_ports), [new_pod(*existing, node="m1")])
    assert (got is None) == fits


def test_defaults_and_validation():
    p = make_pod("d", ports=[{"containerPort": 80, "hostPort": 80}, {"containerPort": 81}])
    assert host_ports(p) == (("0.0.0.0", "TCP", 80),)
    with pytest.raises(InputError):
        host_ports(make_pod("bad", ports=[{"containerPort": 80, "hostPort": "80"}]))


def test_index_follows_table_changes():
    """Used ports follow pods added, removed and nodes changed (journal replay and rebuilds)."""
    nodes = [make_node(f"n{i}") for i in range(4)]
    table = make_table(nodes, [new_pod("TCP/0.0.0.0/80", node="n0")])
    s = make_scheduler(table, {"preFilter": ["NodePorts"], "filter": ["NodePorts"]})
    want = new_pod("TCP/0.0.0.0/80")

    def blocked():
        return sorted(n for n, st in run_filter(s, want).items() if st is not None)

    assert blocked() == ["n0"]
    extra = new_pod("TCP/10.0.0.1/80", node="n2")
    table.add_pod(extra, 2)
    table.add_pod(new_pod("UDP/0.0.0.0/80", node="n3"), 3)   # other protocol
    assert blocked() == ["n0", "n2"]
    table.remove_pod(extra.key)
    assert blocked() == ["n0"]
    table.remove_node("n0")                                   # rows shift: full rebuild
    assert blocked() == []
    table.add_pod(new_pod("TCP/0.0.0.0/80", node="n3"), table.index["n3"])
    assert blocked() == ["n3"]


def test_default_profile_end_to_end():
    s = make_scheduler(make_table([make_node("n1"), make_node("n2")]), default=True)
    got = [s.schedule_one(new_pod("TCP/0.0.0.0/8080")).node for _ in range(2)]
    assert sorted(got) == ["n1", "n2"]
    assert s.schedule_one(new_pod("UDP/0.0.0.0/8080")).node in ("n1", "n2")   # other protocol fits
    assert s.schedule_one(new_pod()).node in ("n1", "n2")                      # no ports: Skip
    att = s.schedule_one(new_pod("TCP/127.0.0.1/8080"))
    assert not att.scheduled
    assert att.message.startswith(
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.")
    assert "NodePorts" in att.unschedulable_plugins
