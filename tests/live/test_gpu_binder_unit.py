"""`caldera run` writes the GPUs a pod took as the caldera.dev/gpu-devices annotation of its
Binding (the API server merges a Binding's annotations into the pod as it binds it)."""
from __future__ import annotations

from caldera.live.binder import Binder
from tests.builders import make_node, make_pod, make_table


class FakeApi:
    def __init__(self):
        self.requests = []

    def request(self, method, path, body=None):
        self.requests.append((method, path, body))
        return 201, {}


class FakeCache:
    def __init__(self, table):
        self.table = table

    def assume(self, pod, node):
        pass


def test_binding_carries_the_gpu_devices_annotation():
    node = make_node("g", cpu="8", labels={"nvidia.com/gpu.product": "T4"},
                     extra={"nvidia.com/gpu": "2", "alibabacloud.com/gpu-milli": "2000"})
    table = make_table([node])
    gpu_pod = make_pod("s", cpu="1", limits={"alibabacloud.com/gpu-milli": "300"})
    cpu_pod = make_pod("c", cpu="1")
    table.add_pod(gpu_pod, 0, fresh=True)
    table.add_pod(cpu_pod, 0, fresh=True)
    api = FakeApi()
    b = Binder(api, FakeCache(table), workers=1)
    assert b.submit(gpu_pod, "g") and b.submit(cpu_pod, "g")
    b.shutdown()
    bodies = {body["metadata"]["name"]: body for _, _, body in api.requests}
    assert bodies["s"]["metadata"]["annotations"] == {"caldera.dev/gpu-devices": "0"}
    assert "annotations" not in bodies["c"]["metadata"]
    assert bodies["s"]["target"] == {"apiVersion": "v1", "kind": "Node", "name": "g"}


def test_binding_carries_volcano_deviceshare_annotations():
    # a Volcano session's deviceshare sets volcano.sh/gpu-index (+ predicate-time) on the pod it places;
    # Volcano's device plugin reads them from the pod, so they travel with the Binding. Other
    # annotations of the pod are not re-sent.
    table = make_table([make_node("g", cpu="8")])
    pod = make_pod("v", cpu="1")
    pod.annotations = {**pod.annotations, "volcano.sh/gpu-index": "1", "volcano.sh/predicate-time": "3",
                       "team": "ml"}
    table.add_pod(pod, 0, fresh=True)
    api = FakeApi()
    b = Binder(api, FakeCache(table), workers=1)
    assert b.submit(pod, "g")
    b.shutdown()
    (_, _, body), = api.requests
    assert body["metadata"]["annotations"] == {"volcano.sh/gpu-index": "1", "volcano.sh/predicate-time": "3"}


def test_devices_chosen_by_a_session_are_held_by_the_live_table_too():
    # a Volcano session chose GPU 1 in its own table; the live cache's table assumes the pod on the
    # same GPU (not the best rule's GPU 0), so the next session's snapshot sees what was bound
    class AssumingCache(FakeCache):
        def assume(self, pod, node):
            self.table.add_pod(pod, self.table.index[node])

    node = make_node("g", cpu="8", labels={"nvidia.com/gpu.product": "T4"},
                     extra={"nvidia.com/gpu": "2", "alibabacloud.com/gpu-milli": "2000"})
    table = make_table([node])
    pod = make_pod("s", cpu="1", limits={"alibabacloud.com/gpu-milli": "300"})
    api = FakeApi()
    b = Binder(api, AssumingCache(table), workers=1)
    assert b.submit(pod, "g", (1,))
    b.shutdown()
    assert table.gpu.devices_of("default/s") == (1,)
    (_, _, body), = api.requests
    assert body["metadata"]["annotations"] == {"caldera.dev/gpu-devices": "1"}
