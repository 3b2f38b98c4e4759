"""Nominated pods: pods that preempted victims and wait for a node (status.nominatedNodeName)."""
from __future__ import annotations


class Nominator:
    def __init__(self, table):
        self.table = table
        self._node_of: dict[str, str] = {}
        self._pods: dict[str, dict[str, object]] = {}

    def add(self, pod, node_name: str) -> None:
        self.remove(pod.key)
        self._node_of[pod.key] = node_name
        self._pods.setdefault(node_name, {})[pod.key] = pod

    def remove(self, key: str) -> None:
        node = self._node_of.pop(key, None)
        if node is not None:
            self._pods.get(node, {}).pop(key, None)

    def node_of(self, key: str) -> str:
        return self._node_of.get(key, "")

    def pods_on(self, i: int) -> list:
        if not self._pods:
            return []
        return list(self._pods.get(self.table.nodes[i].name, {}).values())

    def nodes_with_pods(self) -> list[str]:
        return [n for n, ps in self._pods.items() if ps]

    def __len__(self) -> int:
        return len(self._node_of)
