"""What one scheduling pass decided, in the shape `caldera schedule -o json` prints (the output
contract shared by the kube and the Volcano drivers; each adds its own fields)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PassOutput:
    bindings: list[dict[str, Any]] = field(default_factory=list)
    unschedulable: list[dict[str, Any]] = field(default_factory=list)
    evictions: list[dict[str, Any]] = field(default_factory=list)
    explain: dict[str, dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)

    def output(self, *, nominations: list[dict[str, Any]] | None = None,
               pod_groups: list[dict[str, Any]] | None = None,
               pipelined: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The output document: every key of the contract, `pipelined` only when there are any."""
        d: dict[str, Any] = {"bindings": self.bindings, "unschedulable": self.unschedulable,
                             "evictions": self.evictions, "nominations": nominations or [],
                             "podGroups": pod_groups or []}
        if pipelined:
            d["pipelined"] = pipelined
        if self.explain is not None:
            d["explain"] = self.explain
        return d
