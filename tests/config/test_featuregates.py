"""--feature-gates (config/featuregates.py): kube's syntax and errors, the v1.35.4 defaults, the
GangScheduling -> GenericWorkload dependency, and the default plugin set it changes
(apis/config/v1/default_plugins.go applyFeatureGates)."""
from __future__ import annotations

import pytest

from caldera.config import featuregates as fg
from caldera.config.defaults import DEFAULT_MULTIPOINT, default_config, default_plugins
from caldera.config.expand import MULTI_POINT
from caldera.errors import ConfigError
from caldera.plugins.registry import build_registry


def test_defaults_are_kube_v1_35_4():
    g = fg.parse("")
    assert not g.enabled("GenericWorkload") and not g.enabled("GangScheduling")
    assert fg.kube_default("GangScheduling") is False and fg.kube_default("GenericWorkload") is False
    assert fg.kube_default("SchedulerQueueingHints") is True           # GA, locked
    assert fg.kube_default("SchedulerPopFromBackoffQ") is True         # beta, on
    assert fg.kube_default("NodeDeclaredFeatures") is False            # alpha
    assert fg.kube_default("ContextualLogging") is True                # logs gate kube-scheduler adds
    assert fg.kube_default("WatchListClient") is True                  # client-go gate
    assert fg.kube_default("NoSuchGate") is None


@pytest.mark.parametrize("text, want", [
    ("GenericWorkload=true,GangScheduling=true", {"GenericWorkload": True, "GangScheduling": True}),
    ("GenericWorkload=true", {"GenericWorkload": True}),
    (" GenericWorkload = T , GangScheduling=1 ,", {"GenericWorkload": True, "GangScheduling": True}),
    ("GangScheduling=true,GenericWorkload=TRUE,GangScheduling=false",
     {"GenericWorkload": True, "GangScheduling": False}),
    ("SchedulerPopFromBackoffQ=true,DynamicResourceAllocation=true,AllAlpha=false", {}),
    ("", {}),
])
def test_parse(text, want):
    assert fg.parse(text).overrides == want


@pytest.mark.parametrize("text, msg", [
    ("GangScheduling=true", "--feature-gates: GangScheduling is enabled, but depends on features that are "
                            "disabled: [GenericWorkload]; also set GenericWorkload=true"),
    ("GenericWorkload=false,GangScheduling=true", "depends on features that are disabled: [GenericWorkload]"),
    ("NoSuchGate=true", "--feature-gates: unrecognized feature gate: NoSuchGate; write --feature-gates as"),
    ("GangScheduling", "--feature-gates: missing bool value for GangScheduling;"),
    ("GangScheduling=yes", '--feature-gates: invalid value of GangScheduling=yes, err: strconv.ParseBool: '
                           'parsing "yes": invalid syntax;'),
    ("DynamicResourceAllocation=false", "--feature-gates: cannot set feature gate DynamicResourceAllocation to "
                                        "false, feature is locked to true"),
    ("SchedulerPopFromBackoffQ=false", "cannot set feature gate SchedulerPopFromBackoffQ to false: Caldera does not "
                                       "model it and behaves as its kube v1.35.4 default (true); leave it out or "
                                       "set it to true"),
    ("AllAlpha=true", "cannot set feature gate AllAlpha to true: Caldera does not model it"),
])
def test_parse_errors(text, msg):
    with pytest.raises(ConfigError) as e:
        fg.parse(text)
    assert msg in str(e.value)
    assert "\n" not in str(e.value)


def test_use_restores_the_previous_gates():
    on = fg.parse("GenericWorkload=true,GangScheduling=true")
    assert not fg.enabled("GangScheduling")
    with fg.use(on):
        assert fg.enabled("GangScheduling") and fg.enabled("GenericWorkload")
        with fg.use(None):
            assert not fg.enabled("GangScheduling")
        assert fg.enabled("GangScheduling")
    assert not fg.enabled("GangScheduling")


def test_gang_scheduling_joins_the_default_multipoint_last_only_with_the_gate():
    reg = build_registry()
    names = [r.name for r in default_plugins(reg)[MULTI_POINT].enabled]
    assert "GangScheduling" not in names
    with fg.use(fg.parse("GenericWorkload=true")):
        assert "GangScheduling" not in [r.name for r in default_plugins(reg)[MULTI_POINT].enabled]
    with fg.use(fg.parse("GenericWorkload=true,GangScheduling=true")):
        on = [r.name for r in default_plugins(reg)[MULTI_POINT].enabled]
        assert on == names + ["GangScheduling"]          # applyGangScheduling appends to multiPoint
        prof = default_config(reg).profiles[0]
        for point in ("preEnqueue", "reserve", "permit"):
            assert [r.name for r in prof.plugins[point]][-1] == "GangScheduling", point
        assert "GangScheduling" not in [r.name for r in prof.plugins["filter"]]
    assert [n for n, _ in DEFAULT_MULTIPOINT] == [n for n in names if n != "GPUDevices"]
