"""Network topology: HyperNodes (topology.volcano.sh/v1alpha1) and a job's networkTopology
constraint, as Volcano v1.15.1's scheduler sees them (api/hyper_node_info.go, the HyperNode part
of framework/session.go).

A HyperNode has a tier and members: nodes (exactMatch, regexMatch or labelMatch) or other
HyperNodes (exactMatch). The tree is built once per session over the session's nodes; each
HyperNode knows its parent, its children and its *real nodes* (every node under it, as a sorted
numpy index array over ssn.nodes). A virtual top HyperNode, `<cluster-top-hypernode>`, one tier
above the highest, holds every node and adopts every HyperNode without a parent (Volcano's
addClusterTopHyperNode). Tiers are listed from the lowest, the top one included.

Differences from Volcano (stricter input, deterministic order):
- What Volcano logs and skips is an InputError here: a HyperNode member naming a HyperNode that
  does not exist, a HyperNode member selected by regexMatch/labelMatch (Volcano only follows
  exactMatch for HyperNode members), a HyperNode with two parents, a cycle, a regex that does not
  compile (Python's `re`, searched like Go's MatchString; RE2-only syntax may differ), a bad tier
  or mode. A Node member naming a node that is not in the input is ignored, as in Volcano.
- Go walks sets of children in map order; here children are visited in name order, and a node
  that is in two lowest-tier HyperNodes belongs (for scoring) to the first by name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...api.objects import read_meta
from ...api.selectors import LabelSelector, parse_label_selector
from ...errors import InputError

if TYPE_CHECKING:
    from .nodes import BatchNodes

CLUSTER_TOP = "<cluster-top-hypernode>"
HARD, SOFT = "hard", "soft"
MEMBER_NODE, MEMBER_HYPERNODE = "Node", "HyperNode"
API_GROUP = "topology.volcano.sh"


@dataclass
class NetworkTopology:
    """spec.networkTopology of a PodGroup (or a Volcano Job): the session works on a copy, which
    adjust_network_topology rewrites (tier name -> tier, soft -> hard at the top tier)."""
    mode: str = HARD
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""

    def copy(self) -> NetworkTopology:
        return replace(self)

    def hard(self) -> tuple[bool, int]:
        """IsHardTopologyMode: (hard?, highest tier allowed); never hard without a tier."""
        if self.highest_tier_allowed is None:
            return False, 0
        return self.mode == HARD, self.highest_tier_allowed


def parse_network_topology(v: object, where: str = "spec.networkTopology") -> NetworkTopology | None:
    """The NetworkTopologySpec: mode hard|soft (default hard), highestTierAllowed (an integer
    >= 0) or highestTierName, not both."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise InputError(f"{where}: must be a mapping with mode and highestTierAllowed")
    for k in v:
        if k not in ("mode", "highestTierAllowed", "highestTierName"):
            raise InputError(f"{where}: unknown field {k!r}; fields are mode, highestTierAllowed, highestTierName")
    mode = v.get("mode") or HARD
    if mode not in (HARD, SOFT):
        raise InputError(f"{where}.mode: must be hard or soft, got {mode!r}")
    tier = v.get("highestTierAllowed")
    if tier is not None and (not isinstance(tier, int) or isinstance(tier, bool) or tier < 0):
        raise InputError(f"{where}.highestTierAllowed: must be an integer >= 0, got {tier!r}")
    name = v.get("highestTierName") or ""
    if not isinstance(name, str):
        raise InputError(f"{where}.highestTierName: must be a string, got {name!r}")
    if tier is not None and name:
        raise InputError(f"{where}: highestTierAllowed and highestTierName cannot both be set; keep one")
    return NetworkTopology(mode, tier, name)


@dataclass
class Member:
    type: str                    # Node | HyperNode
    exact: str = ""
    regex: re.Pattern[str] | None = None
    labels: LabelSelector | None = None


@dataclass
class HyperNodeSpec:
    name: str
    tier: int
    tier_name: str
    members: list[Member]


def parse_hypernode(doc: dict) -> HyperNodeSpec:
    """A HyperNode manifest, with the CRD's and the admission policy's checks."""
    _, name = read_meta(doc, "HyperNode")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise InputError("spec: must be a mapping with tier and members")
    tier = spec.get("tier", 0)
    if not isinstance(tier, int) or isinstance(tier, bool) or tier < 0:
        raise InputError(f"spec.tier: must be an integer >= 0, got {tier!r}")
    tier_name = spec.get("tierName") or ""
    if not isinstance(tier_name, str):
        raise InputError(f"spec.tierName: must be a string, got {tier_name!r}")
    members = spec.get("members")
    if not isinstance(members, list) or not members:
        raise InputError("spec.members: member must have at least one member")
    out = []
    for k, m in enumerate(members):
        where = f"spec.members[{k}]"
        if not isinstance(m, dict):
            raise InputError(f"{where}: must be a mapping with type and selector")
        mtype = m.get("type")
        if mtype not in (MEMBER_NODE, MEMBER_HYPERNODE):
            raise InputError(f"{where}.type: must be Node or HyperNode, got {mtype!r}")
        sel = m.get("selector")
        if not isinstance(sel, dict):
            raise InputError(f"{where}.selector: must be a mapping with exactMatch, regexMatch or labelMatch")
        kinds = [s for s in ("exactMatch", "regexMatch", "labelMatch") if sel.get(s) is not None]
        if not kinds:
            raise InputError(f"{where}.selector: member selector must have one of exactMatch, regexMatch, "
                             "or labelMatch")
        if len(kinds) > 1:
            raise InputError(f"{where}.selector: cannot specify more than one selector type "
                             f"(exactMatch, regexMatch, labelMatch), got {', '.join(kinds)}")
        member = Member(mtype)
        if kinds[0] == "exactMatch":
            em = sel["exactMatch"]
            n = em.get("name") if isinstance(em, dict) else None
            if not isinstance(n, str) or not n:
                raise InputError(f"{where}.selector.exactMatch.name: member exactMatch name is required")
            member.exact = n
        elif mtype == MEMBER_HYPERNODE:
            raise InputError(f"{where}.selector: a HyperNode member is selected by exactMatch only "
                             f"(Volcano ignores {kinds[0]} for HyperNode members)")
        elif kinds[0] == "regexMatch":
            rm = sel["regexMatch"]
            pat = rm.get("pattern") if isinstance(rm, dict) else None
            if not isinstance(pat, str) or not pat:
                raise InputError(f"{where}.selector.regexMatch.pattern: member regexMatch pattern is required")
            try:
                member.regex = re.compile(pat)
            except re.error as e:
                raise InputError(f"{where}.selector.regexMatch.pattern: member regexMatch pattern is invalid: "
                                 f"{pat!r}: {e}") from None
        else:
            member.labels = parse_label_selector(sel["labelMatch"], f"{where}.selector.labelMatch")
            lm = sel["labelMatch"]
            if isinstance(lm, dict) and not lm.get("matchLabels") and not lm.get("matchExpressions"):
                member.labels = None      # an empty labelMatch selects no node (GetMembers)
        out.append(member)
    return HyperNodeSpec(name, tier, tier_name, out)


class HyperNodeInfo:
    __slots__ = ("children", "mask", "name", "nodes", "parent", "spec", "tier", "tier_name")

    def __init__(self, name: str, tier: int, tier_name: str = "", spec: HyperNodeSpec | None = None):
        self.name = name
        self.tier = tier
        self.tier_name = tier_name
        self.spec = spec
        self.parent = ""
        self.children: list[str] = []
        self.nodes: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)   # real nodes, sorted rows of ssn.nodes
        self.mask: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)

    def __repr__(self):
        return f"HyperNode({self.name}, tier {self.tier})"


class HyperNodes:
    """The session's HyperNode tree (HyperNodes, HyperNodesSetByTier, RealNodesList/Set,
    HyperNodesTiers), the cluster top included."""

    def __init__(self, specs: list[tuple[str, HyperNodeSpec]], nodes: BatchNodes):
        N = len(nodes)
        self.n_nodes = N
        self.infos: dict[str, HyperNodeInfo] = {}
        self.sources: dict[str, str] = {}
        for source, s in specs:
            if s.name in self.infos:
                raise InputError(f"duplicate HyperNode {s.name!r}", source, f"HyperNode {s.name}")
            self.infos[s.name] = HyperNodeInfo(s.name, s.tier, s.tier_name, s)
            self.sources[s.name] = source
        self.real = bool(self.infos)
        names = nodes.names
        self.node_index = index = {n: i for i, n in enumerate(names)}
        labels = [ni.node.labels for ni in nodes.infos]
        # parents and children (exactMatch HyperNode members)
        for name in sorted(self.infos):
            hn = self.infos[name]
            assert hn.spec is not None
            for m in hn.spec.members:
                if m.type != MEMBER_HYPERNODE:
                    continue
                child = self.infos.get(m.exact)
                where = (self.sources[name], f"HyperNode {name}")
                if child is None:
                    raise InputError(f"member HyperNode {m.exact!r} does not exist; add it or remove the member",
                                     *where)
                if child.parent and child.parent != name:
                    raise InputError(f"member HyperNode {m.exact!r} already has the parent {child.parent!r}; "
                                     "a HyperNode can be a member of one HyperNode only", *where)
                child.parent = name
                if m.exact not in hn.children:
                    hn.children.append(m.exact)
            hn.children.sort()
        # real nodes, depth first with a cycle check (BuildHyperNodeCache)
        done: dict[str, np.ndarray] = {}

        def build(name: str, chain: list[str]) -> np.ndarray:
            if name in chain:
                cyc = " -> ".join([*chain[chain.index(name):], name])
                raise InputError(f"cyclic dependency between HyperNodes: {cyc}; a HyperNode cannot contain "
                                 "itself", self.sources[name], f"HyperNode {name}")
            got = done.get(name)
            if got is not None:
                return got
            hn = self.infos[name]
            assert hn.spec is not None
            mask = np.zeros(N, dtype=bool)
            for m in hn.spec.members:
                if m.type == MEMBER_HYPERNODE:
                    mask |= build(m.exact, [*chain, name])
                elif m.exact:
                    i = index.get(m.exact)
                    if i is not None:
                        mask[i] = True
                elif m.regex is not None:
                    rx = m.regex
                    mask |= np.fromiter((rx.search(n) is not None for n in names), dtype=bool, count=N)
                elif m.labels is not None:
                    sel = m.labels
                    mask |= np.fromiter((sel.matches(lb) for lb in labels), dtype=bool, count=N)
            done[name] = mask
            return mask

        for name in sorted(self.infos):
            hn = self.infos[name]
            hn.mask = build(name, [])
            hn.nodes = np.flatnonzero(hn.mask)
        # the cluster top HyperNode
        top_tier = max((h.tier + 1 for h in self.infos.values()), default=1)
        top_tier = max(top_tier, 1)
        self.top = top = HyperNodeInfo(CLUSTER_TOP, top_tier)
        top.children = sorted(n for n, h in self.infos.items() if not h.parent)
        for c in top.children:
            self.infos[c].parent = CLUSTER_TOP
        top.mask = np.ones(N, dtype=bool)
        top.nodes = np.arange(N, dtype=np.intp)
        self.infos[CLUSTER_TOP] = top
        self.by_tier: dict[int, list[str]] = {}
        for name in sorted(self.infos):
            self.by_tier.setdefault(self.infos[name].tier, []).append(name)
        self.tiers = sorted(self.by_tier)
        self.tier_names = {h.tier_name: h.tier for h in self.infos.values() if h.tier_name}
        # FindHyperNodeForNode: the node's HyperNode among those of the lowest tier ("" if none)
        self.leaf_names = list(self.by_tier[self.tiers[0]])
        self.leaf_of = np.full(N, -1, dtype=np.intp)
        for k in range(len(self.leaf_names) - 1, -1, -1):
            self.leaf_of[self.infos[self.leaf_names[k]].mask] = k
        self._anc: dict[str, list[str]] = {}
        self._lca: dict[tuple[str, str], str] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.infos

    def __getitem__(self, name: str) -> HyperNodeInfo:
        return self.infos[name]

    def ancestors(self, name: str) -> list[str]:
        """GetAncestors: the HyperNode itself, then its parent, up to the top."""
        got = self._anc.get(name)
        if got is None:
            got = [name]
            hn = self.infos.get(name)
            while hn is not None and hn.parent and hn.parent not in got:
                got.append(hn.parent)
                hn = self.infos.get(hn.parent)
            self._anc[name] = got
        return got

    def lca(self, a: str, b: str) -> str:
        """GetLCAHyperNode: the lowest common ancestor ("" and x give x)."""
        if not a:
            return b
        if not b:
            return a
        got = self._lca.get((a, b))
        if got is None:
            mine = set(self.ancestors(a))
            got = next((x for x in self.ancestors(b) if x in mine), "")
            self._lca[(a, b)] = got
        return got

    def hypernode_of_node(self, i: int) -> str:
        k = int(self.leaf_of[i])
        return self.leaf_names[k] if k >= 0 else ""

    def task_num(self, name: str, tasks: Any) -> int:
        """FindJobTaskNumOfHyperNode: how many of `tasks` are on a node of the HyperNode."""
        hn = self.infos.get(name)
        if hn is None:
            return 0
        nodes = self.node_index
        c = 0
        for t in tasks:
            i = nodes.get(t.node_name) if t.node_name else None
            if i is not None and hn.mask[i]:
                c += 1
        return c


def build_hypernodes(docs: list[tuple[str, dict]], nodes: BatchNodes) -> HyperNodes:
    """The session's HyperNode tree from the HyperNode manifests (source, doc)."""
    specs = []
    for source, doc in docs:
        meta = doc.get("metadata")
        what = f"HyperNode {meta.get('name', '?') if isinstance(meta, dict) else '?'}"
        try:
            specs.append((source, parse_hypernode(doc)))
        except InputError as e:
            raise InputError(e.problem, source, what) from None
    return HyperNodes(specs, nodes)
