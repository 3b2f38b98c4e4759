"""--config as deployed: a KubeSchedulerConfiguration or a volcano-scheduler.conf inside a ConfigMap
(issue 14), and configuration files nested absurdly deep (one-line error, never a traceback)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from caldera.batch.conf import VolcanoConf
from caldera.cli.main import cli
from caldera.config.loader import load_kube_config
from caldera.config.types import SchedulerConfig
from caldera.configfile import load_config
from caldera.errors import ConfigError
from caldera.plugins.registry import build_registry

ROOT = Path(__file__).resolve().parents[2]
REG = build_registry(third_party=False)
VOLCANO_CONF = (ROOT / "examples/batch/volcano-scheduler.conf").read_text()
KUBE = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: mine\n")


def configmap(data: dict[str, str], name: str = "cfg") -> str:
    body = "".join(f"  {k}: |\n{textwrap.indent(v, '    ')}" for k, v in data.items())
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: kube-system}}\ndata:\n{body}"


def write(tmp_path: Path, text: str, name: str = "cm.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_line_error(r, *needles: str) -> str:
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr, r.exception)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


def test_deployed_configmap_schedules():
    r = invoke("schedule", "-f", str(ROOT / "examples/cluster"), "--config", str(ROOT / "deploy/configmap.yaml"),
               "-o", "json")
    assert r.exit_code == 0, (r.stderr, r.exception)
    out = json.loads(r.stdout)
    # its profile is caldera-scheduler: the examples' pods are default-scheduler's, so none is taken
    assert out["bindings"] == [] and {i["kind"] for i in out["ignored"]} == {"Pod"}
    assert all("(profiles: caldera-scheduler)" in i["reason"] for i in out["ignored"])


def test_kube_config_in_a_configmap(tmp_path):
    path = write(tmp_path, configmap({"config.yaml": KUBE}))
    for cfg in (load_config(path, REG), load_kube_config(path, REG)):
        assert isinstance(cfg, SchedulerConfig)
        assert [p.scheduler_name for p in cfg.profiles] == ["mine"]


def test_volcano_conf_in_a_configmap(tmp_path):
    path = write(tmp_path, configmap({"volcano-scheduler.conf": VOLCANO_CONF}))
    conf = load_config(path, REG)
    assert isinstance(conf, VolcanoConf)
    assert conf.actions == ["enqueue", "allocate", "backfill"] and "binpack" in conf.plugin_names()
    r = invoke("schedule", "-f", str(ROOT / "examples/batch/gang-training"), "--config", path, "-o", "json")
    assert r.exit_code == 0, (r.stderr, r.exception)
    out = json.loads(r.stdout)
    assert len(out["bindings"]) == 5 and {g["name"] for g in out["podGroups"]} == {"ml/resnet", "ml/llm-ft"}


def test_volcano_key_wins_and_another_single_candidate_is_found(tmp_path):
    both = write(tmp_path, configmap({"readme.txt": "hello\n", "volcano-scheduler.conf": VOLCANO_CONF,
                                      "kube.yaml": KUBE}), "both.yaml")
    assert isinstance(load_config(both, REG), VolcanoConf)
    other_key = write(tmp_path, configmap({"notes": "just: text\n", "sched.conf": VOLCANO_CONF}), "other.yaml")
    assert isinstance(load_config(other_key, REG), VolcanoConf)


def test_several_candidates_is_an_error(tmp_path):
    path = write(tmp_path, configmap({"a.yaml": KUBE, "b.yaml": KUBE}))
    with pytest.raises(ConfigError, match=r"several keys hold a scheduler configuration \(a.yaml, b.yaml\)"):
        load_config(path, REG)


def test_no_candidate_names_the_expected_keys(tmp_path):
    path = write(tmp_path, configmap({"a": "x: 1\n", "b": "y: 2\n"}))
    with pytest.raises(ConfigError) as e:
        load_config(path, REG)
    assert "no key holds" in str(e.value) and "(keys: a, b)" in str(e.value)
    assert 'data["volcano-scheduler.conf"]' in str(e.value)


def test_errors_inside_the_configmap_name_the_file_and_key(tmp_path):
    bad = KUBE + "  percentageOfNodesToScore: 300\n"
    path = write(tmp_path, configmap({"config.yaml": bad}))
    one_line_error(invoke("schedule", "-f", str(ROOT / "examples/cluster"), "--config", path),
                   f'{path} (data["config.yaml"]): profiles[0].percentageOfNodesToScore')
    vbad = write(tmp_path, configmap({"volcano-scheduler.conf": 'actions: "enqueue, alocate"\n'}), "v.yaml")
    one_line_error(invoke("schedule", "-f", str(ROOT / "examples/cluster"), "--config", vbad),
                   f'{vbad} (data["volcano-scheduler.conf"]): actions', "unknown action 'alocate'")


def test_configmap_in_a_multi_document_file_or_list(tmp_path):
    """Volcano's Helm chart renders several objects; the ConfigMap holding the conf is found."""
    sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: volcano-scheduler}\n"
    other_cm = configmap({"admission.yaml": "x: 1\n"}, name="admission")
    multi = write(tmp_path, "---\n".join([sa, other_cm, configmap({"volcano-scheduler.conf": VOLCANO_CONF})]),
                  "chart.yaml")
    assert isinstance(load_config(multi, REG), VolcanoConf)
    import yaml
    lst = {"apiVersion": "v1", "kind": "List",
           "items": [yaml.safe_load(sa), yaml.safe_load(configmap({"config.yaml": KUBE}))]}
    assert isinstance(load_config(write(tmp_path, json.dumps(lst), "list.json"), REG), SchedulerConfig)
    two = write(tmp_path, "---\n".join([configmap({"config.yaml": KUBE}, name="a"),
                                       configmap({"config.yaml": KUBE}, name="b")]), "two.yaml")
    with pytest.raises(ConfigError, match="several ConfigMaps hold a scheduler configuration"):
        load_config(two, REG)
    plain = write(tmp_path, sa + "---\n" + sa, "plain.yaml")
    with pytest.raises(ConfigError, match="2 documents, none of them"):
        load_config(plain, REG)


@pytest.mark.parametrize("command", ["schedule", "simulate", "run"])
def test_every_command_reads_a_configmap(tmp_path, command):
    """run and simulate share configfile.load_config: a broken conf in a ConfigMap is the same
    one-line error there (so the ConfigMap was read) before anything else happens."""
    path = write(tmp_path, configmap({"volcano-scheduler.conf": "tiers:\n- plugins: [{name: gnag}]\n"}))
    args = {"schedule": ["schedule", "-f", str(ROOT / "examples/cluster"), "--config", path],
            "simulate": ["simulate", "--cluster", str(ROOT / "examples/cluster/nodes.yaml"), "--workload",
                         str(ROOT / "examples/cluster/pending.yaml"), "--config", path, "--out", str(tmp_path / "o")],
            "run": ["run", "--config", path, "--kubeconfig", str(tmp_path / "none")]}[command]
    one_line_error(invoke(*args), f'{path} (data["volcano-scheduler.conf"]): tiers[0].plugins[0]', "gnag")


# ---- nesting -----------------------------------------------------------------------------------------
DEEP = 600


@pytest.mark.parametrize("name,text", [
    ("flow.yaml", "a: " + "[" * DEEP + "]" * DEEP + "\n"),
    ("block.yaml", "".join("  " * i + "k:\n" for i in range(DEEP))),
    ("deep.json", '{"a": ' + "[" * DEEP + "]" * DEEP + "}"),
    ("objects.json", '{"apiVersion": "kubescheduler.config.k8s.io/v1", "x": ' + '{"a": ' * DEEP + "1" + "}" * DEEP
     + "}"),
    ("cm.yaml", configmap({"config.yaml": "a: " + "[" * DEEP + "]" * DEEP + "\n"})),
])
def test_nested_600_levels_is_one_line(tmp_path, name, text):
    path = write(tmp_path, text, name)
    err = one_line_error(invoke("schedule", "-f", str(ROOT / "examples/cluster"), "--config", path),
                         "nested more than 100 levels deep")
    assert err.startswith(f"caldera: error: {path}")
    with pytest.raises(ConfigError, match="nested more than"):
        load_kube_config(path, REG)
