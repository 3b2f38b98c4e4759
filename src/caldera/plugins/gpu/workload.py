"""FGD's target workload distribution for the FGD score plugin: a file (args.workload), or learned
from pods (the input's pending and running pods in `caldera schedule`).

The file is YAML or JSON: a list of kinds of task, or a mapping with that list under `workload`:

    - {cpu: 8000, gpuMilli: 500, gpus: 1, count: 120}          # a share of one GPU
    - {cpu: 16000, gpuMilli: 1000, gpus: 2, models: [V100M32], count: 40}
    - {cpu: 4000, count: 30}                                    # CPU only

cpu is milli-CPU, gpuMilli the milli-GPU on each GPU (1000 = whole GPUs, < 1000 a share of one),
gpus the GPU count, models the GPU models it accepts (node label nvidia.com/gpu.product, in the order
given, which orders kinds of equal count as a gpu_spec string does; absent or
[] = any), count how many such tasks (default 1). As FGD builds it from a trace, the most common
kinds covering 95 % of the tasks are kept and their counts become probabilities
(caldera.gpu.demand.distribution).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ...api.objects import Pod
from ...errors import ConfigError
from ...gpu.demand import Demand, Distribution, distribution
from .common import pod_demand

FIELDS = ("cpu", "gpuMilli", "gpus", "models", "count")
WHERE = "FGDArgs.workload"
MAX_COUNT = 1_000_000       # tasks per entry (the distribution counts them one by one)


def load_workload(path: str) -> Distribution:
    """The distribution of a workload file; ConfigError (one line, naming the entry) when bad."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{WHERE}: cannot read {path!r} ({e.strerror or e}); set args.workload to a "
                          "YAML or JSON file of {cpu, gpuMilli, gpus, models, count}") from None
    try:
        doc = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"{WHERE}: {path}: not valid {'JSON' if path.endswith('.json') else 'YAML'} "
                          f"({str(e).splitlines()[0]}); fix the file") from None
    if isinstance(doc, dict) and set(doc) == {"workload"}:
        doc = doc["workload"]
    if not isinstance(doc, list) or not doc:
        raise ConfigError(f"{WHERE}: {path}: expected a non-empty list of {{cpu, gpuMilli, gpus, models, count}}; "
                          "see docs/gpu.md")
    tasks: list[Demand] = []
    for j, entry in enumerate(doc):
        d, count = _entry(entry, f"{path}[{j}]")
        tasks += [d] * count
    return distribution(tasks)


def _int(e: dict[str, Any], key: str, where: str, lo: int, hi: int | None, default: int) -> int:
    v = e.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ConfigError(f"{WHERE}: {where}.{key}: expected an integer {rng}, got {v!r}; fix the file")
    return v


def _entry(e: object, where: str) -> tuple[Demand, int]:
    if not isinstance(e, dict):
        raise ConfigError(f"{WHERE}: {where}: expected a mapping {{cpu, gpuMilli, gpus, models, count}}, "
                          f"got {e!r}; fix the file")
    unknown = sorted(set(e) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{WHERE}: {where}: unknown field(s) {unknown}; known: {', '.join(FIELDS)}")
    cpu = _int(e, "cpu", where, 0, None, 0)
    milli = _int(e, "gpuMilli", where, 0, 1000, 0)
    gpus = _int(e, "gpus", where, 0, None, 0)
    count = _int(e, "count", where, 1, MAX_COUNT, 1)
    models = e.get("models") or []
    if not isinstance(models, list) or not all(isinstance(m, str) and m for m in models):
        raise ConfigError(f"{WHERE}: {where}.models: expected a list of GPU model names, got {models!r}; "
                          "fix the file")
    if (gpus == 0) != (milli == 0):
        raise ConfigError(f"{WHERE}: {where}: gpus and gpuMilli go together (gpus={gpus}, gpuMilli={milli}); "
                          "set both, or neither for a CPU-only task")
    try:
        d = Demand(cpu, milli, gpus, tuple(dict.fromkeys(models)) if gpus else ())
    except ValueError as err:
        raise ConfigError(f"{WHERE}: {where}: {err}; fix the file") from None
    return d, count


def learn_workload(pods: Iterable[Pod]) -> Distribution:
    """FGD's distribution over these pods' kinds (cpu, per-GPU milli, GPUs, models)."""
    return distribution(pod_demand(p) for p in pods)
