"""Every invalid scheduler configuration ends `caldera schedule` with exit code 2 and one line:
"caldera: error: <file>: <field path>: <problem>; <what to do>" (no traceback).

The CLI runs once per case; the cases run concurrently in one module-scoped fixture."""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

V1 = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
MANIFEST = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {containers: [{name: c, image: pause}]}
"""


def prof(plugins: str = "", extra: str = "", name: str = "s") -> str:
    """One profile; `plugins` is indented under `plugins:`, `extra` under the profile."""
    out = f"profiles:\n- schedulerName: {name}\n"
    if plugins:
        out += "  plugins:\n" + "".join(f"    {line}\n" for line in plugins.splitlines())
    return out + "".join(f"  {line}\n" for line in extra.splitlines())


# (id, file name, content, field path, problem): field and problem must appear in the message
CASES = [
    ("yaml-syntax", "c.yaml", V1 + "profiles:\n- schedulerName: x\n  plugins: [\n", "line 6, column 1",
     "malformed YAML"),
    ("yaml-mapping-values", "c.yaml", V1 + "parallelism: 1: 2\n", "line 3, column 15", "malformed YAML"),
    ("json-syntax", "c.json", '{"apiVersion": "kubescheduler.config.k8s.io/v1",\n "parallelism": 0,}\n',
     "line 2, column 19", "malformed JSON"),
    ("duplicate-key", "c.yaml", V1 + "parallelism: 1\nparallelism: 2\n", "line 4, column 1",
     "duplicate field 'parallelism'"),
    ("empty-file", "c.yaml", "\n", "(document)", "the file is empty"),
    ("not-a-mapping", "c.yaml", "- a\n- b\n", "(document)", "expected a mapping"),
    ("volcano-unknown-action", "volcano.conf", 'actions: "enqueue, alocate"\ntiers:\n- plugins: [{name: gang}]\n',
     "actions", "unknown action 'alocate'"),
    ("volcano-unknown-plugin", "volcano.conf", 'actions: "allocate"\ntiers:\n- plugins: [{name: gnag}]\n',
     "tiers[0].plugins[0]", "unknown plugin 'gnag'"),
    ("volcano-unknown-flag", "volcano.conf", 'tiers:\n- plugins: [{name: gang, enableJobOrdr: true}]\n',
     "tiers[0].plugins[0] (gang)", "unknown field 'enableJobOrdr'"),
    ("volcano-flag-type", "volcano.conf", 'tiers:\n- plugins: [{name: gang, enableJobOrder: "yes"}]\n',
     "tiers[0].plugins[0] (gang).enableJobOrder", "must be a boolean"),
    ("volcano-actions-type", "volcano.conf", 'actions: [allocate]\n', "actions", "must be a string"),
    ("volcano-hdrf-proportion", "volcano.conf",
     'tiers:\n- plugins: [{name: drf, enableHierarchy: true}, {name: proportion}]\n', "tiers[0]", "conflicts"),
    ("volcano-unknown-top", "volcano.conf", 'actions: "allocate"\ntier: []\n', "tier",
     "unknown field"),
    ("volcano-argument", "volcano.conf",
     'tiers:\n- plugins: [{name: binpack, arguments: {binpack.weight: heavy}}]\n', "binpack.arguments.binpack.weight",
     "must be an integer"),
    ("missing-api-version", "c.yaml", "kind: KubeSchedulerConfiguration\n", "apiVersion", "missing"),
    ("removed-api-version", "c.yaml", "apiVersion: kubescheduler.config.k8s.io/v1beta3\n"
     "kind: KubeSchedulerConfiguration\n", "apiVersion", "no longer served"),
    ("wrong-kind", "c.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n", "kind",
     "expected KubeSchedulerConfiguration"),
    ("unknown-top-field", "c.yaml", V1 + "percentageOfNodeToScore: 50\n", "percentageOfNodeToScore",
     "unknown field; did you mean 'percentageOfNodesToScore'"),
    ("unknown-profile-field", "c.yaml", V1 + prof(extra="plugin: {}"), "profiles[0].plugin",
     "unknown field; did you mean 'plugins'"),
    ("unknown-extension-point", "c.yaml", V1 + prof("scoring: {}"), "profiles[0].plugins.scoring",
     "unknown field"),
    ("unknown-pluginset-field", "c.yaml", V1 + prof("score:\n  enable: []"), "profiles[0].plugins.score.enable",
     "unknown field"),
    ("unknown-plugin-field", "c.yaml", V1 + prof("score:\n  enabled: [{name: NodeResourcesFit, wieght: 2}]"),
     "profiles[0].plugins.score.enabled[0].wieght", "unknown field"),
    ("unknown-plugin", "c.yaml", V1 + prof("multiPoint:\n  enabled: [{name: Foo}]"),
     "profiles[0].plugins.multiPoint.enabled[0].name",
     "unknown plugin 'Foo'; known plugins: BestFit, Coscheduling, DefaultBinder,"),
    ("unknown-disabled-plugin", "c.yaml", V1 + prof("filter:\n  disabled: [{name: NodeAfinity}]"),
     "profiles[0].plugins.filter.disabled[0].name", "unknown plugin 'NodeAfinity'; did you mean 'NodeAffinity'"),
    ("invalid-v1-plugin", "c.yaml", V1 + prof("filter:\n  enabled: [{name: EBSLimits}]"),
     "profiles[0].plugins.filter.enabled[0].name", "was invalid in version"),
    ("kube-only-plugin", "c.yaml", V1 + prof("multiPoint:\n  enabled: [{name: NodeDeclaredFeatures}]"),
     "profiles[0].plugins.multiPoint.enabled[0].name", "not implemented by caldera"),
    ("missing-plugin-name", "c.yaml", V1 + prof("score:\n  enabled: [{weight: 2}]"),
     "profiles[0].plugins.score.enabled[0].name", "expected a non-empty string"),
    ("not-implemented-point", "c.yaml", V1 + prof("filter:\n  enabled: [{name: PrioritySort}]"),
     "profiles[0].plugins.filter.enabled[0].name", "does not implement the filter extension point"),
    ("duplicate-at-point", "c.yaml", V1 + prof("score:\n  enabled: [{name: TaintToleration}, "
                                               "{name: TaintToleration}]"),
     "profiles[0].plugins.score.enabled[1]", "already enabled at profiles[0].plugins.score.enabled[0]"),
    ("duplicate-at-multipoint", "c.yaml", V1 + prof("multiPoint:\n  enabled: [{name: NodeResourcesFit}, "
                                                    "{name: NodeResourcesFit}]"),
     "profiles[0].plugins.multiPoint.enabled[1]", "enabled twice through multiPoint"),
    ("negative-weight", "c.yaml", V1 + prof("score:\n  enabled: [{name: NodeResourcesFit, weight: -1}]"),
     "profiles[0].plugins.score.enabled[0].weight", "-1 is out of range"),
    ("string-weight", "c.yaml", V1 + prof("score:\n  enabled: [{name: NodeResourcesFit, weight: high}]"),
     "profiles[0].plugins.score.enabled[0].weight", "expected an integer"),
    ("enabled-not-a-list", "c.yaml", V1 + prof("score:\n  enabled: {name: NodeResourcesFit}"),
     "profiles[0].plugins.score.enabled", "expected a list"),
    ("percentage-top", "c.yaml", V1 + "percentageOfNodesToScore: 101\n", "percentageOfNodesToScore",
     "101 is out of range; set it to a value in [0-100]"),
    ("percentage-profile", "c.yaml", V1 + prof(extra="percentageOfNodesToScore: -1"),
     "profiles[0].percentageOfNodesToScore", "-1 is out of range"),
    ("parallelism", "c.yaml", V1 + "parallelism: 0\n", "parallelism", "0 is out of range"),
    ("initial-backoff", "c.yaml", V1 + "podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds",
     "0 is out of range"),
    ("max-backoff", "c.yaml", V1 + "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
     "podMaxBackoffSeconds", "less than podInitialBackoffSeconds"),
    ("float-backoff", "c.yaml", V1 + "podInitialBackoffSeconds: 1.5\n", "podInitialBackoffSeconds",
     "expected an integer"),
    ("duplicate-scheduler-name", "c.yaml", V1 + prof(name="a") + prof(name="a")[len("profiles:\n"):],
     "profiles[1].schedulerName", "duplicate value 'a' (also profiles[0].schedulerName)"),
    ("missing-scheduler-name", "c.yaml", V1 + "profiles:\n- schedulerName: a\n- percentageOfNodesToScore: 5\n",
     "profiles[1].schedulerName", "required when there are several profiles"),
    ("empty-scheduler-name", "c.yaml", V1 + "profiles:\n- schedulerName: ''\n", "profiles[0].schedulerName",
     "expected a non-empty string"),
    ("queue-sort-differs", "c.yaml", V1 + prof(name="a") + prof("queueSort:\n  enabled: [{name: PrioritySort}]",
                                                                name="b")[len("profiles:\n"):],
     "profiles[1].plugins.queueSort", "must be the same for all profiles"),
    ("queue-sort-args-differ", "c.yaml", V1 + prof(name="a") + prof(
        extra="pluginConfig:\n- name: PrioritySort\n  args: {}", name="b")[len("profiles:\n"):],
     "profiles[1].pluginConfig", "queueSort must be the same for all profiles"),
    ("no-queue-sort", "c.yaml", V1 + prof("queueSort:\n  disabled: [{name: '*'}]"),
     "profiles[0].plugins.queueSort", "0 queueSort plugins are enabled"),
    ("no-bind", "c.yaml", V1 + prof("multiPoint:\n  disabled: [{name: DefaultBinder}]"),
     "profiles[0].plugins.bind", "no bind plugin is enabled"),
    ("plugin-config-unknown-plugin", "c.yaml", V1 + prof(extra="pluginConfig:\n- name: NodeResourceFit\n  args: {}"),
     "profiles[0].pluginConfig[0].name", "unknown plugin 'NodeResourceFit'; did you mean 'NodeResourcesFit'"),
    ("plugin-config-duplicate", "c.yaml", V1 + prof(extra="pluginConfig:\n- name: NodeResourcesFit\n"
                                                    "- name: NodeResourcesFit"),
     "profiles[0].pluginConfig[1].name", "duplicate pluginConfig for plugin 'NodeResourcesFit'"),
    ("plugin-config-invalid-args", "c.yaml", V1 + prof(extra="pluginConfig:\n- name: NodeResourcesFit\n"
                                                       "  args: {scoringStrategy: {type: Nope}}"),
     "profiles[0].pluginConfig[0].args", "NodeResourcesFitArgs.scoringStrategy.type: 'Nope'"),
    ("plugin-config-unknown-arg", "c.yaml", V1 + prof(extra="pluginConfig:\n- name: NodeResourcesFit\n"
                                                      "  args: {scoringStrategyy: {}}"),
     "profiles[0].pluginConfig[0].args", "unknown field"),
    ("plugin-config-kind", "c.yaml", V1 + prof(extra="pluginConfig:\n- name: NodeResourcesFit\n"
                                               "  args: {kind: InterPodAffinityArgs}"),
     "profiles[0].pluginConfig[0].args.kind", "must be of kind NodeResourcesFitArgs"),
    ("plugin-config-args-not-mapping", "c.yaml", V1 + prof(extra="pluginConfig:\n- name: NodeResourcesFit\n"
                                                           "  args: [1, 2]"),
     "profiles[0].pluginConfig[0].args", "expected a mapping"),
    ("extender-weight", "c.yaml", V1 + "extenders:\n- urlPrefix: http://127.0.0.1:8888\n  prioritizeVerb: p\n",
     "extenders[0].weight", "Invalid value: 0: must have a positive weight applied to it"),
    ("missing-file", "missing.yaml", None, "(file)", "no such file"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("config-errors")
    (d / "cluster.yaml").write_text(MANIFEST)
    caldera = Path(sys.executable).with_name("caldera")
    cmd0 = [str(caldera)] if caldera.exists() else [sys.executable, "-m", "caldera.cli.main"]

    def run(case):
        cid, fname, content = case[:3]
        path = d / cid / fname
        path.parent.mkdir()
        if content is not None:
            path.write_text(content)
        r = subprocess.run(cmd0 + ["schedule", "-f", str(d / "cluster.yaml"), "--config", str(path)],
                           capture_output=True, text=True, timeout=120)
        return cid, (str(path), r)

    with ThreadPoolExecutor(max_workers=4) as ex:
        return dict(ex.map(run, CASES))


@pytest.mark.parametrize("cid,fname,content,field,problem", CASES, ids=[c[0] for c in CASES])
def test_invalid_config_is_one_line_exit_2(results, cid, fname, content, field, problem):
    path, r = results[cid]
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith(f"caldera: error: {path}: {field}: "), line
    assert problem in line, line
    assert "; " in line.split(f"{field}: ", 1)[1], f"no fix suggested: {line}"
