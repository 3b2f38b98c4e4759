"""Volcano plugin arguments that have no effect warn when the conf is loaded (issue 14): Volcano
ignores an unknown key silently, so a misspelt weight would quietly stay at its default."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from caldera.batch.conf import VolcanoConf
from caldera.cli.main import cli
from caldera.configfile import load_config
from caldera.plugins.registry import build_registry

ROOT = Path(__file__).resolve().parents[2]
REG = build_registry(third_party=False)


def conf_with(tmp_path: Path, plugin: str, args: str) -> str:
    p = tmp_path / "volcano.conf"
    p.write_text(f'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: {plugin}\n    arguments:\n'
                 + "".join(f"      {line}\n" for line in args.splitlines()))
    return str(p)


def warnings_of(path: str) -> list[str]:
    conf = load_config(path, REG)
    assert isinstance(conf, VolcanoConf)
    return conf.warnings


def test_misspelt_argument_warns_with_did_you_mean(tmp_path):
    path = conf_with(tmp_path, "nodeorder", "leastrequested.wieght: 2\nmostrequested.weight: 1")
    assert warnings_of(path) == [f'{path}: plugin "nodeorder" argument "leastrequested.wieght" is not read '
                                 '(did you mean "leastrequested.weight"?); ignored']


def test_unsupported_volcano_argument_warns(tmp_path):
    path = conf_with(tmp_path, "predicates", "predicate.GPUSharingEnable: true\npredicate.NodeAffinityEnable: true\n"
                                             "predicate.ProportionalEnable: true\npredicate.resources: nvidia.com/gpu\n"
                                             "predicate.resources.nvidia.com/gpu.cpu: 4")
    w = warnings_of(path)
    assert len(w) == 4, w
    assert w[0] == (f'{path}: plugin "predicates" argument "predicate.GPUSharingEnable" is not read (predicates '
                    "reads it only before Volcano v1.9; GPU sharing is the deviceshare plugin's "
                    '"deviceshare.GPUSharingEnable"); ignored')
    assert all(x.endswith("; ignored") and "is not supported by Caldera" in x for x in w[1:])


@pytest.mark.parametrize("plugin,args,needle", [
    ("binpack", "binpack.resources: nvidia.com/gpu\nbinpack.resources.nvidia.com/gpu: 2\n"
                "binpack.resources.example.com/fpga: 3",
     "\"binpack.resources.example.com/fpga\" is not read (binpack.resources does not list \"example.com/fpga\")"),
    ("overcommit", "overcommit_factor: 2", 'did you mean "overcommit-factor"?'),
    ("gang", "something: 1", "(gang takes no arguments)"),
    ("capacity", "zzz: 1", "(capacity reads ancestorReclaimLevel, capacity."),
])
def test_other_plugins(tmp_path, plugin, args, needle):
    w = warnings_of(conf_with(tmp_path, plugin, args))
    assert len(w) == 1 and needle in w[0], w


def test_known_arguments_do_not_warn(tmp_path):
    path = conf_with(tmp_path, "nodeorder", "\n".join(f"{k}: 1" for k in (
        "leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
        "podaffinity.weight", "tainttoleration.weight", "podtopologyspread.weight", "imagelocality.weight")))
    assert warnings_of(path) == []
    for conf in ("examples/batch/volcano-scheduler.conf", "examples/batch/reclaim/volcano-scheduler.conf"):
        assert warnings_of(str(ROOT / conf)) == []


def test_schedule_prints_the_warning(tmp_path):
    path = conf_with(tmp_path, "nodeorder", "leastrequested.wieght: 2")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(ROOT / "examples/batch/weighted-queues"), "--config", path,
                                 "-o", "json"])
    assert r.exit_code == 0, (r.stderr, r.exception)
    assert f'caldera: warning: {path}: plugin "nodeorder" argument "leastrequested.wieght" is not read' in r.stderr


@pytest.mark.parametrize("command", ["simulate", "run"])
def test_simulate_and_run_print_the_warning(tmp_path, command):
    path = conf_with(tmp_path, "nodeorder", "leastrequested.wieght: 2")
    args = {"simulate": ["simulate", "--cluster", str(ROOT / "examples/cluster/nodes.yaml"), "--workload",
                         str(ROOT / "examples/cluster/pending.yaml"), "--config", path, "--out", str(tmp_path / "o"),
                         "--jobs", "1"],
            # no cluster to talk to: the warning comes before the connection error
            "run": ["run", "--config", path, "--kubeconfig", str(tmp_path / "none")]}[command]
    r = CliRunner().invoke(cli, args)
    assert f'caldera: warning: {path}: plugin "nodeorder" argument "leastrequested.wieght" is not read' in r.stderr
