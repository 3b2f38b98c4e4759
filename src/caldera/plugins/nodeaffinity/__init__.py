"""NodeAffinity: spec.nodeSelector, required node affinity and NodeAffinityArgs.addedAffinity
filter nodes; preferred terms (the pod's and the added ones) score them.

- plugin.py: the plugin (PreFilter / Filter / PreScore / Score) and its failure reasons;
- pod.py:    a pod's nodeSelector and nodeAffinity, parsed once per pod;
- args.py:   NodeAffinityArgs (addedAffinity);
- terms.py:  kube's parse checks on node selector terms (labels.NewRequirement's errors);
- masks.py:  selectors evaluated as boolean masks over all nodes of the table.
"""
from __future__ import annotations

from .plugin import NodeAffinity

__all__ = ["NodeAffinity"]
