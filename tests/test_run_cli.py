"""`caldera run` refuses bad input with one line and exit code 2, before or without touching a
cluster (no API server needed)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CALDERA = str(Path(sys.executable).with_name("caldera"))
KUBE = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
DEAD = """apiVersion: v1
kind: Config
current-context: c
clusters: [{name: k, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
"""


@pytest.mark.parametrize("case,args,config,kubeconfig,want", [
    ("no-config-file", [], None, DEAD, "no such file"),
    ("bad-config", [], "kind: Nope\n", DEAD, "apiVersion"),
    ("no-kubeconfig", [], KUBE, None, "kubeconfig file does not exist"),
    ("kubeconfig-not-yaml", [], KUBE, "{{{", "kubeconfig"),
    ("api-server-down", ["--no-leader-elect"], KUBE, DEAD, "cannot reach the API server at https://127.0.0.1:1"),
    ("renew-over-lease", ["--leader-elect-renew-deadline", "20s"], KUBE, DEAD,
     "--leader-elect-renew-deadline: must be less than --leader-elect-lease-duration"),
    ("bad-duration", ["--leader-elect-retry-period", "soon"], KUBE, DEAD, "is not a duration"),
    ("config-durations", [], KUBE + "leaderElection:\n  leaseDuration: 5s\n  renewDeadline: 8s\n", DEAD,
     "--leader-elect-renew-deadline: must be less than --leader-elect-lease-duration"),
    ("bad-metrics-addr", ["--metrics-addr", "nohost"], KUBE, DEAD, "--metrics-addr"),
])
def test_run_bad_input_is_one_line_exit_2(tmp_path, case, args, config, kubeconfig, want):
    cmd = [CALDERA, "run"]
    cfg = tmp_path / "config.yaml"
    if config is not None:
        cfg.write_text(config)
    cmd += ["--config", str(cfg)]
    kc = tmp_path / "kubeconfig"
    if kubeconfig is not None:
        kc.write_text(kubeconfig)
    cmd += ["--kubeconfig", str(kc)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith("caldera: error: ") and want in lines[0], lines[0]
