"""numa-aware plugin (Volcano v1.15.1 pkg/scheduler/plugins/numaaware): the ported Go tests of its
policies and CPU manager provider, the Numatopology parser, hand-checked sessions and one
`caldera schedule` run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from caldera.batch.api.fiterrors import ERROR, UNRESOLVABLE
from caldera.batch.api.numatopology import CPUDetails, CPUInfo, NumatopoInfo, format_cpuset, parse_cpuset
from caldera.batch.plugins import PLUGINS, argument_warnings
from caldera.batch.plugins.numaaware import normalize_reverse
from caldera.batch.plugins.numaaware_policy import (
    BEST_EFFORT,
    NONE,
    RESTRICTED,
    SINGLE_NUMA_NODE,
    CPUTopology,
    TopologyHint,
    cpu_allocate,
    cpu_topology_hints,
    mask_of,
    predicate,
    take_by_topology,
)
from caldera.batch.util.gosort import go_sort_slice
from caldera.cli.main import cli
from caldera.errors import CalderaError, InputError

from .helpers import conf, node, open_session, pod, podgroup, run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
POLICY_KEY = "volcano.sh/numa-topology-policy"


def M(*bits: int) -> int:
    return mask_of(bits)


def H(mask: int | None, preferred: bool) -> TopologyHint:
    return TopologyHint(mask, preferred)


# ---- policy tests (policy/*_test.go) -------------------------------------------------------------------
# The providers' hints of Test_best_effort_predicate / Test_restricted_predicate /
# Test_single_numa_node_predicate (the same six inputs; single-numa-node has the first five).
HINTS = {
    "test-1": [{"cpu": [H(M(0, 1), False), H(M(0), True)]}, {"gpu": [H(M(0, 1), False), H(M(0), True)]}],
    "test-2": [{"cpu": [H(M(0, 1), False), H(M(1), True)]}, {"gpu": [H(M(0, 1), False), H(M(1), True)]}],
    "test-3": [{"cpu": [H(M(0, 1), False), H(M(0), True), H(M(1), True)]},
               {"gpu": [H(M(0, 1), False), H(M(0), True), H(M(1), True)]}],
    "test-4": [{"cpu": [H(M(0, 1), False), H(M(0), True)]}, {"gpu": [H(M(0, 1), False), H(M(1), True)]}],
    "test-5": [{"cpu": [H(M(0, 1), False), H(M(0), True)]}, {"gpu": [H(M(0, 1), True)]}],
    "test-6": [{"cpu": [H(M(0, 1), True)]}, {"gpu": [H(M(0, 1), True)]}],
}
BEST_EFFORT_EXPECT = {"test-1": H(M(0), True), "test-2": H(M(1), True), "test-3": H(M(0), True),
                      "test-4": H(M(0), False), "test-5": H(M(0), True), "test-6": H(M(0, 1), True)}
SINGLE_EXPECT = {"test-1": H(M(0), True), "test-2": H(M(1), True), "test-3": H(M(0), True),
                 "test-4": H(M(0, 1), False), "test-5": H(M(0, 1), False)}


@pytest.mark.parametrize("case", sorted(BEST_EFFORT_EXPECT))
def test_best_effort_predicate(case):
    """Test_best_effort_predicate (policy_best_effort_test.go); best-effort admits everything."""
    best, admit = predicate(BEST_EFFORT, [0, 1], HINTS[case])
    assert best == BEST_EFFORT_EXPECT[case]
    assert admit


@pytest.mark.parametrize("case", sorted(BEST_EFFORT_EXPECT))
def test_restricted_predicate(case):
    """Test_restricted_predicate (policy_restricted_test.go): same expectations as best-effort;
    restricted admits only a preferred hint."""
    best, admit = predicate(RESTRICTED, [0, 1], HINTS[case])
    assert best == BEST_EFFORT_EXPECT[case]
    assert admit == best.preferred


@pytest.mark.parametrize("case", sorted(SINGLE_EXPECT))
def test_single_numa_node_predicate(case):
    """Test_single_numa_node_predicate (policy_single_numa_node_test.go)."""
    best, admit = predicate(SINGLE_NUMA_NODE, [0, 1], HINTS[case])
    assert best == SINGLE_EXPECT[case]
    assert admit == best.preferred


def test_none_predicate():
    """Test_none_predicate (policy_none_test.go): an empty hint, admitted."""
    assert predicate(NONE, [0, 1], []) == (TopologyHint(None, False), True)


def test_policy_no_preference_and_no_possible_affinity():
    """A provider with nothing to say (None) prefers any node; an empty hint list (no NUMA set has
    enough CPUs) is a non-preferred any-node hint: best-effort admits it, restricted does not."""
    assert predicate(RESTRICTED, [0, 1], [None]) == (H(M(0, 1), True), True)
    assert predicate(RESTRICTED, [0, 1], [{"cpu": None}]) == (H(M(0, 1), True), True)
    assert predicate(RESTRICTED, [0, 1], [{"cpu": []}]) == (H(M(0, 1), False), False)
    assert predicate(BEST_EFFORT, [0, 1], [{"cpu": []}]) == (H(M(0, 1), False), True)
    # narrower wins among equally preferred hints: fewer bits, then the lower mask
    assert predicate(BEST_EFFORT, [0, 1, 2], [{"cpu": [H(M(1, 2), True), H(M(0, 2), True)]}])[0] == H(M(0, 2), True)


# ---- CPU manager tests (provider/cpumanager/cpu_mng_test.go) -------------------------------------------
GO_DETAIL = CPUDetails({0: CPUInfo(0, 0, 0), 1: CPUInfo(0, 0, 0), 2: CPUInfo(0, 0, 1), 3: CPUInfo(0, 0, 1),
                        4: CPUInfo(1, 1, 2), 5: CPUInfo(1, 1, 2), 6: CPUInfo(1, 1, 3), 7: CPUInfo(1, 1, 3)})
GO_INFO = NumatopoInfo("n", cpu_detail=GO_DETAIL)
NANO = 10**9


@pytest.mark.parametrize(("request_cpus", "free", "expect"), [
    (4, range(8), [H(M(0), True), H(M(1), True), H(M(0, 1), False)]),     # test-1
    (4, range(1, 8), [H(M(1), True), H(M(0, 1), False)]),                 # test-2
    (5, range(8), [H(M(0, 1), True)]),                                    # test-3
    (8, range(8), [H(M(0, 1), True)]),                                    # test-4
    (9, range(8), []),                                                    # test-5
    (4, range(2, 6), [H(M(0, 1), False)]),                                # test-6
])
def test_get_topology_hints(request_cpus, free, expect):
    """Test_GetTopologyHints."""
    got = cpu_topology_hints(request_cpus * NANO, GO_INFO, CPUTopology(GO_DETAIL), {"cpu": frozenset(free)})
    assert got == {"cpu": expect}


@pytest.mark.parametrize(("request_cpus", "free", "best", "expect"), [
    (4, range(8), H(M(0), True), {0, 1, 2, 3}),           # test-1
    (4, range(1, 8), H(M(1), True), {4, 5, 6, 7}),        # test-2
    (5, range(8), H(M(0, 1), True), {0, 1, 2, 3, 4}),     # test-3
    (5, range(1, 8), H(M(0, 1), True), {1, 4, 5, 6, 7}),  # test-4
    (8, range(1, 8), H(M(0, 1), True), set()),            # test-5
])
def test_allocate(request_cpus, free, best, expect):
    """Test_Allocate."""
    got = cpu_allocate(request_cpus * NANO, best, GO_INFO, CPUTopology(GO_DETAIL), {"cpu": frozenset(free)})
    assert got == {"cpu": frozenset(expect)}


def test_hints_need_an_integer_cpu_request_and_skip_reserved_cpus():
    topo = CPUTopology(GO_DETAIL)
    free = {"cpu": frozenset(range(8))}
    assert cpu_topology_hints(None, GO_INFO, topo, free) is None               # no cpu request
    assert cpu_topology_hints(1_500_000_000, GO_INFO, topo, free) is None      # 1500m: not whole CPUs
    assert cpu_topology_hints(2 * NANO, GO_INFO, topo, {}) is None             # no cpu numares
    # resReserved cpu 500m rounds up to 1 CPU, taken by topology: CPU 0 (NUMA 0 keeps 3 free CPUs)
    reserved = NumatopoInfo("n", cpu_detail=GO_DETAIL, res_reserved_milli={"cpu": 500})
    assert cpu_topology_hints(4 * NANO, reserved, topo, free) == {"cpu": [H(M(1), True), H(M(0, 1), False)]}
    assert cpu_allocate(4 * NANO, H(M(0, 1), False), reserved, topo, free) == {"cpu": frozenset({4, 5, 6, 7})}


def test_take_by_topology_quirks():
    """Volcano's accumulator takes a "free socket" whose id is a free CPU id even if it is only
    partly free, then whole cores, then CPUs ordered by its comparator."""
    topo = CPUTopology(GO_DETAIL)
    assert topo.cpus_per_socket() == 4 and topo.cpus_per_core() == 2
    # 4 CPUs from {1, 3, 4, 5, 6}: socket ids {0, 1} ∩ free CPU ids = {1}: socket 1's 4-7
    assert take_by_topology(topo, frozenset({1, 3, 4, 5, 6}), 4) == frozenset({1, 4, 5, 6})
    assert take_by_topology(topo, frozenset({1, 2}), 3) is None
    assert take_by_topology(topo, frozenset(), 0) == frozenset()
    # 2 CPUs from {1, 2, 3, 5}: core ids {0, 1} ∩ free ids: core 1 (CPUs 2, 3) is whole
    assert take_by_topology(topo, frozenset({1, 2, 3, 5}), 2) == frozenset({2, 3})


def test_go_sort_slice_matches_go():
    """go_sort_slice gives Go's sort.Slice order even for a comparator that is not a strict
    order (vectors made by Go 1.26's sort.Slice over random lists of 1..120 elements)."""
    lines = (HERE / "gosort_vectors.txt").read_text().splitlines()
    assert len(lines) == 48
    for k in range(0, len(lines), 2):
        items = [tuple(map(int, p.split(","))) for p in lines[k].split()[1:]]
        want = [int(x) for x in lines[k + 1].split()]
        go_sort_slice(items, lambda x, y: x[0] < y[0] or x[1] > y[1] or x[2] < y[2])
        assert [x[2] for x in items] == want


def test_normalize_reverse():
    """util.NormalizeScore(100, reverse): integer arithmetic; all zero counts score 100."""
    assert normalize_reverse([1, 2, 2]) == [50, 0, 0]
    assert normalize_reverse([1, 3]) == [67, 0]
    assert normalize_reverse([0, 0]) == [100, 100]
    assert normalize_reverse([1]) == [0]


# ---- Numatopology objects --------------------------------------------------------------------------------
CPUS8 = {str(c): {"numa": i.numa, "socket": i.socket, "core": i.core} for c, i in GO_DETAIL.items()}


def numatopo(name, free="0-7", policy="single-numa-node", cpu_mgr="static", detail=None, reserved=None) -> dict:
    spec: dict = {"policies": {"CPUManagerPolicy": cpu_mgr, "TopologyManagerPolicy": policy},
                  "numares": {"cpu": {"allocatable": free, "capacity": 8}},
                  "cpuDetail": CPUS8 if detail is None else detail}
    if reserved:
        spec["resReserved"] = reserved
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": name},
            "spec": spec}


def gpod(name, cpu="4", policy: str | None = "single-numa-node", containers=None, **kw) -> dict:
    """A Guaranteed pod (limits only: the requests default to them)."""
    ann = {POLICY_KEY: policy} if policy is not None else None
    p = pod("c1", name, annotations=ann, **kw)
    p["spec"]["containers"] = containers or [{"name": "main", "image": "busybox",
                                              "resources": {"limits": {"cpu": cpu, "memory": "1Gi"}}}]
    return p


def test_cpuset_format():
    assert parse_cpuset("0-3,8,10-11") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpuset("") == frozenset()
    assert format_cpuset(frozenset({0, 1, 2, 3, 8, 10, 11})) == "0-3,8,10-11"
    for bad in ("a", "3-1", "1,,2", "-1"):
        with pytest.raises(ValueError):
            parse_cpuset(bad)


@pytest.mark.parametrize(("doc", "msg"), [
    (numatopo("n1", free="0-x"), "spec.numares.cpu.allocatable: invalid cpuset '0-x'"),
    (numatopo("n1", policy="strict"), "spec.policies.TopologyManagerPolicy: unknown value 'strict'"),
    (numatopo("n1", cpu_mgr="dynamic"), "spec.policies.CPUManagerPolicy: unknown value 'dynamic'"),
    (numatopo("n1", detail={"cpu0": {"numa": 0}}), "spec.cpuDetail: key 'cpu0' is not a CPU id"),
    (numatopo("n1", detail={"0": {"numa": "zero"}}), "spec.cpuDetail.0.numa: must be an integer"),
    (numatopo("n1", reserved={"cpu": "lots"}), "spec.resReserved.cpu:"),
])
def test_bad_numatopology_is_an_input_error(doc, msg):
    with pytest.raises(InputError) as e:
        run([node("n1", {"cpu": "8", "memory": "8Gi"}), doc], ONLY_NUMA)
    assert "Numatopology n1" in str(e.value) and msg in str(e.value)
    assert "\n" not in str(e.value)


def test_numatopology_for_unknown_node_and_duplicates_fail():
    """Issue 11's bad input: a Numatopology for a missing node is a one-line error naming it."""
    with pytest.raises(InputError) as e:
        run([node("n1", {"cpu": "8", "memory": "8Gi"}), numatopo("ghost")], ONLY_NUMA)
    assert "Numatopology ghost" in str(e.value) and 'node "ghost" is not in the input' in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(CalderaError, match="already exists"):
        run([node("n1", {"cpu": "8", "memory": "8Gi"}), numatopo("n1"), numatopo("n1")], ONLY_NUMA)


def test_weight_argument():
    assert PLUGINS["numa-aware"] == "numaaware:NumaAwarePlugin"
    c = conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "numa-aware", "arguments": {"wieght": 2}}]}]})
    assert argument_warnings(c) == ['test.conf: plugin "numa-aware" argument "wieght" is not read '
                                    '(did you mean "weight"?); ignored']
    with pytest.raises(CalderaError, match=r"numa-aware\.arguments\.weight: must be an integer"):
        run([node("n1", {"cpu": "8"})], {"actions": "allocate", "tiers": [{"plugins": [
            {"name": "numa-aware", "arguments": {"weight": "x"}}]}]})


# ---- sessions ----------------------------------------------------------------------------------------------
ONLY_NUMA = {"actions": "allocate", "tiers": [{"plugins": [{"name": "numa-aware"}]}]}


def numa_conf(weight: int | None = None) -> dict:
    opt: dict = {"name": "numa-aware"}
    if weight is not None:
        opt["arguments"] = {"weight": weight}
    return {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, opt]}]}


def N(name, cpu="8"):
    return node(name, {"cpu": cpu, "memory": "64Gi"})


def _reasons(ssn, task_key, node_name):
    plugin = ssn.plugins["numa-aware"]
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.key == task_key)
    i = ssn.nodes.by_name[node_name].i
    m = plugin.mask(task, np.array([i]))
    return (None if m is None else bool(m[0])), plugin.reason(task, i)


def test_predicate_reasons():
    """filterNodeByPolicy's errors (code Error) and the policy's refusal (UnschedulableAndUnresolvable)."""
    docs = [N("plain"), N("nonstatic"), N("other"), N("full"), N("split"), N("ok"),
            numatopo("nonstatic", cpu_mgr="none"), numatopo("other", policy="restricted"),
            numatopo("full", free=""), numatopo("split", free="1-3,5-7"), numatopo("ok"),
            gpod("p"), gpod("burst", cpu="4", containers=[{"name": "main", "image": "x", "resources": {
                "requests": {"cpu": "4"}, "limits": {"cpu": "8"}}}])]
    ssn = open_session(docs, ONLY_NUMA)
    assert _reasons(ssn, "c1/p", "plain") == (False, [(ERROR, "numa info is empty")])
    assert _reasons(ssn, "c1/p", "nonstatic") == (False, [(ERROR, "cpu manager policy isn't static")])
    assert _reasons(ssn, "c1/p", "other") == (
        False, [(ERROR, "task topology policy[single-numa-node] is different with node[restricted]")])
    assert _reasons(ssn, "c1/p", "full") == (False, [(ERROR, "cpu allocatable map is empty")])
    assert _reasons(ssn, "c1/p", "split") == (False, [(UNRESOLVABLE, "container main cannot be assigned by numa")])
    assert _reasons(ssn, "c1/p", "ok") == (True, [])
    # not Guaranteed: the plugin has no opinion anywhere
    assert _reasons(ssn, "c1/burst", "plain") == (None, [])


def test_pod_without_policy_is_still_held_to_the_node_policy():
    """A Guaranteed pod without the annotation passes nodes without NUMA management, but on a
    static node with a topology policy it must fit as that policy demands (and gets CPUs)."""
    docs = [N("plain"), N("split"), numatopo("split", free="1-3,5-7"), gpod("p", policy=None)]
    ssn = open_session(docs, ONLY_NUMA)
    assert _reasons(ssn, "c1/p", "plain") == (None, [])       # no NUMA node among them: no opinion
    assert _reasons(ssn, "c1/p", "split") == (False, [(UNRESOLVABLE, "container main cannot be assigned by numa")])
    # with the pod's policy "none" the same holds (none is "no policy")
    docs[-1] = gpod("p", policy="none")
    ssn = open_session(docs, ONLY_NUMA)
    assert _reasons(ssn, "c1/p", "split")[0] is False
    res = run([N("split"), numatopo("split", free="0-7"), gpod("p", policy=None)], numa_conf())
    assert res.to_dict()["bindings"] == [{"pod": "c1/p", "node": "split", "cpuset": "0-3", "numaNodes": [0]}]


def test_cpus_taken_within_the_session():
    """The allocate handler takes each pod's CPUs: a 4-CPU pod fills NUMA 0, a 2-CPU pod takes
    4-5 on NUMA 1 (no whole core is "free" there: Volcano intersects core ids with CPU ids), a
    3-CPU pod then fits no NUMA node; once every CPU is taken the node has none left."""
    docs = [N("n1", cpu="16"), numatopo("n1"),
            gpod("a", creation="2026-01-01T00:00:01Z"), gpod("b", cpu="2", creation="2026-01-01T00:00:02Z"),
            gpod("c", cpu="3", creation="2026-01-01T00:00:03Z")]
    out = run(docs, numa_conf()).to_dict()
    assert out["bindings"] == [{"pod": "c1/a", "node": "n1", "cpuset": "0-3", "numaNodes": [0]},
                               {"pod": "c1/b", "node": "n1", "cpuset": "4-5", "numaNodes": [1]}]
    assert [u["pod"] for u in out["unschedulable"]] == ["c1/c"]
    assert "1 container main cannot be assigned by numa" in out["unschedulable"][0]["message"]
    docs[-2] = gpod("b", creation="2026-01-01T00:00:02Z")
    out = run(docs, numa_conf()).to_dict()
    assert [b["cpuset"] for b in out["bindings"]] == ["0-3", "4-7"]
    assert out["unschedulable"][0]["message"] == "0/1 nodes are unavailable: 1 cpu allocatable map is empty."


def test_multi_container_pod_and_best_effort_span():
    """Each container gets its CPUs in turn; under best-effort a container too big for one NUMA
    node spans two."""
    two = [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
           {"name": "b", "image": "x", "resources": {"limits": {"cpu": "4", "memory": "1Gi"}}}]
    res = run([N("n1"), numatopo("n1", policy="best-effort"), gpod("p", policy="best-effort", containers=two)],
              numa_conf())
    assert res.to_dict()["bindings"] == [{"pod": "c1/p", "node": "n1", "cpuset": "0-1,4-7", "numaNodes": [0, 1]}]
    res = run([N("n1"), numatopo("n1", policy="best-effort"), gpod("p", cpu="6", policy="best-effort")], numa_conf())
    assert res.to_dict()["bindings"] == [{"pod": "c1/p", "node": "n1", "cpuset": "0-5", "numaNodes": [0, 1]}]


def test_batch_node_order_prefers_fewer_numa_nodes():
    """best-effort admits a pod spanning two NUMA nodes; NUMA node counts [1, 2] normalise
    (reversed) to [50, 0], times weight 3. restricted refuses the spanning node: the preferred
    size is that of an empty node (one NUMA node holds 4 CPUs), not of the free CPUs."""
    r = [N("two"), numatopo("two", policy="restricted", free="2-3,6-7"), gpod("p", policy="restricted", cpu="3")]
    assert _reasons(open_session(r, ONLY_NUMA), "c1/p", "two") == (
        False, [(UNRESOLVABLE, "container main cannot be assigned by numa")])
    docs = [N("one"), N("two"), numatopo("one", policy="best-effort", free="0-7"),
            numatopo("two", policy="best-effort", free="2-3,6-7"), gpod("p", policy="best-effort", cpu="3")]
    ssn = open_session(docs, numa_conf(weight=3))
    plugin = ssn.plugins["numa-aware"]
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values())
    idx = np.array([ssn.nodes.by_name["one"].i, ssn.nodes.by_name["two"].i])
    assert plugin.mask(task, idx).tolist() == [True, True]
    assert plugin.batch_node_order(task, idx, None).tolist() == [150.0, 0.0]
    res = run(docs, numa_conf(weight=3), explain=True).to_dict()
    assert res["bindings"][0]["node"] == "one"
    assert res["explain"]["c1/p"]["scores"]["two"]["numa-aware"] == 0
    assert res["explain"]["c1/p"]["scores"]["one"]["numa-aware"] == 150


def test_discarded_allocation_gives_cpus_back():
    """A gang that cannot be ready is discarded: the deallocate handler returns the CPUs, and the
    session close records only what stayed allocated."""
    docs = [N("n1", cpu="16"), numatopo("n1"), podgroup("c1", "g", min_member=3),
            gpod("a", group="g"), gpod("b", group="g"), gpod("c", group="g"),
            gpod("solo", cpu="4", creation="2026-01-01T00:00:09Z")]
    res = run(docs, numa_conf())
    out = res.to_dict()
    assert out["bindings"] == [{"pod": "c1/solo", "node": "n1", "cpuset": "0-3", "numaNodes": [0]}]
    assert res.session is not None
    assert res.session.numa_info["n1"].numa_res["cpu"].allocatable == frozenset({4, 5, 6, 7})


def test_volcano_job_topology_policy():
    """A Volcano Job task's topologyPolicy becomes the pods' annotation (the job controller)."""
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "c1"},
           "spec": {"minAvailable": 1, "schedulerName": "volcano", "tasks": [{
               "name": "t", "replicas": 1, "topologyPolicy": "single-numa-node",
               "template": {"spec": {"containers": [{"name": "main", "image": "x", "resources": {
                   "limits": {"cpu": "4", "memory": "1Gi"}}}]}}}]}}
    out = run([N("plain"), N("n1"), numatopo("n1", free="2-7")], numa_conf()).to_dict()
    assert out["bindings"] == []
    out = run([N("plain"), N("n1"), numatopo("n1", free="2-7"), job], numa_conf()).to_dict()
    assert out["bindings"] == [{"pod": "c1/j-t-0", "node": "n1", "cpuset": "4-7", "numaNodes": [1]}]


def test_schedule_cli_end_to_end(tmp_path):
    """`caldera schedule` over examples/batch/numa: db-4cpu fits one NUMA node only on numa-a,
    cache-3cpu only on numa-b; the bindings carry the CPUs."""
    ex = ROOT / "examples" / "batch" / "numa"
    r = CliRunner().invoke(cli, ["schedule", "-f", str(ex / "cluster.yaml"), "-f", str(ex / "pods.yaml"),
                                 "--config", str(ex / "volcano-scheduler.conf"), "-o", "json", "--explain"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["bindings"] == [
        {"pod": "default/db-4cpu", "node": "numa-a", "cpuset": "4-7", "numaNodes": [1]},
        {"pod": "default/cache-3cpu", "node": "numa-b", "cpuset": "1-3", "numaNodes": [0]}]
    assert out["explain"]["default/db-4cpu"]["filtered"] == {"numa-b": "container db cannot be assigned by numa"}
    # without numa-aware both pods fit either node by resources alone, and no CPUs are named
    c = yaml.safe_load((ex / "volcano-scheduler.conf").read_text())
    c["tiers"][1]["plugins"] = [p for p in c["tiers"][1]["plugins"] if p["name"] != "numa-aware"]
    (tmp_path / "plain.conf").write_text(yaml.safe_dump(c))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(ex), "--config", str(tmp_path / "plain.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    plain = json.loads(r.stdout)
    assert all("cpuset" not in b for b in plain["bindings"])
    assert [(i["kind"], i["name"]) for i in plain["ignored"]] == [("Numatopology", "numa-a"),
                                                                  ("Numatopology", "numa-b")]
    r = CliRunner().invoke(cli, ["schedule", "-f", str(ex), "--config", str(ex / "volcano-scheduler.conf")])
    assert r.exit_code == 0 and "numa-a (CPU 4-7)" in r.stdout
    # a malformed Numatopology: exit 2, one line naming the object
    bad = (ex / "cluster.yaml").read_text().replace('allocatable: "0-1,4-7"', 'allocatable: "0-1,x"')
    (tmp_path / "bad.yaml").write_text(bad)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "bad.yaml"), "-f", str(ex / "pods.yaml"),
                                 "--config", str(ex / "volcano-scheduler.conf")])
    assert r.exit_code == 2
    assert "Numatopology numa-a: spec.numares.cpu.allocatable" in r.stderr
    assert "Traceback" not in r.stderr


def test_reserved_cpus_are_never_given():
    """resReserved cpu 1: the kubelet keeps CPU 0 (the first CPU by topology); NUMA 0 then holds
    only 3 free CPUs for pods, and CPU 0 is never assigned even though it is in `allocatable`."""
    docs = [N("n1", cpu="16"), numatopo("n1", reserved={"cpu": "1"}),
            gpod("a", creation="2026-01-01T00:00:01Z"), gpod("b", cpu="3", creation="2026-01-01T00:00:02Z"),
            gpod("c", cpu="1", creation="2026-01-01T00:00:03Z")]
    out = run(docs, numa_conf()).to_dict()
    assert out["bindings"] == [{"pod": "c1/a", "node": "n1", "cpuset": "4-7", "numaNodes": [1]},
                               {"pod": "c1/b", "node": "n1", "cpuset": "1-3", "numaNodes": [0]}]
    assert out["unschedulable"][0]["message"] == (
        "0/1 nodes are unavailable: 1 container main cannot be assigned by numa.")
