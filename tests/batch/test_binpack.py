"""binpack (volcano pkg/scheduler/plugins/binpack/binpack_test.go): TestArguments and TestNode,
with the Go test's expected scores."""
from __future__ import annotations

import numpy as np
import pytest

from caldera.batch.plugins.binpack import BinpackPlugin
from caldera.errors import ConfigError

from .helpers import node, open_session, pod, podgroup, queue, rl, run

GPU, FOO = "nvidia.com/gpu", "example.com/foo"


def _conf(args):
    return {"actions": "allocate",
            "tiers": [{"plugins": [{"name": "binpack", "enableNodeOrder": True, "arguments": args}]}]}


def test_arguments():
    p = BinpackPlugin({"binpack.weight": 10, "binpack.cpu": 5, "binpack.memory": 2,
                       "binpack.resources": "nvidia.com/gpu, example.com/foo",
                       "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": -3})
    assert p.weight == 10
    assert p.resources == {GPU: 7, FOO: 1, "cpu": 5, "memory": 2}


def test_defaults_and_negative_cpu_memory():
    assert BinpackPlugin({}).resources == {"cpu": 1, "memory": 1}
    assert BinpackPlugin({}).weight == 1
    assert BinpackPlugin({"binpack.cpu": -2, "binpack.memory": -1}).resources == {"cpu": 1, "memory": 1}


def test_bad_argument_is_config_error():
    with pytest.raises(ConfigError, match=r"binpack\.weight"):
        BinpackPlugin({"binpack.weight": "heavy"})


def _cluster():
    return [
        queue("c1"),
        podgroup("c1", "pg1", queue="c1", phase="Pending"),
        pod("c1", "p1", node="n1", req=rl("1", "1Gi"), group="pg1"),
        pod("c1", "p2", node="n3", req=rl("1.5", "0Gi"), group="pg1"),
        pod("c1", "p3", req=rl("2", "10Gi", {GPU: "2"}), group="pg1"),
        pod("c1", "p4", req=rl("3", "4Gi", {FOO: "3"}), group="pg1"),
        node("n1", rl("2", "4Gi", {"pods": "10"})),
        node("n2", rl("4", "16Gi", {"pods": "10", GPU: "4"})),
        node("n3", rl("2", "4Gi", {"pods": "10", FOO: "16"})),
    ]


CASES = [
    ({"binpack.weight": 10, "binpack.cpu": 2, "binpack.memory": 3,
      "binpack.resources": "nvidia.com/gpu, example.com/foo",
      "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": 8},
     {"c1/p1": {"n1": 700, "n2": 137.5, "n3": 0},       # n3: p2 uses 1.5 cpu, p1 does not fit
      "c1/p2": {"n1": 0, "n2": 375, "n3": 0},
      "c1/p3": {"n1": 0, "n2": 531.25, "n3": 0},
      "c1/p4": {"n1": 0, "n2": 173.076923076, "n3": 0}}),
    ({"binpack.weight": 1, "binpack.cpu": 1, "binpack.memory": 1,
      "binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 23},
     {"c1/p1": {"n1": 75, "n2": 15.625, "n3": 0},
      "c1/p2": {"n1": 0, "n2": 37.5, "n3": 0},
      "c1/p3": {"n1": 0, "n2": 50.5, "n3": 0},
      "c1/p4": {"n1": 0, "n2": 50, "n3": 0}}),
]


@pytest.mark.parametrize("args,expected", CASES, ids=["weighted-extra-resources", "gpu-weight-23"])
def test_node_scores(args, expected):
    ssn = open_session(_cluster(), _conf(args))
    fn = ssn.fns["node_order"]["binpack"]
    idx = np.arange(len(ssn.nodes))
    names = [ni.name for ni in ssn.nodes.infos]
    seen = 0
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            got = fn(task, idx, None)
            for k, n in enumerate(names):
                assert got[k] == pytest.approx(expected[task.key][n], abs=1e-8), (task.key, n)
            seen += 1
    assert seen == 4


def test_zero_weight_registers_nothing():
    ssn = open_session(_cluster(), _conf({"binpack.weight": 0}))
    assert "binpack" not in ssn.fns["node_order"]


def test_binpack_decides_placement():
    # two empty nodes, one half full: binpack puts the pod on the fuller node
    docs = [queue("default"),
            pod("ns", "running", node="n2", phase="Running", req=rl("2", "2Gi")),
            pod("ns", "p", req=rl("1", "1Gi")),
            node("n1", rl("4", "8Gi")), node("n2", rl("4", "8Gi")), node("n3", rl("4", "8Gi"))]
    res = run(docs, _conf({}), explain=True)
    assert res.bindings == [{"pod": "ns/p", "node": "n2"}]
    sc = res.explain["ns/p"]["scores"]
    assert sc["n2"]["binpack"] == pytest.approx(100 * (3 / 4 + 3 / 8) / 2)
    assert sc["n1"]["binpack"] == pytest.approx(100 * (1 / 4 + 1 / 8) / 2)
