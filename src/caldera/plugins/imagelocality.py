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
from ..state.nodetable import IMAGES

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


def _node_images(images) -> dict[str, int]:
    """A node's status.images as name -> size (the first entry listing a name gives its size)."""
    out: dict[str, int] = {}
    for names, sz in images:
        for nm in names:
            if nm not in out:
                out[nm] = sz
    return out


def image_states(table) -> dict[str, tuple[int, int]]:
    """Image name -> (size in bytes, number of nodes listing it). A node whose images change
    updates the names it gained or lost; only when the node giving a name's size drops it are
    the later rows searched for the next one."""
    def build():
        states: dict[str, tuple[int, int]] = {}
        first: dict[str, int] = {}
        per_row = []
        for i, n in enumerate(table.nodes):
            mine = _node_images(n.images)
            per_row.append(mine)
            for nm, sz in mine.items():
                st = states.get(nm)
                if st is None:
                    states[nm] = (sz, 1)
                    first[nm] = i
                else:
                    states[nm] = (st[0], st[1] + 1)
        return states, first, per_row

    def update(val, rows):
        states, first, per_row = val
        states, first = dict(states), dict(first)       # callers may hold the old mapping
        for i in rows:
            old, new = per_row[i], _node_images(table.nodes[i].images)
            per_row[i] = new
            for nm, sz in old.items():
                if nm in new:
                    if first[nm] == i and new[nm] != sz:
                        states[nm] = (new[nm], states[nm][1])
                    continue
                size, count = states[nm]
                if count == 1:
                    del states[nm], first[nm]
                    continue
                if first[nm] == i:
                    j = next(j for j in range(i + 1, len(per_row)) if nm in per_row[j])
                    first[nm], size = j, per_row[j][nm]
                states[nm] = (size, count - 1)
            for nm, sz in new.items():
                if nm in old:
                    continue
                st = states.get(nm)
                if st is None:
                    states[nm] = (sz, 1)
                    first[nm] = i
                elif i < first[nm]:
                    states[nm] = (sz, st[1] + 1)
                    first[nm] = i
                else:
                    states[nm] = (st[0], st[1] + 1)
        return states, first, per_row
    return table.cached("imagelocality.states", build, on=IMAGES, update=update)[0]


def image_mask(table, name: str) -> np.ndarray:
    """Nodes whose status.images list `name`."""
    def has(n) -> bool:
        return any(name in names for names, _ in n.images)

    def update(mask, rows):
        mask = mask.copy()
        for i in rows:
            mask[i] = has(table.nodes[i])
        return mask
    return table.cached(("imagelocality.mask", name), lambda: np.array([has(n) for n in table.nodes], dtype=bool),
                        on=IMAGES, update=update)


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
