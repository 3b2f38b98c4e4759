"""`caldera schedule` imports only what its pass uses (issue 14: on a small input the command is
mostly start-up). A kube pass (JSON manifests, the default configuration, `-o json`) imports
nothing of Volcano's session (caldera.batch), no file-config reader, no plugin that no profile
enables, and does not read the installed packages' entry points (importlib.metadata); a Volcano
session imports nothing of kube's one-shot engine. What each still needs is imported where it
is first used: the registry reads the entry points when a configuration names a plugin that is
not in-tree (or when its names are listed: an unknown plugin's "did you mean").
"""
from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from caldera.cli.main import cli
from caldera.config.defaults import default_config
from caldera.config.loader import decode_document
from caldera.errors import ConfigError
from caldera.plugins.registry import ENTRY_POINT_GROUP, IN_TREE, PluginRegistry, build_registry

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_PLUGIN = ROOT / "examples" / "plugins" / "caldera-example-plugin" / "src"

# a kube pass's input, as one JSON List: two nodes, a pod that fits one of them
KUBE_LIST = {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "small"},
     "status": {"allocatable": {"cpu": "1", "memory": "2Gi", "pods": "110"}}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big"},
     "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
     "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}]}},
]}

# Runs `main(argv)` in a fresh interpreter; prints the repr of (its stdout, sorted(sys.modules)).
_WRAPPER = """\
import io, sys
from caldera.cli.main import main
out, sys.stdout = sys.stdout, io.StringIO()
try:
    main(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
text, sys.stdout = sys.stdout.getvalue(), out
print(repr((text, sorted(sys.modules))))
"""


def _run_main(*argv: str) -> tuple[str, set[str]]:
    r = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text, modules = ast.literal_eval(r.stdout.strip().splitlines()[-1])
    return text, set(modules)


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The modules among `modules` that are one of `names` or inside one of them."""
    return sorted(m for m in modules if m in names or m.startswith(tuple(n + "." for n in names)))


# Not needed by a kube pass over JSON with the default configuration:
NOT_FOR_A_KUBE_PASS = (
    "caldera.batch",                 # Volcano's session
    "caldera.config.loader",         # the --config file reader (and its yaml)
    "caldera.config.decode",
    "importlib.metadata",            # third-party entry points: read only for a plugin not in-tree
    "email", "zipfile",              # (importlib.metadata's own imports)
    "logging",                       # gcpolicy logs in `caldera run` only
    "hashlib",                       # api.dra names template claims with it
    # in-tree plugins that the default profile does not enable
    "caldera.plugins.coscheduling", "caldera.plugins.gangscheduling", "caldera.plugins.gpu.policies",
    "caldera.plugins.gpu.topology",
)


def _imported_at_module_level(module: str, name: str) -> bool:
    """Whether `module`'s source imports `name` at its top level."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    return any((isinstance(n, ast.Import) and any(a.name == name for a in n.names))
               or (isinstance(n, ast.ImportFrom) and n.module == name)
               for n in ast.parse(Path(spec.origin).read_text()).body)


def test_kube_pass_imports_only_what_it_uses(tmp_path):
    f = tmp_path / "in.json"
    f.write_text(json.dumps(KUBE_LIST))
    text, modules = _run_main("schedule", "-f", str(f), "-o", "json")
    assert json.loads(text)["bindings"] == [{"pod": "shop/web", "node": "big"}]
    assert _loaded(modules, NOT_FOR_A_KUBE_PASS) == []
    # the manifest reader is what may need yaml (for YAML files); nothing else of a JSON pass does
    if not _imported_at_module_level("caldera.api.parse", "yaml"):
        assert _loaded(modules, ("yaml",)) == []
    # what the pass does use is there (the check above cannot pass by looking at the wrong process)
    assert {"caldera.engine.oneshot", "caldera.plugins.noderesources.fit", "caldera.plugins.registry"} <= modules


def test_volcano_session_imports_no_kube_engine(tmp_path):
    docs = []
    for name in ("cluster.yaml", "jobs.yaml"):
        docs += [d for d in yaml.safe_load_all((ROOT / "examples/batch/gang-training" / name).read_text()) if d]
    f = tmp_path / "in.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    text, modules = _run_main("schedule", "-f", str(f), "--config", "examples/batch/volcano-scheduler.conf",
                              "-o", "json")
    bound = {b["pod"] for b in json.loads(text)["bindings"]}
    assert bound == {"ml/resnet-ps-0", *(f"ml/resnet-worker-{i}" for i in range(4))}
    assert _loaded(modules, ("caldera.engine", "importlib.metadata", "logging", "caldera.plugins.coscheduling",
                             "caldera.plugins.gangscheduling")) == []
    assert "caldera.batch.runner" in modules


def test_yaml_output_imports_yaml_when_asked(tmp_path):
    f = tmp_path / "in.json"
    f.write_text(json.dumps(KUBE_LIST))
    as_json = CliRunner().invoke(cli, ["schedule", "-f", str(f), "-o", "json"], prog_name="caldera")
    as_yaml = CliRunner().invoke(cli, ["schedule", "-f", str(f), "-o", "yaml"], prog_name="caldera")
    assert as_json.exit_code == 0 and as_yaml.exit_code == 0, (as_json.output, as_yaml.output)
    assert yaml.safe_load(as_yaml.output) == json.loads(as_json.output)


# ---- the registry: entry points read when needed ------------------------------------------------

class _EntryPoints:
    """Stands in for importlib.metadata.entry_points: the given (name, value) entry points of
    the caldera.plugins group, counting the calls."""

    def __init__(self, *eps: tuple[str, str]):
        self.eps = [EntryPoint(n, v, ENTRY_POINT_GROUP) for n, v in eps]
        self.calls = 0

    def __call__(self, *, group: str):
        self.calls += 1
        return [ep for ep in self.eps if ep.group == group]


@pytest.fixture
def installed(monkeypatch):
    """install(*(name, value)): the entry points the registry finds; the example plugin's package
    is importable."""
    monkeypatch.syspath_prepend(str(EXAMPLE_PLUGIN))

    def install(*eps: tuple[str, str]) -> _EntryPoints:
        fake = _EntryPoints(*eps)
        monkeypatch.setattr("importlib.metadata.entry_points", fake)
        return fake
    yield install
    for m in [m for m in sys.modules if m.split(".")[0] == "caldera_example_plugin"]:
        del sys.modules[m]


EXAMPLE = ("PreferLabeledNodes", "caldera_example_plugin:PreferLabeledNodes")
HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _config(*score: str, args: dict | None = None) -> dict:
    prof: dict = {"schedulerName": "default-scheduler",
                  "plugins": {"score": {"enabled": [{"name": n, "weight": 5} for n in score]}}}
    if args is not None:
        prof["pluginConfig"] = [{"name": score[0], "args": args}]
    return {**HEADER, "profiles": [prof]}


def test_in_tree_plugins_read_no_entry_points(installed):
    eps = installed(EXAMPLE)
    reg = build_registry()
    cfg = default_config(reg)
    decode_document(_config("ImageLocality"), "c.yaml", reg)
    assert eps.calls == 0
    assert "NodeResourcesFit" in [r.name for r in cfg.profiles[0].plugins["filter"]]


def test_third_party_plugin_found_when_a_config_names_it(installed):
    eps = installed(EXAMPLE)
    reg = build_registry()
    cfg = decode_document(_config("PreferLabeledNodes", args={"label": "example.com/fast-disk"}), "c.yaml", reg)
    assert [(r.name, r.weight) for r in cfg.profiles[0].plugins["score"] if r.name == "PreferLabeledNodes"] == [
        ("PreferLabeledNodes", 5)]
    assert reg["PreferLabeledNodes"].__module__.startswith("caldera_example_plugin")
    assert "PreferLabeledNodes" in reg and "Nope" not in reg
    assert eps.calls == 1                  # read once


@pytest.mark.parametrize("typo, close", [("PreferLabeledNode", "PreferLabeledNodes"),
                                         ("NodeResourceFit", "NodeResourcesFit")])
def test_unknown_plugin_suggests_in_tree_and_third_party_names(installed, typo, close):
    installed(EXAMPLE)
    with pytest.raises(ConfigError) as e:
        decode_document(_config(typo), "c.yaml", build_registry())
    msg = str(e.value)
    assert f"unknown plugin {typo!r}" in msg and f"did you mean {close!r}?" in msg
    known = msg.split("known plugins: ")[1]
    assert "PreferLabeledNodes" in known and "NodeResourcesFit" in known and "Coscheduling" in known


def test_unknown_plugin_through_the_cli(installed, tmp_path):
    installed(EXAMPLE)
    (tmp_path / "in.json").write_text(json.dumps(KUBE_LIST))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(_config("PreferLabeledNode")))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "in.json"), "--config", str(tmp_path / "c.yaml")],
                           prog_name="caldera")
    assert r.exit_code == 2
    assert "unknown plugin 'PreferLabeledNode'" in r.output and "did you mean 'PreferLabeledNodes'?" in r.output


def test_installed_plugin_taking_an_in_tree_name_is_an_error(installed):
    installed(("NodeResourcesFit", "caldera_example_plugin:PreferLabeledNodes"))
    reg = build_registry()
    with pytest.raises(ConfigError, match="plugin 'NodeResourcesFit' from caldera_example_plugin:PreferLabeledNodes "
                                          "is registered twice"):
        decode_document(_config("Other"), "c.yaml", reg)


def test_given_plugin_and_installed_one_of_one_name_is_an_error(installed):
    installed(EXAMPLE)
    reg = build_registry({"PreferLabeledNodes": object})
    with pytest.raises(ConfigError, match=r"'PreferLabeledNodes' .* is registered twice"):
        sorted(reg)
    with pytest.raises(ConfigError, match="plugin 'NodeName' is registered twice"):
        build_registry({"NodeName": object})


def test_broken_installed_plugin_is_an_error_only_when_used(installed):
    installed(EXAMPLE, ("Broken", "no_such_module_for_caldera_tests:Plugin"))
    reg = build_registry()
    cfg = decode_document(_config("PreferLabeledNodes", args={"label": "x"}), "c.yaml", reg)
    assert cfg.profiles[0].scheduler_name == "default-scheduler"
    assert "Broken" in sorted(reg)         # listed by name, not imported
    with pytest.raises(ConfigError, match=r"cannot load plugin 'Broken' from no_such_module_for_caldera_tests:Plugin"):
        reg["Broken"]


def test_registry_is_a_mapping(installed):
    eps = installed(EXAMPLE)
    reg = build_registry(third_party=False)
    assert isinstance(reg, PluginRegistry)
    assert list(reg) == list(IN_TREE) and len(reg) == len(IN_TREE)
    assert reg.get("PreferLabeledNodes") is None and eps.calls == 0
    built: list[str] = []

    def load():
        built.append("x")
        return IN_TREE["NodeName"]
    reg.defer("Later", load)
    assert "Later" in reg and built == []
    assert reg["Later"] is reg["Later"] is IN_TREE["NodeName"] and built == ["x"]
    reg["Later"] = IN_TREE["NodePorts"]
    assert reg["Later"] is IN_TREE["NodePorts"]
    del reg["Later"]
    assert "Later" not in reg and dict(reg).keys() == set(IN_TREE)
    reg = build_registry()
    assert list(reg) == [*IN_TREE, "PreferLabeledNodes"] and eps.calls == 1


@pytest.mark.parametrize("name", list(IN_TREE))
def test_every_in_tree_entry_imports_its_plugin(name):
    factory = IN_TREE[name]
    assert isinstance(factory, type) and factory.name == name
    assert name in build_registry(third_party=False) and build_registry(third_party=False)[name] is factory
