"""Caldera: a Kubernetes scheduler and cluster simulator with kube-scheduler and Volcano semantics."""

__version__ = "0.1.0"
