"""`caldera run` with GPUs against the real API server: a KubeSchedulerConfiguration enabling FGD
and a Volcano conf enabling deviceshare each bind a GPU pod and the GPU indices it took reach the
pod itself (the Binding's annotations, which the API server copies onto the pod)."""
from __future__ import annotations

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS

from .kube import (
    create_node,
    delete_nodes,
    get_pod,
    kube_profile,
    live_scheduler,
    namespace,
    pod_body,
    tag,
    wait_until,
)

FGD_PROFILE = """  plugins:
    multiPoint:
      enabled:
      - {name: FGD, weight: 10}
"""

DEVICESHARE_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


pytestmark = pytest.mark.usefixtures("volcano_crds")     # (conftest.py)


def gpu_pod(ns: str, name: str, sched: str, limits: dict[str, str]) -> dict:
    body = pod_body(ns, name, sched, cpu="1")
    res = body["spec"]["containers"][0]["resources"]
    res["limits"] = dict(limits)
    res["requests"].update(limits)
    return body


def test_fgd_profile_writes_the_gpu_devices_annotation(api, tmp_path):
    t = tag()
    sched = f"fgd-{t}"
    ns = namespace(api, f"fgd-{t}")
    node = f"gpu-{t}"
    # one T4 node with 2 GPUs in the openb convention: a 300-milli share and a whole GPU must end on
    # different GPUs (a whole GPU has to be fully free), each named by the pod's annotation
    create_node(api, node, cpu="8", memory="32Gi", labels={"nvidia.com/gpu.product": "T4"},
                extra={"nvidia.com/gpu": "2", "alibabacloud.com/gpu-milli": "2000"})
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched, FGD_PROFILE)) as app:
            api.request("POST", f"/api/v1/namespaces/{ns}/pods",
                        gpu_pod(ns, "share", sched, {"alibabacloud.com/gpu-milli": "300"}))
            api.request("POST", f"/api/v1/namespaces/{ns}/pods",
                        gpu_pod(ns, "whole", sched, {"nvidia.com/gpu": "1", "alibabacloud.com/gpu-milli": "1000"}))
            def bound():
                pods = [get_pod(api, ns, n) for n in ("share", "whole")]
                return pods if all(p["spec"].get("nodeName") == node for p in pods) else None
            pods = wait_until(bound, timeout=30, what="both GPU pods bound")
            got = {p["metadata"]["name"]: p["metadata"].get("annotations", {}).get("caldera.dev/gpu-devices")
                   for p in pods}
            # the whole GPU and the share are on different GPUs (a whole GPU must be fully free)
            assert got["share"] in ("0", "1") and got["whole"] in ("0", "1") and got["share"] != got["whole"]
            assert app.loop.binder.failed == 0
    finally:
        delete_nodes(api, [node])


def bind_two_in_turn(api, conf_text: str, prefix: str, node_labels: dict, node_extra: dict,
                     first: dict, second: dict) -> dict[str, dict]:
    """One node; a Volcano conf scheduling for a fresh scheduler name; pod a (limits `first`)
    bound, then pod b (`second`) bound; their annotations as the API server has them."""
    t = tag()
    sched = f"volcano-{t}"
    ns = namespace(api, f"{prefix}-{t}")
    node = f"{prefix}-{t}"
    create_node(api, node, cpu="8", memory="32Gi", labels=node_labels, extra=node_extra)
    conf = parse_volcano_conf(yaml.safe_load(conf_text), "test.conf", ACTIONS, PLUGINS)
    try:
        with live_scheduler(api, conf, scheduler_name=sched, leader_elect=False, schedule_period=0.3) as app:
            for name, limits in (("a", first), ("b", second)):
                api.request("POST", f"/api/v1/namespaces/{ns}/pods", gpu_pod(ns, name, sched, limits))
                wait_until(lambda name=name: get_pod(api, ns, name)["spec"].get("nodeName"), timeout=30,
                           what=f"{name} bound")
            assert app.loop.binder.failed == 0
            return {n: get_pod(api, ns, n)["metadata"].get("annotations", {}) for n in ("a", "b")}
    finally:
        delete_nodes(api, [node])


def test_volcano_deviceshare_writes_volcano_gpu_index(api):
    # 2 GPUs of 16000 MiB (volcano-device-plugin's capacity names): 12000 MiB takes GPU 0; then
    # 8000 MiB no longer fits GPU 0 (4000 left): GPU 1
    ann = bind_two_in_turn(api, DEVICESHARE_CONF, "share", {},
                           {"volcano.sh/gpu-memory": "32000", "volcano.sh/gpu-number": "2"},
                           {"volcano.sh/gpu-memory": "12000"}, {"volcano.sh/gpu-memory": "8000"})
    assert ann["a"].get("volcano.sh/gpu-index") == "0"
    assert ann["b"].get("volcano.sh/gpu-index") == "1"
    assert "volcano.sh/predicate-time" in ann["b"]


GPUPOLICY_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: gpupolicy
    arguments:
      fgd.weight: 10
"""


def test_volcano_gpupolicy_writes_the_gpu_devices_annotation(api):
    # the GPUs a Volcano session gives (predicates' GPUDevices fit, gpupolicy's FGD) reach the pod:
    # 700 milli, then 600 on a 2-GPU T4 node: no GPU holds both, so they get different GPUs
    ann = bind_two_in_turn(api, GPUPOLICY_CONF, "gpupol", {"nvidia.com/gpu.product": "T4"},
                           {"nvidia.com/gpu": "2", "alibabacloud.com/gpu-milli": "2000"},
                           {"alibabacloud.com/gpu-milli": "700"}, {"alibabacloud.com/gpu-milli": "600"})
    got = sorted(ann[n].get("caldera.dev/gpu-devices") for n in ("a", "b"))
    assert got == ["0", "1"], ann
