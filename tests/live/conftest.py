"""A real control plane for the live tests: etcd + kube-apiserver from scripts/control-plane.

`control_plane` (session): builds the binaries once (cached outside the work tree, see
scripts/control-plane), starts etcd and kube-apiserver on loopback in a temp dir and stops them at
the end. CALDERA_SKIP_LIVE=1 skips the tests that need it; without that, a build or start failure is
a test ERROR, never a silent skip.

The `live` marker goes on exactly the tests whose fixture closure includes `control_plane` (directly
or through k8s_admin, k8s_scheduler, api or any module fixture built on them), so a new test is
marked by what it uses; the unit tests here (fakes, local stub servers, manifests) are not marked
and `pytest -m "not live"` runs them.
"""
from __future__ import annotations

import atexit
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "control-plane"
HERE = Path(__file__).resolve().parent
CONTROL_PLANE_FIXTURE = "control_plane"   # a test whose fixture closure has it gets `live`


def pytest_collection_modifyitems(config, items):
    # The hook sees the whole session's items; mark only ours that use the control plane.
    # item.fixturenames is the full closure (fixtures of fixtures, module overrides included).
    for item in items:
        if (HERE in Path(str(item.fspath)).resolve().parents
                and CONTROL_PLANE_FIXTURE in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)


def _run(*args, timeout):
    p = subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(
            f"scripts/control-plane {' '.join(map(str, args))} failed (exit {p.returncode}):\n"
            f"{p.stderr[-6000:]}\n{p.stdout[-2000:]}")
    return p.stdout.strip()


def _read_env(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v
    return env


@dataclass
class ControlPlane:
    dir: Path
    admin_kubeconfig: str
    scheduler_kubeconfig: str
    server: str
    version: str
    env: dict = field(repr=False, default_factory=dict)

    @property
    def ca_file(self) -> str:
        return str(self.dir / "pki" / "ca.crt")

    @property
    def admin_token(self) -> str:
        return self.env["ADMIN_TOKEN"]

    @property
    def scheduler_token(self) -> str:
        return self.env["SCHEDULER_TOKEN"]

    def reload_env(self):
        self.env = _read_env(self.dir / "env")

    def restart_apiserver(self):
        """Stop kube-apiserver (SIGTERM) and start it again with the same flags and port; returns
        once /readyz is ok. etcd keeps running, so all objects survive."""
        _run("restart-apiserver", self.dir, timeout=300)
        self.reload_env()

    def stop(self):
        _run("stop", self.dir, timeout=60)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory):
    if os.environ.get("CALDERA_SKIP_LIVE") == "1":
        pytest.skip("CALDERA_SKIP_LIVE=1: the live control-plane tests are skipped")
    # A cache hit takes well under a second; a cold build takes minutes (scripts/test builds first).
    _run("build", timeout=3600)
    d = tmp_path_factory.mktemp("control-plane")
    admin = _run("start", d, timeout=600).splitlines()[-1]
    stopped = []

    def stop():
        if not stopped:
            stopped.append(True)
            subprocess.run([str(SCRIPT), "stop", str(d)], capture_output=True, timeout=60)

    atexit.register(stop)  # also when the session dies between setup and teardown
    env = _read_env(d / "env")
    cp = ControlPlane(dir=d, admin_kubeconfig=admin, scheduler_kubeconfig=env["SCHEDULER_KUBECONFIG"],
                      server=env["SERVER"], version=env["K8S_VERSION"], env=env)
    try:
        yield cp
    finally:
        stop()


@pytest.fixture
def k8s_admin(control_plane):
    """A `kubernetes` ApiClient with the admin (system:masters) token."""
    from kubernetes import config

    client = config.new_client_from_config(config_file=control_plane.admin_kubeconfig)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def k8s_scheduler(control_plane):
    """A `kubernetes` ApiClient with the caldera-scheduler token (not in system:masters)."""
    from kubernetes import config

    client = config.new_client_from_config(config_file=control_plane.scheduler_kubeconfig)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def api(control_plane):
    """caldera.live.client.Api with the admin token (raw-JSON requests)."""
    from caldera.live.client import Api

    a = Api.from_kubeconfig(control_plane.admin_kubeconfig)
    try:
        yield a
    finally:
        a.close()


# Volcano's Numatopology CRD (v1.15.1 config/crd/volcano/bases/nodeinfo.volcano.sh_numatopologies.yaml:
# same group, names, scope and schema), which Volcano's resource exporter writes and Caldera only
# reads (the numa-aware plugin); not shipped in deploy/crds, as Caldera's deployment does not need it
NUMATOPOLOGY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "numatopologies.nodeinfo.volcano.sh"},
    "spec": {
        "group": "nodeinfo.volcano.sh", "scope": "Cluster",
        "names": {"kind": "Numatopology", "listKind": "NumatopologyList", "plural": "numatopologies",
                  "singular": "numatopology", "shortNames": ["numatopo"]},
        "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "cpuDetail": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                        "core": {"type": "integer", "minimum": 0}, "numa": {"type": "integer", "minimum": 0},
                        "socket": {"type": "integer", "minimum": 0}}}},
                    "numares": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                        "allocatable": {"type": "string"}, "capacity": {"type": "integer"}}}},
                    "policies": {"type": "object", "additionalProperties": {"type": "string"}},
                    "resReserved": {"type": "object", "additionalProperties": {"type": "string"}},
                }},
            }}}}],
    },
}


def install_numatopology_crd(api) -> None:
    """NUMATOPOLOGY_CRD created (if missing) and served."""
    from .kube import _served, apply_manifest, wait_until
    apply_manifest(api, NUMATOPOLOGY_CRD)
    wait_until(lambda: _served(api, "/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies"), timeout=60,
               what="nodeinfo.volcano.sh served")


@pytest.fixture
def volcano_crds(api):
    """Volcano's PodGroup, Queue and HyperNode CRDs (deploy/crds) installed and established
    (modules that run Volcano confs: `pytestmark = pytest.mark.usefixtures("volcano_crds")`)."""
    from .kube import install_crds
    install_crds(api)
    install_numatopology_crd(api)          # (and Volcano's Numatopology CRD: NUMATOPOLOGY_CRD)
