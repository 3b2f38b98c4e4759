"""GPUs as devices: per-GPU free milli-GPU in columns (nodes x GPUs), the fragmentation measure of
FGD (Weng et al., USENIX ATC'23) and the six GPU placement policies of its experiment (Random,
DotProd, GpuClustering, GpuPacking, BestFit, FGD), each with its GPU-selection rule.

Everything here is numpy over rows of nodes x kinds of demand, so that one call scores every node
for one pod (the engine's score plugins) or one node for every kind of pod (the FGD protocol,
which re-scores only the node that changed). Semantics: /work/shared/data/openb/EXPERIMENT.md and
docs/gpu.md.
"""
