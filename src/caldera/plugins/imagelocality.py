"""ImageLocality: prefer nodes that already hold the pod's container images (Score only).

For each init and regular container whose normalized image name is in a node's status.images,
the node gains int64(size * nodesHavingImage / totalNodes) (the spread scaling, in float64 as
kube); the sum is clamped to [23 MiB, 1000 MiB * containers] and mapped onto [0, 100] with
integer arithmetic. As in kube's scheduler cache, an image name's size is the one reported by
the first node (in table order) that lists it.
"""
from __future__ import annotations

import numpy as np

from ..framework.interface import MAX_NODE_SCORE, Plugin

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
_CACHE = "imagelocality"


def normalized_image_name(name: str) -> str:
    """Append ':latest' when the reference has neither a tag nor a digest."""
    if name.rfind(":") <= name.rfind("/"):
        name += ":latest"
    return name


def image_states(table) -> dict[str, tuple[int, int]]:
    """Image name -> (size in bytes, number of nodes listing it)."""
    def build():
        size: dict[str, int] = {}
        count: dict[str, int] = {}
        for n in table.nodes:
            seen: set[str] = set()
            for names, sz in n.images:
                for nm in names:
                    if nm not in size:
                        size[nm] = sz
                    if nm not in seen:
                        seen.add(nm)
                        count[nm] = count.get(nm, 0) + 1
        return {nm: (size[nm], count[nm]) for nm in size}
    return table.cached("imagelocality.states", build)


def image_mask(table, name: str) -> np.ndarray:
    """Nodes whose status.images list `name`."""
    def build():
        return np.array([any(name in names for names, _ in n.images) for n in table.nodes], dtype=bool)
    return table.cached(("imagelocality.mask", name), build)


def pod_images(pod) -> tuple[tuple[str, ...], int]:
    """(normalized image of every init and regular container, number of containers)."""
    got = pod.cache.get(_CACHE)
    if got is None:
        cs = [c for kind in ("initContainers", "containers") for c in (pod.spec.get(kind) or ())]
        names = tuple(normalized_image_name(str(c.get("image") or "")) if isinstance(c, dict)
                      else normalized_image_name("") for c in cs)
        got = pod.cache[_CACHE] = (names, len(cs))
    return got


def calculate_priority(sums: np.ndarray, num_containers: int) -> np.ndarray:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    s = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, np.where(sums > max_threshold, max_threshold, sums))
    return MAX_NODE_SCORE * (s - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality(Plugin):
    name = NAME

    def score(self, state, pod, table, idx):
        names, k = pod_images(pod)
        out = np.zeros(idx.size, dtype=np.int64)
        if k == 0 or not len(table):
            return out
        states = image_states(table)
        total = len(table)
        hit = False
        for nm in names:
            st = states.get(nm)
            if st is None:
                continue
            size, num = st
            out += int(float(size) * (num / total)) * image_mask(table, nm)[idx]
            hit = True
        if not hit:
            return out
        return calculate_priority(out, k).astype(np.int64)
