"""Caldera accepts every plugin and action name Volcano v1.15.1's scheduler registers
(pkg/scheduler/plugins/factory.go, pkg/scheduler/actions/factory.go) and refuses only names
Volcano does not know: a Volcano user's volcano-scheduler.conf loads as it is."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS, plugin_class
from caldera.cli.main import cli
from caldera.errors import ConfigError

# framework.RegisterPluginBuilder calls of v1.15.1, in factory.go's order
VOLCANO_PLUGINS = [
    "drf", "gang", "deviceshare", "predicates", "priority", "nodeorder", "conformance", "binpack",
    "resource-strategy-fit", "tdm", "overcommit", "sla", "task-topology", "numa-aware", "cdp", "rescheduling",
    "usage", "pdb", "nodegroup", "network-topology-aware", "proportion", "capacity", "extender", "resourcequota",
]
VOLCANO_ACTIONS = ["reclaim", "allocate", "backfill", "preempt", "enqueue", "shuffle"]


@pytest.mark.parametrize("name", VOLCANO_PLUGINS)
def test_every_volcano_plugin_name_is_accepted(name):
    conf = parse_volcano_conf({"actions": "enqueue, allocate", "tiers": [{"plugins": [{"name": name}]}]},
                              "volcano-scheduler.conf", ACTIONS, PLUGINS)
    assert [p.name for t in conf.tiers for p in t.plugins] == [name]
    assert plugin_class(name).name == name


@pytest.mark.parametrize("name", VOLCANO_ACTIONS)
def test_volcano_actions_are_accepted(name):
    conf = parse_volcano_conf({"actions": name, "tiers": [{"plugins": [{"name": "gang"}]}]},
                              "volcano-scheduler.conf", ACTIONS, PLUGINS)
    assert list(conf.actions) == [name]


def test_a_name_volcano_does_not_know_is_refused():
    with pytest.raises(ConfigError, match="unknown plugin 'gnag'"):
        parse_volcano_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "gnag"}]}]},
                           "volcano-scheduler.conf", ACTIONS, PLUGINS)


def test_a_conf_with_every_plugin_schedules(tmp_path):
    """All of them in one conf (each with its defaults) over a small cluster: exit 0, the pod bound.
    Left out: extender (it needs a server) and nodegroup (strict by default: a node without a
    node-group label is refused, as in Volcano)."""
    plugins = "\n".join(f"  - name: {n}" for n in VOLCANO_PLUGINS if n not in ("extender", "nodegroup"))
    (tmp_path / "conf.yaml").write_text(f'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n{plugins}\n')
    (tmp_path / "c.yaml").write_text("""\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
""")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "c.yaml"), "--config", str(tmp_path / "conf.yaml"),
                                 "-o", "json"])
    assert r.exit_code == 0, r.output
    assert '"node": "n1"' in r.output
