"""Hierarchical DRF (Volcano's drf plugin with `enableHierarchy: true`): the queue tree.

Queues name their place in a tree with the annotations `volcano.sh/hierarchy` ("root/eng/dev")
and `volcano.sh/hierarchy-weights` ("100/50/50"); the first element of each is the root and is
ignored. Every job hangs as a leaf under its queue's path. A leaf is *saturated* when it has
been given all it asked for in some dimension, or when it asks for a dimension the cluster has
no more of. An inner node's allocation is the sum of its children's, where each unsaturated
child is rescaled to the smallest dominant share among its unsaturated, non-empty siblings (so
a node's share reflects what its children could get fairly, not what one greedy child took).
Queues are ordered by walking both paths from the root: unsaturated before saturated, then
lower share/weight first.

Every change re-derives the tree as Volcano does; when the set of still-demanded dimensions is
the same as at the last full pass, only the changed leaf's ancestors are recomputed, which
gives the same numbers (nothing else in the tree depends on that leaf).
"""
from __future__ import annotations

from ...errors import InputError
from ..api.objects import HIERARCHY_ANNOTATION, HIERARCHY_WEIGHTS_ANNOTATION
from ..api.resource import Resource


class Attr:
    """A job's (or tree node's) allocation and its dominant share."""
    __slots__ = ("allocated", "dominant", "share")

    def __init__(self, allocated: Resource | None = None, share: float = 0.0, dominant: str = ""):
        self.allocated = allocated if allocated is not None else Resource()
        self.share = share
        self.dominant = dominant

    def __repr__(self):
        return f"Attr(dominant {self.dominant or '-'}, share {self.share:.6f}, allocated {self.allocated})"


class HNode:
    __slots__ = ("attr", "children", "demanding", "name", "parent", "request", "saturated", "weight")

    def __init__(self, name: str, weight: float, attr: Attr, request: Resource,
                 children: dict[str, HNode] | None, parent: HNode | None = None):
        self.parent = parent
        self.attr = attr
        self.request = request          # a leaf's job total request
        self.weight = weight
        self.saturated = False
        self.name = name
        self.children = children        # None for a leaf (a job)
        self.demanding: frozenset[str] | None = None   # root only: the demanded dimensions at the last full pass

    @classmethod
    def root(cls) -> HNode:
        return cls("root", 1.0, Attr(), Resource(), {})

    def clone(self, parent: HNode | None = None) -> HNode:
        a = self.attr
        n = HNode(self.name, self.weight, Attr(a.allocated.clone(), a.share, a.dominant),
                  self.request.clone(), None, parent)
        n.saturated = self.saturated
        n.demanding = self.demanding
        if self.children is not None:
            n.children = {}
            for c in self.children.values():
                n.children[c.name] = c.clone(n)
        return n

    def __repr__(self):
        return f"HNode({self.name}, w={self.weight}, sat={self.saturated}, {self.attr})"


def queue_path(queue) -> tuple[str, str]:
    """(hierarchy, weights) annotations of a session QueueInfo ('' when absent)."""
    ann = queue.queue.annotations
    return ann.get(HIERARCHY_ANNOTATION, ""), ann.get(HIERARCHY_WEIGHTS_ANNOTATION, "")


def _parse_weight(s: str) -> float:
    """strconv.ParseFloat with Volcano's floor: what does not parse counts as 0, and any weight
    below 1 as 1."""
    w = 0.0
    if s == s.strip() and "_" not in s:
        try:
            w = float(s)
        except ValueError:
            w = 0.0
    if w < 1:
        w = 1.0
    return w


def resource_saturated(allocated: Resource, request: Resource, demanding: frozenset[str]) -> bool:
    for rn in allocated.names():
        a, q = allocated.get(rn), request.get(rn)
        if a != 0 and q != 0 and a >= q:
            return True
        if rn not in demanding and q != 0:
            return True
    return False


class Hierarchy:
    """The tree operations, bound to the plugin's share function and cluster total."""

    def __init__(self, share_fn, total: Resource):
        self.share_fn = share_fn       # Resource -> (dominant, share)
        self.total = total
        self.total_names = total.names()

    def demanding(self, total_allocated: Resource) -> frozenset[str]:
        t = self.total
        return frozenset(rn for rn in self.total_names if total_allocated.get(rn) < t.get(rn))

    def build(self, root: HNode, job, attr: Attr, hierarchy: str, weights: str, queue_name: str) -> HNode:
        """Put (or replace) the job's leaf under its queue's path, creating missing inner nodes."""
        node = root
        paths = hierarchy.split("/")
        ws = weights.split("/")
        for i in range(1, len(paths)):
            assert node.children is not None    # the root and the queues on the path are inner nodes
            child = node.children.get(paths[i])
            if child is None:
                if i >= len(ws):
                    # Volcano indexes the weights list unchecked here and crashes
                    raise InputError(
                        f"annotation {HIERARCHY_WEIGHTS_ANNOTATION}={weights!r} has fewer entries than "
                        f"{HIERARCHY_ANNOTATION}={hierarchy!r}; give one weight per path element",
                        None, f"Queue {queue_name}")
                child = HNode(paths[i], _parse_weight(ws[i]), Attr(), Resource(), {}, node)
                node.children[paths[i]] = child
            node = child
        leaf = HNode(job.uid, 1.0, attr, job.total_request.clone(), None, node)
        assert node.children is not None
        node.children[job.uid] = leaf
        return leaf

    def _refresh(self, node: HNode, demanding: frozenset[str]) -> None:
        """One node from its children's current values (a leaf: only its saturation)."""
        if node.children is None:
            node.saturated = resource_saturated(node.attr.allocated, node.request, demanding)
            return
        mdr = 1.0
        kids = node.children.values()
        for c in kids:
            # Volcano recomputes the child's dominant share here; a node's share is always
            # that of its allocation already (set together), so it is read instead
            s = c.attr.share
            if s != 0 and not c.saturated and s < mdr:
                mdr = s
        alloc = Resource()
        saturated = True
        for c in kids:
            if not c.saturated:
                saturated = False
            if c.attr.share != 0:
                if c.saturated:
                    alloc.add(c.attr.allocated)
                else:
                    alloc.add(c.attr.allocated.clone().multi(mdr / c.attr.share))
        node.attr.allocated = alloc
        node.attr.dominant, node.attr.share = self.share_fn(alloc)
        node.saturated = saturated

    def _full(self, node: HNode, demanding: frozenset[str]) -> None:
        if node.children is not None:
            for c in node.children.values():
                self._full(c, demanding)
        self._refresh(node, demanding)

    def update(self, root: HNode, total_allocated: Resource, job, attr: Attr, queue) -> None:
        """UpdateHierarchicalShare: place the job's leaf and re-derive the tree."""
        hierarchy, weights = queue_path(queue)
        demanding = self.demanding(total_allocated)
        leaf = self.build(root, job, attr, hierarchy, weights, queue.name)
        if root.demanding != demanding:
            self._full(root, demanding)
            root.demanding = demanding
            return
        node: HNode | None = leaf
        while node is not None:
            self._refresh(node, demanding)
            node = node.parent

    @staticmethod
    def compare(root: HNode, lqueue, rqueue) -> float:
        """compareQueues: < 0 when lqueue goes first."""
        lpaths = queue_path(lqueue)[0].split("/")
        rpaths = queue_path(rqueue)[0].split("/")
        ln: HNode | None = root
        rn: HNode | None = root
        depth = min(len(lpaths), len(rpaths))
        for i in range(depth):
            if ln is None or rn is None:
                # a path with no job under it (Volcano would dereference nil here)
                return 0.0
            if not ln.saturated and rn.saturated:
                return -1.0
            if ln.saturated and not rn.saturated:
                return 1.0
            lv = ln.attr.share / ln.weight
            rv = rn.attr.share / rn.weight
            if lv != rv:
                return lv - rv
            if i < depth - 1:
                ln = ln.children.get(lpaths[i + 1]) if ln.children is not None else None
                rn = rn.children.get(rpaths[i + 1]) if rn.children is not None else None
        return 0.0
