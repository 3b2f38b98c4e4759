"""KubeSchedulerConfiguration loading: defaults, enabling/disabling, weights, multiPoint overrides,
custom plugins, pluginConfig reaching the plugins, several profiles (kube v1 semantics)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from caldera.config.defaults import default_config
from caldera.config.loader import load_kube_config
from caldera.engine.scheduler import Scheduler
from caldera.errors import ConfigError
from caldera.framework.interface import Plugin
from caldera.framework.runtime import default_normalize
from caldera.plugins.registry import build_registry

from ..builders import make_node, make_pod, make_table, run_score
from .kube_stubs import as_lists

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class PreferZone(Plugin):
    """A custom (out-of-tree style) filter + score plugin for the tests."""
    name = "PreferZone"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        if set(self.args) - {"zone"}:
            raise ConfigError(f"PreferZoneArgs: unknown field(s) {sorted(set(self.args) - {'zone'})}")
        self.zone = self.args.get("zone", "a")

    def filter_node(self, state, pod, table, i):
        return None

    def score(self, state, pod, table, idx):
        return np.asarray(table.label_values("zone")[idx] == self.zone, dtype=bool).astype(np.int64)

    def normalize_score(self, state, pod, scores):
        return default_normalize(scores)


REG = build_registry({"PreferZone": PreferZone}, third_party=False)
DEFAULT = as_lists(default_config(REG).profiles[0].plugins)


def load(tmp_path, body: str, registry=REG, name="c.yaml"):
    f = tmp_path / name
    f.write_text(body if body.startswith(("{", "apiVersion")) else HEADER + body)
    return load_kube_config(str(f), registry)


def plugins(tmp_path, body: str) -> dict:
    return as_lists(load(tmp_path, body).profiles[0].plugins)


def without(lst, name):
    return [x for x in lst if (x[0] if isinstance(x, tuple) else x) != name]


# ---- top level and defaults ----------------------------------------------------------------------
def test_no_file_is_the_default_config():
    cfg = load_kube_config(None, REG)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    assert as_lists(cfg.profiles[0].plugins) == DEFAULT


def test_defaults_of_an_empty_configuration(tmp_path):
    cfg = load(tmp_path, "")
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (16, 0)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1.0, 10.0)
    assert cfg.source.endswith("c.yaml")
    (p,) = cfg.profiles
    assert p.scheduler_name == "default-scheduler" and p.percentage_of_nodes_to_score is None
    assert p.plugin_args == {} and as_lists(p.plugins) == DEFAULT
    assert as_lists(load(tmp_path, "profiles: []\n").profiles[0].plugins) == DEFAULT


def test_top_level_fields(tmp_path):
    cfg = load(tmp_path, "parallelism: 4\npercentageOfNodesToScore: 30\npodInitialBackoffSeconds: 2\n"
                         "podMaxBackoffSeconds: 20\nleaderElection: {leaderElect: false}\n"
                         "clientConnection: {qps: 100}\nenableProfiling: false\n"
                         "profiles:\n- schedulerName: s1\n  percentageOfNodesToScore: 70\n")
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (4, 30)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2.0, 20.0)
    assert cfg.profiles[0].scheduler_name == "s1" and cfg.profiles[0].percentage_of_nodes_to_score == 70


def test_json_configuration_equals_yaml(tmp_path):
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "j", "plugins": {"score": {"disabled": [{"name": "TaintToleration"}]}}}]}
    a = load(tmp_path, json.dumps(doc), name="c.json")
    b = load(tmp_path, "profiles:\n- schedulerName: j\n  plugins:\n    score:\n      disabled:\n"
                       "      - name: TaintToleration\n")
    assert as_lists(a.profiles[0].plugins) == as_lists(b.profiles[0].plugins)
    assert a.profiles[0].scheduler_name == "j"


# ---- enabling / disabling ------------------------------------------------------------------------
def test_disable_default_at_one_point_keeps_it_elsewhere(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    score:\n      disabled: [{name: TaintToleration}]\n")
    assert got["score"] == without(DEFAULT["score"], "TaintToleration")
    assert "TaintToleration" in got["filter"] and "TaintToleration" in got["preScore"]
    assert {k: v for k, v in got.items() if k != "score"} == {k: v for k, v in DEFAULT.items() if k != "score"}


def test_disable_star_at_one_point(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    preScore:\n      disabled: [{name: '*'}]\n"
                            "    score:\n      disabled: [{name: '*'}]\n      enabled: [{name: NodeResourcesFit, "
                            "weight: 2}]\n")
    assert got["preScore"] == [] and got["score"] == [("NodeResourcesFit", 2)]
    assert got["filter"] == DEFAULT["filter"]


def test_disable_at_multipoint_removes_it_everywhere(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: TaintToleration}]\n")
    assert got == {p: without(v, "TaintToleration") for p, v in DEFAULT.items()}


def test_disable_star_at_multipoint_keeps_only_what_is_enabled(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: '*'}]\n"
                            "      enabled: [{name: PrioritySort}, {name: NodeResourcesFit, weight: 3}, "
                            "{name: DefaultBinder}]\n")
    assert got["queueSort"] == ["PrioritySort"] and got["bind"] == ["DefaultBinder"]
    assert got["filter"] == ["NodeResourcesFit"] and got["preFilter"] == ["NodeResourcesFit"]
    assert got["score"] == [("NodeResourcesFit", 3)]
    assert got["preEnqueue"] == [] and got["postFilter"] == []


def test_disabling_a_kube_plugin_caldera_lacks_is_a_no_op(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: NodeDeclaredFeatures}]\n")
    assert got == DEFAULT


# ---- weights and multiPoint overrides ------------------------------------------------------------
def test_multipoint_weight_replaces_default_in_place(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: TaintToleration, "
                            "weight: 7}]\n")
    assert got["score"] == [("TaintToleration", 7) if n == "TaintToleration" else (n, w) for n, w in DEFAULT["score"]]
    assert got["filter"] == DEFAULT["filter"]


def test_score_point_overrides_multipoint_and_runs_first(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    score:\n      enabled: [{name: NodeResourcesFit, "
                            "weight: 4}]\n")
    assert got["score"] == [("NodeResourcesFit", 4)] + without(DEFAULT["score"], "NodeResourcesFit")
    assert got["filter"] == DEFAULT["filter"] and got["preScore"] == DEFAULT["preScore"]


def test_score_point_without_weight_means_one_not_the_multipoint_weight(tmp_path):
    # getScoreWeights looks at score.enabled before multiPoint: unset there is 0, which becomes 1
    got = plugins(tmp_path, "profiles:\n- plugins:\n    score:\n      enabled: [{name: TaintToleration}]\n")
    assert got["score"][0] == ("TaintToleration", 1)
    got = plugins(tmp_path, "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: TaintToleration, "
                            "weight: 0}]\n")
    assert ("TaintToleration", 1) in got["score"]


def test_specific_point_order_with_star(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    filter:\n      disabled: [{name: '*'}]\n"
                            "      enabled: [{name: NodeResourcesFit}, {name: TaintToleration}]\n")
    assert got["filter"] == ["NodeResourcesFit", "TaintToleration"]


# ---- custom plugins ------------------------------------------------------------------------------
def test_custom_plugin_through_multipoint_is_appended_everywhere_it_fits(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: PreferZone, "
                            "weight: 5}]\n")
    assert got["score"] == DEFAULT["score"] + [("PreferZone", 5)]
    assert got["filter"] == DEFAULT["filter"] + ["PreferZone"]
    assert got["preScore"] == DEFAULT["preScore"]


def test_custom_plugin_at_score_only(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    score:\n      enabled: [{name: PreferZone}]\n")
    assert got["score"] == DEFAULT["score"] + [("PreferZone", 1)]
    assert got["filter"] == DEFAULT["filter"]


def test_replace_default_scorer_with_custom_one_in_its_place(tmp_path):
    got = plugins(tmp_path, "profiles:\n- plugins:\n    score:\n      disabled: [{name: '*'}]\n      enabled:\n"
                            "      - {name: TaintToleration, weight: 3}\n      - {name: PreferZone, weight: 2}\n"
                            "      - {name: NodeResourcesFit, weight: 1}\n")
    assert got["score"] == [("TaintToleration", 3), ("PreferZone", 2), ("NodeResourcesFit", 1)]


# ---- pluginConfig --------------------------------------------------------------------------------
FIT_ONLY = "  plugins:\n    score:\n      disabled: [{name: '*'}]\n      enabled: [{name: NodeResourcesFit}]\n"


def _packing_cluster():
    n1, n2 = make_node("n1", cpu="4", memory="8Gi"), make_node("n2", cpu="4", memory="8Gi")
    return make_table([n1, n2], [make_pod("r", cpu="2", memory="4Gi", node="n1")])


@pytest.mark.parametrize("strategy,scores,winner", [
    # LeastAllocated: n1 cpu (4000-2100)*100//4000=47, mem (8192-4296)Mi*100//8192Mi=47;
    #                 n2 cpu (4000-100)*100//4000=97, mem (8192-200)*100//8192=97
    ("LeastAllocated", {"n1": 47, "n2": 97}, "n2"),
    # MostAllocated: n1 cpu 2100*100//4000=52, mem 4296*100//8192=52; n2 100*100//4000=2, 200*100//8192=2
    ("MostAllocated", {"n1": 52, "n2": 2}, "n1"),
])
def test_plugin_config_args_reach_the_plugin(tmp_path, strategy, scores, winner):
    cfg = load(tmp_path, "profiles:\n- schedulerName: default-scheduler\n" + FIT_ONLY +
               f"  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy: {{type: {strategy}}}\n")
    assert cfg.profiles[0].plugin_args == {"NodeResourcesFit": {"scoringStrategy": {"type": strategy}}}
    sched = Scheduler(cfg, _packing_cluster(), REG)
    assert sched.default_framework.plugin("NodeResourcesFit").strategy == strategy
    pod = make_pod("p", cpu="100m", memory="200Mi")
    assert run_score(sched, pod)["NodeResourcesFit"] == scores
    assert sched.schedule_one(pod).node == winner


def test_plugin_config_kind_and_api_version_are_accepted_and_stripped(tmp_path):
    cfg = load(tmp_path, "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
                         "      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: NodeResourcesFitArgs\n"
                         "      scoringStrategy: {type: MostAllocated}\n  - name: PreferZone\n    args: {zone: b}\n")
    assert cfg.profiles[0].plugin_args == {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}},
                                           "PreferZone": {"zone": "b"}}


def test_custom_plugin_args_change_its_score(tmp_path):
    body = ("profiles:\n- plugins:\n    score:\n      disabled: [{name: '*'}]\n      enabled: [{name: PreferZone, "
            "weight: 3}]\n  pluginConfig:\n  - name: PreferZone\n    args: {zone: b}\n")
    cfg = load(tmp_path, body)
    t = make_table([make_node("na", labels={"zone": "a"}), make_node("nb", labels={"zone": "b"})])
    sched = Scheduler(cfg, t, REG)
    sc = run_score(sched, make_pod("p", cpu="1"))
    assert sc["PreferZone"] == {"na": 0, "nb": 100} and sc["total"] == {"na": 0, "nb": 300}


# ---- several profiles ----------------------------------------------------------------------------
def test_several_profiles_route_pods_by_scheduler_name(tmp_path):
    cfg = load(tmp_path, "profiles:\n- schedulerName: spread\n" + FIT_ONLY +
               "- schedulerName: pack\n  percentageOfNodesToScore: 50\n" + FIT_ONLY +
               "  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated}}\n")
    assert [p.scheduler_name for p in cfg.profiles] == ["spread", "pack"]
    assert [p.percentage_of_nodes_to_score for p in cfg.profiles] == [None, 50]
    assert cfg.profiles[0].plugin_args == {}
    sched = Scheduler(cfg, _packing_cluster(), REG)
    assert sched.schedule_one(make_pod("a", cpu="100m", scheduler_name="spread")).node == "n2"
    assert sched.schedule_one(make_pod("b", cpu="100m", scheduler_name="pack")).node == "n1"


def test_profiles_may_share_an_explicit_queue_sort(tmp_path):
    qs = "  plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}]\n"
    cfg = load(tmp_path, "profiles:\n- schedulerName: a\n" + qs + "- schedulerName: b\n" + qs)
    assert [as_lists(p.plugins)["queueSort"] for p in cfg.profiles] == [["PrioritySort"], ["PrioritySort"]]


# ---- plugin registration details -----------------------------------------------------------------
class NeedsHandle(Plugin):
    name = "NeedsHandle"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self.nodes = len(handle.table)          # only possible inside a scheduler

    def score(self, state, pod, table, idx):
        return np.zeros(idx.size, dtype=np.int64)


class Crashes(Plugin):
    name = "Crashes"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        raise RuntimeError("boom")

    def score(self, state, pod, table, idx):
        return np.zeros(idx.size, dtype=np.int64)


def test_args_of_a_plugin_needing_the_handle_are_checked_when_the_scheduler_builds_it(tmp_path):
    reg = build_registry({"NeedsHandle": NeedsHandle}, third_party=False)
    cfg = load(tmp_path, "profiles:\n- plugins:\n    score:\n      enabled: [{name: NeedsHandle}]\n"
                         "  pluginConfig:\n  - name: NeedsHandle\n    args: {x: 1}\n", registry=reg)
    assert cfg.profiles[0].plugin_args == {"NeedsHandle": {"x": 1}}
    sched = Scheduler(cfg, make_table([make_node("n1")]), reg)
    assert sched.default_framework.plugin("NeedsHandle").nodes == 1


def test_a_plugin_crashing_on_its_args_is_one_config_error(tmp_path):
    reg = build_registry({"Crashes": Crashes}, third_party=False)
    with pytest.raises(ConfigError, match=r"c\.yaml: profiles\[0\]\.pluginConfig\[0\]\.args: plugin Crashes failed "
                                          r"to start with these args \(RuntimeError: boom\); "):
        load(tmp_path, "profiles:\n- pluginConfig:\n  - name: Crashes\n", registry=reg)


def test_plugin_class_name_must_match_its_registered_name(tmp_path):
    reg = build_registry({"Other": PreferZone}, third_party=False)
    with pytest.raises(ConfigError, match=r"profiles\[0\]\.plugins\.score\.enabled\[0\]\.name: plugin 'Other' is "
                                          r"registered with class .*PreferZone, whose name is 'PreferZone'; "):
        load(tmp_path, "profiles:\n- plugins:\n    score:\n      enabled: [{name: Other}]\n", registry=reg)
