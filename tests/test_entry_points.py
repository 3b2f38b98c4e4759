"""Third-party plugins through the `caldera.plugins` entry-point group, end to end.

Installs caldera (editable) and examples/plugins/caldera-example-plugin into a fresh virtualenv,
then runs that venv's `caldera schedule` with a KubeSchedulerConfiguration enabling the plugin.
The runtime dependencies (numpy, PyYAML, click, rich) are not reinstalled: once pip is done, a
.pth file in the new venv points at the directories the test's own interpreter imports them from.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import numpy
import rich
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "plugins" / "caldera-example-plugin"

MANIFEST = """\
apiVersion: v1
kind: Node
metadata: {name: plain-a}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: fast, labels: {example.com/fast-disk: "true"}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: plain-b}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: busy, namespace: default}
spec:
  nodeName: fast
  containers: [{name: c, image: pause, resources: {requests: {cpu: "4", memory: 8Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: PreferLabeledNodes
        weight: 5
  pluginConfig:
  - name: PreferLabeledNodes
    args: {label: example.com/fast-disk, value: "true"}
"""


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


def _venv(tmp: Path) -> Path:
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    # a copy, so that pip's in-tree build leaves nothing behind in the repository
    example = shutil.copytree(EXAMPLE, tmp / "example", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--disable-pip-version-check",
          "--no-deps", "-e", str(ROOT), str(example)])
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    dirs = {str(Path(m.__file__).resolve().parents[1]) for m in (numpy, yaml, click, rich)}
    (site / "_caldera_test_deps.pth").write_text("".join(d + "\n" for d in sorted(dirs)))
    return venv


def test_example_plugin_installed_through_entry_point(tmp_path):
    venv = _venv(tmp_path)
    (tmp_path / "cluster.yaml").write_text(MANIFEST)
    (tmp_path / "sched.yaml").write_text(CONFIG)
    out = _run([str(venv / "bin" / "caldera"), "schedule", "-f", str(tmp_path / "cluster.yaml"),
                "--config", str(tmp_path / "sched.yaml"), "-o", "json", "--explain"], cwd=tmp_path)
    data = json.loads(out.stdout)
    # without the plugin, LeastAllocated + BalancedAllocation put `web` on an empty node;
    # PreferLabeledNodes (100 x weight 5) outweighs that and wins the busy labeled node
    assert data["bindings"] == [{"pod": "default/web", "node": "fast"}]
    scores = data["explain"]["default/web"]["scores"]
    assert scores["fast"]["PreferLabeledNodes"] == 100
    assert scores["plain-a"]["PreferLabeledNodes"] == 0
    assert scores["plain-b"]["PreferLabeledNodes"] == 0
    assert scores["plain-a"]["NodeResourcesFit"] > scores["fast"]["NodeResourcesFit"]

    # bad args are reported by the plugin's constructor as one line, exit 2
    (tmp_path / "bad.yaml").write_text(CONFIG.replace("label: example.com/fast-disk, ", ""))
    r = subprocess.run([str(venv / "bin" / "caldera"), "schedule", "-f", str(tmp_path / "cluster.yaml"),
                        "--config", str(tmp_path / "bad.yaml")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "profiles[0].pluginConfig[0].args" in r.stderr and "PreferLabeledNodesArgs.label" in r.stderr

    # and the suite's own environment does not know the plugin
    r = subprocess.run([sys.executable, "-m", "caldera.cli.main", "schedule", "-f", str(tmp_path / "cluster.yaml"),
                        "--config", str(tmp_path / "sched.yaml")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown plugin 'PreferLabeledNodes'" in r.stderr
