"""ClusterCache: a change of a Node's `caldera.dev/gpu-topology` annotation alone re-reads that
row's GPU topology columns (island / NUMA ids, `topo`), keeping the GPUs its pods hold; other
rows and a heartbeat (nothing changed) are untouched. No API server needed."""
from __future__ import annotations

import copy
import json

import numpy as np

from caldera.api.gputopology import TOPOLOGY_ANNOTATION
from caldera.live.cache import ClusterCache

GPU, MODEL = "nvidia.com/gpu", "nvidia.com/gpu.product"
DGX = {"islands": [[0, 1, 2, 3], [4, 5, 6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}
PAIRS = {"islands": [[0, 1], [2, 3], [4, 5], [6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}


def gpu_node(name, topology=None):
    d = {"metadata": {"name": name, "labels": {MODEL: "A100"}}, "spec": {},
         "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", GPU: "8"}}}
    if topology is not None:
        d["metadata"]["annotations"] = {TOPOLOGY_ANNOTATION: json.dumps(topology)}
    return d


def gpu_pod(name, node_name, k):
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"schedulerName": "caldera", "nodeName": node_name,
                     "containers": [{"name": "c", "image": "x", "resources": {"limits": {GPU: str(k)}}}]},
            "status": {"phase": "Running"}}


def with_topology(raw, topology):
    new = copy.deepcopy(raw)
    ann = new["metadata"].setdefault("annotations", {})
    if topology is None:
        ann.pop(TOPOLOGY_ANNOTATION, None)
    else:
        ann[TOPOLOGY_ANNOTATION] = json.dumps(topology)
    return new


def test_annotation_change_alone_updates_the_rows_gpu_topology():
    cache = ClusterCache(["caldera"])
    a, b = gpu_node("a"), gpu_node("b", DGX)
    cache.on_node_add_many([a, b])
    cache.on_pod_add(gpu_pod("held", "a", 2))
    dev, i, j = cache.table.gpu, cache.table.index["a"], cache.table.index["b"]
    assert not dev.topo[i] and dev.topo[j] and dev.any_topo
    held = dev.devices_of("default/held")
    free_before = dev.free.copy()
    b_island = dev.island[j].copy()

    # the annotation appears on node a: its row gets the links, nothing else moves
    cache.changed.clear()
    cache.on_node_update(a, with_topology(a, PAIRS))
    dev = cache.table.gpu
    assert dev.topo[i]
    assert dev.island[i].tolist()[:8] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert dev.numa[i].tolist()[:8] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert np.array_equal(dev.island[j], b_island)
    assert dev.devices_of("default/held") == held            # the pod keeps its GPUs
    assert np.array_equal(dev.free, free_before)
    assert cache.changed.is_set()

    # changed again, then removed: back to no topology on that row only
    a2 = with_topology(a, PAIRS)
    cache.on_node_update(a2, with_topology(a2, DGX))
    assert cache.table.gpu.island[i].tolist()[:8] == [0, 0, 0, 0, 1, 1, 1, 1]
    cache.on_node_update(a2, with_topology(a2, None))
    dev = cache.table.gpu
    assert not dev.topo[i] and dev.island[i].tolist()[:8] == [-1] * 8
    assert dev.topo[j] and dev.any_topo

    # a heartbeat (same annotation) changes nothing
    cache.changed.clear()
    cache.on_node_update(b, copy.deepcopy(b))
    assert not cache.changed.is_set()
    assert np.array_equal(cache.table.gpu.island[j], b_island)


def test_annotation_change_drives_the_choice_of_gpus():
    """After the update the table's device choice follows the new islands."""
    cache = ClusterCache(["caldera"])
    a = gpu_node("a")
    cache.on_node_add(a)
    cache.on_pod_add(gpu_pod("one", "a", 1))       # takes GPU 0
    i = cache.table.index["a"]
    # without topology: the lowest-indexed free GPUs
    assert cache.table.gpu.choose_best(i, 2, 1000) == (1, 2)
    # islands {0,1}, {2,3}, ...: 2 GPUs from one island, the tightest fitting one is {2,3}
    cache.on_node_update(a, with_topology(a, PAIRS))
    assert cache.table.gpu.choose_best(i, 2, 1000) == (2, 3)
