"""What `caldera schedule` does outside the engine, made cheaper without changing what it means
(issue 14, "Loading at the speed of the engine"): `caldera --help` lists the subcommands without
importing them; a pod's requests are computed once per distinct shape of its resource fields,
validation included; a pass orders its pods as kube's scheduling queue pops them, without the
queue's heap; a YAML List's pods are slimmed once."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from caldera.api import objects, reader
from caldera.api.objects import Pod
from caldera.engine.oneshot import _queue_order
from caldera.errors import InputError
from caldera.framework.queue import SchedulingQueue

from .builders import make_node, make_scheduler, make_table, pod_dict

# ---- caldera --help -----------------------------------------------------------------------------


def _help(preload: bool) -> str:
    code = ("import click; from click.testing import CliRunner; from caldera.cli.main import cli\n"
            f"if {preload}:\n"
            "    ctx = click.Context(cli, info_name='caldera')\n"
            "    for n in cli.list_commands(ctx): cli.get_command(ctx, n)\n"
            "import sys\n"
            "out = CliRunner().invoke(cli, ['--help'], prog_name='caldera', terminal_width=80).output\n"
            "print(repr(out)); print(sorted(m for m in sys.modules if m.startswith('caldera.cli.')))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_help_lists_subcommands_without_importing_them():
    # (each output's second line is the repr of a list of module names, which eval reads back)
    lazy, loaded = _help(False).splitlines(), _help(True).splitlines()
    assert lazy[0] == loaded[0]                        # the same text, character for character
    assert "schedule  Run one scheduling pass" in lazy[0]
    assert eval(lazy[1]) == ["caldera.cli.main"]
    assert {"caldera.cli.run", "caldera.cli.schedule", "caldera.cli.simulate"} <= set(eval(loaded[1]))


def test_short_help_is_each_commands_own():
    from caldera.cli.main import SHORT_HELP, cli
    ctx = click.Context(cli, info_name="caldera")
    assert set(SHORT_HELP) == set(cli.list_commands(ctx))
    for name, text in SHORT_HELP.items():
        assert cli.get_command(ctx, name).help.split("\n\n")[0] == text, name


@pytest.mark.parametrize("args", [["schedule", "--help"], ["simulate", "--help"], ["run", "--help"]])
def test_subcommand_help_still_works(args):
    from caldera.cli.main import cli
    r = CliRunner().invoke(cli, args, prog_name="caldera")
    assert r.exit_code == 0 and "Usage: caldera " + args[0] in r.output


def test_schedule_json_imports_no_heavy_module(tmp_path):
    """The fast path of `schedule -o json` imports nothing it does not use."""
    f = tmp_path / "in.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}]}))
    code = ("import sys, io; from caldera.cli.main import main; out = sys.stdout; sys.stdout = io.StringIO()\n"
            f"try: main(['schedule', '-f', {str(f)!r}, '-o', 'json'])\n"
            "except SystemExit: pass\n"
            "res = sys.stdout.getvalue(); sys.stdout = out\n"
            "print(res.count('\"node\": \"n\"'), sorted(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    bound, mods = out.split(" ", 1)
    assert bound == "1"
    heavy = ("rich", "jsonschema", "matplotlib", "prometheus_client", "ray", "opentelemetry", "celpy", "cel",
             "kubernetes", "pandas", "scipy", "caldera.live", "caldera.sim", "caldera.cli.run",
             "caldera.cli.simulate", "caldera.cli.table")
    loaded = eval(mods)     # the repr of a list of module names
    assert not [m for m in loaded if m in heavy or m.startswith(tuple(h + "." for h in heavy))]


# ---- a pod's requests, once per shape -----------------------------------------------------------------

def _pod(name: str, requests=None, limits=None, *, inits=(), overhead=None, pod_resources=None, validate=True):
    d = pod_dict(name, requests=requests, limits=limits)
    if inits:
        d["spec"]["initContainers"] = [dict(c) for c in inits]
    if overhead is not None:
        d["spec"]["overhead"] = overhead
    if pod_resources is not None:
        d["spec"]["resources"] = pod_resources
    return Pod(d, 1, validate=validate)


def _fresh_requests(**kw) -> tuple[dict, int, int]:
    """The pod's requests computed without the memo."""
    objects._RESOURCES_BY_SHAPE.clear()
    p = _pod("fresh", **kw)
    objects._RESOURCES_BY_SHAPE.clear()
    return p.requests, p.nonzero_cpu, p.nonzero_mem


SHAPES = [
    {"requests": {"cpu": "100m", "memory": "500Mi"}},
    {"requests": {"cpu": 2}, "limits": {"cpu": 4, "memory": "1Gi"}},          # ints as YAML reads them
    {"requests": {"cpu": "2"}, "limits": {"cpu": "4", "memory": "1Gi"}},
    {"limits": {"nvidia.com/gpu": "1"}},
    {"requests": {"cpu": "1"}, "inits": [{"name": "i", "image": "x", "resources": {"requests": {"cpu": "3"}}}]},
    {"requests": {"cpu": "1"}, "inits": [{"name": "s", "image": "x", "restartPolicy": "Always",
                                          "resources": {"requests": {"cpu": "3"}}}]},
    {"requests": {"cpu": "1"}, "overhead": {"cpu": "250m", "memory": "120Mi"}},
    {"requests": {"cpu": "1"}, "pod_resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
    {"requests": {"cpu": "1"}, "pod_resources": {"limits": {"cpu": "4"}}},
]


@pytest.mark.parametrize("shape", SHAPES)
def test_memoised_requests_equal_computed(shape):
    want = _fresh_requests(**shape)
    first, second = _pod("a", **shape), _pod("b", **shape)     # the second from the memo
    assert (first.requests, first.nonzero_cpu, first.nonzero_mem) == want
    assert (second.requests, second.nonzero_cpu, second.nonzero_mem) == want
    assert second.requests is first.requests     # one dict for the pods of a shape (read only: api/objects.py Pod)
    assert _pod("c", **shape).requests == want[0]


def test_shapes_that_differ_only_in_sidecar_or_place_are_apart():
    c = {"name": "i", "image": "x", "resources": {"requests": {"cpu": "3"}}}
    plain = _pod("a", requests={"cpu": "1"}, inits=[c])
    sidecar = _pod("b", requests={"cpu": "1"}, inits=[{**c, "restartPolicy": "Always"}])
    assert plain.requests["cpu"] == 3000 and sidecar.requests["cpu"] == 4000
    moved = Pod({"metadata": {"name": "m"}, "spec": {"containers": [
        {"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}}, c]}}, 1, validate=True)
    assert moved.requests["cpu"] == 4000      # the same container as a regular one: summed


def test_validation_is_not_skipped_for_a_shape_seen_unvalidated():
    bad = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}    # requests above limits
    ok = _pod("cluster-pod", **bad, validate=False)             # a cluster's pod: not validated
    assert ok.requests["cpu"] == 2000
    for name in ("input-1", "input-2"):                         # failures are never memoised
        with pytest.raises(InputError, match=r"must be less than or equal to cpu limit of 1"):
            _pod(name, **bad)


def test_other_errors_still_reported_with_a_memoised_shape():
    good = {"requests": {"cpu": "1"}}
    _pod("first", **good)
    d = pod_dict("Bad_Name", requests={"cpu": "1"})
    with pytest.raises(InputError, match=r"metadata\.name"):
        Pod(d, 1, validate=True)
    no_containers = {"metadata": {"name": "empty"}, "spec": {"containers": []}}
    with pytest.raises(InputError, match=r"spec\.containers: Required value"):
        Pod(no_containers, 1, validate=True)


@pytest.mark.parametrize("resources", [
    {"requests": {"cpu": True}},               # not a quantity
    {"requests": {"cpu": 1.5}},                # floats are not memoised (1.0 == 1)
    {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]},
    {"requests": "cpu=1"},
])
def test_unusual_resources_are_decoded_as_before(resources):
    def decode():
        d = pod_dict("p")
        d["spec"]["containers"][0]["resources"] = resources
        try:
            p = Pod(d, 1, validate=True)
            return p.requests
        except InputError as e:
            return str(e)
    assert objects._resources_shape([{"resources": resources}], [], {}, True) is None
    assert decode() == decode()


# ---- the pass's queue order -------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_queue_order_is_the_scheduling_queues(seed):
    """_queue_order pops what SchedulingQueue pops when each pod is added at its creation time
    and popped once (PrioritySort: priority, then queue timestamp, then arrival), gated pods
    apart in arrival order."""
    rng = random.Random(seed)
    pods = []
    for i in range(60):
        d = pod_dict(f"p{i}", requests={"cpu": "1"})
        d["spec"]["priority"] = rng.choice([0, 0, 10, 1000])
        d["metadata"]["creationTimestamp"] = rng.choice([None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z",
                                                         "2026-01-01T00:01:00Z"])
        if rng.random() < 0.15:
            d["spec"]["schedulingGates"] = [{"name": "wait"}]
        pods.append(Pod(d, seq=i))
    pending = sorted(pods, key=lambda p: (p.creation or 0.0, p.seq))
    sched = make_scheduler(make_table([make_node("n")]), default=True)
    active, gated = _queue_order(sched, pending)

    now = [0.0]
    fw = sched.default_framework
    q = SchedulingQueue(fw.less, clock=lambda: now[0], pre_enqueue=fw.run_pre_enqueue,
                        sort_key=fw.points["queueSort"][0].sort_key)
    for p in pending:
        now[0] = max(now[0], p.creation or 0.0)
        q.add(p)
    want_gated = [w.key for w in q.pending_pods()[1] if w.gated]
    want = []
    while (x := q.pop()) is not None:
        want.append(x.key)
        q.done(x.key)
    assert [a.key for a in active] == want
    assert [g.key for g in gated] == want_gated
    assert want_gated and len(want) + len(want_gated) == 60


# ---- YAML Lists: each pod slimmed once ---------------------------------------------------------------

def test_sliced_yaml_list_pods_slimmed_once(tmp_path, monkeypatch):
    from caldera.api import parse
    monkeypatch.setattr(parse, "SLICE_CHARS", 2048)
    items = "".join(f"""- apiVersion: v1
  kind: Pod
  metadata:
    name: p{i}
    resourceVersion: "{i}"
  spec:
    containers:
    - name: c
      image: i
      env:
      - name: A
        value: b
    dnsPolicy: ClusterFirst
""" for i in range(200))
    f = tmp_path / "list.yaml"
    f.write_text("apiVersion: v1\nitems:\n" + items + "kind: List\nmetadata:\n  resourceVersion: \"\"\n")
    calls = []
    real = reader._slim_pod
    monkeypatch.setattr(reader, "_slim_pod", lambda d: (calls.append(d["metadata"]["name"]), real(d)))
    docs = reader.read_documents([str(f)])
    assert len(docs) == 200 and sorted(calls) == sorted(f"p{i}" for i in range(200))
    pod = docs[7][2]
    assert "resourceVersion" not in pod["metadata"] and "dnsPolicy" not in pod["spec"]
    assert "env" not in pod["spec"]["containers"][0]


@pytest.mark.parametrize(("meta", "kept"), [
    ({}, False),                                                        # pending or running: dropped
    ({"deletionTimestamp": "2026-01-01T00:00:00Z"}, True),              # preemption reads DisruptionTarget
    ({"labels": {"volcano.sh/cooldown-time": "10m"}}, True),            # cdp reads PodScheduled
    ({"annotations": {"volcano.sh/cooldown-time": "10m"}}, True),
])
def test_slim_keeps_conditions_only_where_read(meta, kept):
    cond = [{"type": "PodScheduled", "status": "True"}]
    doc = {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "1", **meta},
           "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": cond}}
    reader._slim_pod(doc)
    assert ("conditions" in doc["status"]) is kept and "podIP" not in doc["status"]
    assert doc["status"]["phase"] == "Running" and "resourceVersion" not in doc["metadata"]
