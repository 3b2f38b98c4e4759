"""Plugin-set merging and multiPoint expansion, against kube's own test tables:
TestMergePlugins (apis/config/v1/default_plugins_test.go), TestNewFrameworkMultiPointExpansion
(framework/runtime/framework_test.go) and ExpandedPluginsV1 (apis/config/testing/defaults)."""
from __future__ import annotations

import pytest

from caldera.config.defaults import CALDERA_MULTIPOINT, default_config, default_plugins
from caldera.config.expand import (
    EXTENSION_POINTS,
    MULTI_POINT,
    PluginSet,
    PluginSetError,
    expand_plugins,
    merge_plugin_set,
    merge_plugins,
)
from caldera.config.loader import load_kube_config
from caldera.config.types import PluginRef
from caldera.plugins.registry import build_registry

from .kube_stubs import KUBE_EXPANDED_V1, KUBE_REGISTRY, as_lists, stub


def ps(enabled=(), disabled=()):
    return PluginSet([PluginRef(*e) if isinstance(e, tuple) else PluginRef(e) for e in enabled], list(disabled))


def flat(s: PluginSet):
    return [(r.name, r.weight) for r in s.enabled], s.disabled


# ---- TestMergePlugins ---------------------------------------------------------------------------
MERGE_CASES = [
    # (name, default set, custom set, expected set)
    ("AppendCustomPlugin", ps(["DefaultPlugin1", "DefaultPlugin2"]), ps(["CustomPlugin"]),
     ps(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"])),
    ("InsertAfterDefaultPlugins2", ps(["DefaultPlugin1", "DefaultPlugin2"]),
     ps(["CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"]),
     ps(["DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"])),
    ("InsertBeforeAllPlugins", ps(["DefaultPlugin1", "DefaultPlugin2"]),
     ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"]),
     ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"])),
    ("ReorderDefaultPlugins", ps(["DefaultPlugin1", "DefaultPlugin2"]),
     ps(["DefaultPlugin2", "DefaultPlugin1"], ["*"]), ps(["DefaultPlugin2", "DefaultPlugin1"], ["*"])),
    ("ApplyEmptyCustomPlugin", ps(["DefaultPlugin1", "DefaultPlugin2"]), ps(),
     ps(["DefaultPlugin1", "DefaultPlugin2"])),
    ("CustomPluginOverrideDefaultPlugin", ps(["Plugin1", "Plugin2", "Plugin3"]),
     ps([("Plugin1", 2), ("Plugin3", 3)]), ps([("Plugin1", 2), "Plugin2", ("Plugin3", 3)])),
    ("OrderPreserveAfterOverride", ps(["Plugin1", "Plugin2", "Plugin3"]),
     ps([("Plugin2", 2), ("Plugin1", 1)]), ps([("Plugin1", 1), ("Plugin2", 2), "Plugin3"])),
    ("RepeatedCustomPlugin", ps(["Plugin1", "Plugin2", "Plugin3"]),
     ps(["Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)]),
     ps(["Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)])),
    ("Append custom MultiPoint plugin", ps(["DefaultPlugin1", "DefaultPlugin2"]), ps(["CustomPlugin"]),
     ps(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"])),
    ("Append disabled Multipoint plugins", ps(["DefaultPlugin1", "DefaultPlugin2"]),
     ps(["CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]),
     ps(["DefaultPlugin1", "CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"])),
    ("override default MultiPoint plugins with custom value", ps(["DefaultPlugin"]), ps([("DefaultPlugin", 5)]),
     ps([("DefaultPlugin", 5)])),
    ("disabled MultiPoint plugin in default set", ps(["DefaultPlugin"], ["DefaultPlugin2"]), ps(["CustomPlugin"]),
     ps(["DefaultPlugin", "CustomPlugin"], ["DefaultPlugin2"])),
    ("multipoint with only disabled gets merged", ps(["DefaultPlugin"]), ps([], ["DefaultPlugin"]),
     ps([], ["DefaultPlugin"])),
]


@pytest.mark.parametrize("name,default,custom,want", MERGE_CASES, ids=[c[0] for c in MERGE_CASES])
def test_merge_plugin_set(name, default, custom, want):
    assert flat(merge_plugin_set(default, custom)) == flat(want)


def test_merge_plugins_per_point_and_untouched_points():
    """'disabled MultiPoint plugin in default set for specific extension point' and a nil custom set."""
    default = {MULTI_POINT: ps(["DefaultPlugin"]), "score": ps([], ["DefaultPlugin2"])}
    got = merge_plugins(default, {MULTI_POINT: ps(["CustomPlugin"])})
    assert flat(got[MULTI_POINT]) == flat(ps(["DefaultPlugin", "CustomPlugin"]))
    assert flat(got["score"]) == flat(ps([], ["DefaultPlugin2"]))
    assert flat(merge_plugins(default, None)[MULTI_POINT]) == flat(ps(["DefaultPlugin"]))


# ---- TestNewFrameworkMultiPointExpansion ---------------------------------------------------------
TEST_PLUGIN = "test-plugin"
SCORE1, SCORE2, SCORE_NORM1 = "score-plugin-1", "score-plugin-2", "score-with-normalize-plugin-1"
QSORT, BIND = "no-op-queue-sort-plugin", "bind-plugin"
FW_REGISTRY = {
    TEST_PLUGIN: stub(TEST_PLUGIN, "less", "pre_filter", "filter_node", "post_filter", "pre_score", "score",
                      "reserve", "permit", "pre_bind", "bind", "post_bind"),
    SCORE1: stub(SCORE1, "pre_score", "score"),
    SCORE2: stub(SCORE2, "pre_score", "score"),
    SCORE_NORM1: stub(SCORE_NORM1, "score", "normalize_score"),
    QSORT: stub(QSORT, "less"),
    BIND: stub(BIND, "bind"),
}
ALL_BUT_PREENQUEUE = [p for p in EXTENSION_POINTS if p != "preEnqueue"]


def everywhere(score_weight=1, **override):
    """TEST_PLUGIN alone at every point it implements, with `override` points replaced."""
    out = {p: [TEST_PLUGIN] for p in ALL_BUT_PREENQUEUE}
    out["preEnqueue"] = []
    out["score"] = [(TEST_PLUGIN, score_weight)]
    out.update(override)
    return out


EXPANSION_CASES = [
    ("plugin expansion", {MULTI_POINT: ps([(TEST_PLUGIN, 5)])}, everywhere(5)),
    ("disable MultiPoint plugin at some extension points",
     {MULTI_POINT: ps([TEST_PLUGIN]), "preScore": ps([], [TEST_PLUGIN]), "score": ps([], [TEST_PLUGIN])},
     everywhere(preScore=[], score=[])),
    ("Multiple MultiPoint plugins", {MULTI_POINT: ps([TEST_PLUGIN, SCORE1])},
     everywhere(preScore=[TEST_PLUGIN, SCORE1], score=[(TEST_PLUGIN, 1), (SCORE1, 1)])),
    ("disable MultiPoint extension", {MULTI_POINT: ps([TEST_PLUGIN, SCORE1]), "preScore": ps([], ["*"])},
     everywhere(preScore=[], score=[(TEST_PLUGIN, 1), (SCORE1, 1)])),
    ("Reorder MultiPoint plugins (specified extension takes precedence)",
     {MULTI_POINT: ps([SCORE_NORM1, TEST_PLUGIN, SCORE1]), "score": ps([SCORE1, TEST_PLUGIN])},
     everywhere(preScore=[TEST_PLUGIN, SCORE1], score=[(SCORE1, 1), (TEST_PLUGIN, 1), (SCORE_NORM1, 1)])),
    ("Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)",
     {MULTI_POINT: ps([TEST_PLUGIN, SCORE1]), "score": ps([SCORE_NORM1, SCORE1, TEST_PLUGIN])},
     everywhere(preScore=[TEST_PLUGIN, SCORE1], score=[(SCORE1, 1), (TEST_PLUGIN, 1), (SCORE_NORM1, 1)])),
    ("Override MultiPoint plugins weights",
     {MULTI_POINT: ps([TEST_PLUGIN, SCORE1]), "score": ps([(SCORE1, 5), (TEST_PLUGIN, 3)])},
     everywhere(preScore=[TEST_PLUGIN, SCORE1], score=[(SCORE1, 5), (TEST_PLUGIN, 3)])),
    ("disable and enable MultiPoint plugins with '*'", {MULTI_POINT: ps([QSORT, BIND, SCORE1], ["*"])},
     {**{p: [] for p in EXTENSION_POINTS}, "queueSort": [QSORT], "preScore": [SCORE1], "score": [(SCORE1, 1)],
      "bind": [BIND]}),
    ("disable and enable MultiPoint plugin by name", {MULTI_POINT: ps([BIND, QSORT, SCORE1], [SCORE1])},
     {**{p: [] for p in EXTENSION_POINTS}, "queueSort": [QSORT], "preScore": [SCORE1], "score": [(SCORE1, 1)],
      "bind": [BIND]}),
    ("Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
     {MULTI_POINT: ps([TEST_PLUGIN, SCORE1]), "score": ps([(SCORE1, 5), (SCORE2, 5), (TEST_PLUGIN, 3)])},
     everywhere(preScore=[TEST_PLUGIN, SCORE1], score=[(SCORE1, 5), (TEST_PLUGIN, 3), (SCORE2, 5)])),
]


@pytest.mark.parametrize("name,plugins,want", EXPANSION_CASES, ids=[c[0] for c in EXPANSION_CASES])
def test_multipoint_expansion(name, plugins, want):
    assert as_lists(expand_plugins(plugins, FW_REGISTRY)) == want


@pytest.mark.parametrize("plugins,point,problem", [
    ({MULTI_POINT: ps([TEST_PLUGIN, TEST_PLUGIN])}, MULTI_POINT, "enabled twice through multiPoint"),
    ({"score": ps([SCORE1, SCORE1])}, "score", "enabled twice at score"),
    ({"filter": ps([SCORE1])}, "filter", "does not implement the filter extension point"),
    ({MULTI_POINT: ps(["no-such-plugin"])}, MULTI_POINT, "unknown plugin 'no-such-plugin'"),
    ({"bind": ps(["no-such-plugin"])}, "bind", "unknown plugin 'no-such-plugin'"),
])
def test_expansion_errors(plugins, point, problem):
    with pytest.raises(PluginSetError) as e:
        expand_plugins(plugins, FW_REGISTRY)
    assert e.value.point == point and problem in e.value.problem


def test_duplicate_multipoint_entry_overridden_everywhere_is_not_an_error():
    # kube only rejects a repeated multiPoint plugin at a point where it would be added twice
    got = expand_plugins({MULTI_POINT: ps([SCORE1, SCORE1]), "preScore": ps([SCORE1]), "score": ps([SCORE1])},
                         FW_REGISTRY)
    assert as_lists(got)["score"] == [(SCORE1, 1)]


# ---- the default profile -------------------------------------------------------------------------
def test_default_expansion_equals_kube_expanded_plugins_v1():
    got = expand_plugins(merge_plugins(default_plugins(), None), KUBE_REGISTRY)
    assert as_lists(got) == KUBE_EXPANDED_V1
    assert as_lists(default_config(KUBE_REGISTRY).profiles[0].plugins) == KUBE_EXPANDED_V1


def test_empty_kube_config_file_expands_to_kube_defaults(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    cfg = load_kube_config(str(f), KUBE_REGISTRY)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    assert as_lists(cfg.profiles[0].plugins) == KUBE_EXPANDED_V1


def test_real_registry_default_expansion_is_kube_restricted_to_implemented_points():
    """Caldera's plugins join exactly kube's points (in kube's order) wherever they implement them;
    the fully implemented ones match kube exactly."""
    got = as_lists(default_config(build_registry(third_party=False)).profiles[0].plugins)
    # Caldera's own default plugins (CALDERA_MULTIPOINT: GPUDevices) are set aside, then checked
    ours = {name for name, _, _ in CALDERA_MULTIPOINT}
    assert got["filter"][got["filter"].index("NodeResourcesFit") + 1] == "GPUDevices"
    assert "GPUDevices" in got["preFilter"] and "GPUDevices" in got["reserve"]
    got = {p: [x for x in v if (x[0] if isinstance(x, tuple) else x) not in ours] for p, v in got.items()}
    for point, want in KUBE_EXPANDED_V1.items():
        assert [x for x in want if x in got[point]] == got[point], point  # an ordered subsequence
    for name in ("SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName", "TaintToleration",
                 "NodeResourcesFit", "NodeResourcesBalancedAllocation", "DefaultBinder"):
        for point, want in KUBE_EXPANDED_V1.items():
            names = [x[0] if isinstance(x, tuple) else x for x in want]
            assert (name in [x[0] if isinstance(x, tuple) else x for x in got[point]]) == (name in names), \
                (name, point)
