"""Columnar cluster state: NodeTable (numpy arrays nodes x resources) with assume/forget."""
from .nodetable import NodeTable

__all__ = ["NodeTable"]
