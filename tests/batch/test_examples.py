"""The batch examples do what the README says they do (one `caldera schedule` each)."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "batch"
CALDERA = str(Path(sys.executable).with_name("caldera"))


def schedule(example: str, conf: Path) -> dict:
    p = subprocess.run([CALDERA, "schedule", "-f", str(EX / example), "--config", str(conf), "-o", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def default_conf() -> Path:
    return EX / "volcano-scheduler.conf"


def test_gang_training(default_conf):
    out = schedule("gang-training", default_conf)
    bound = {b["pod"] for b in out["bindings"]}
    assert bound == {"ml/resnet-ps-0"} | {f"ml/resnet-worker-{i}" for i in range(4)}
    groups = {g["name"]: g for g in out["podGroups"]}
    llm = next(g for n, g in groups.items() if n.startswith("ml/llm-ft"))
    assert llm["phase"] == "Pending"
    assert llm["message"].startswith("8/8 tasks in gang unschedulable")
    assert llm["events"] == [{"type": "Normal", "reason": "Unschedulable",
                              "message": "queue resource quota insufficient: insufficient nvidia.com/gpu"}]


def test_weighted_queues(default_conf):
    out = schedule("weighted-queues", default_conf)
    per_queue = Counter(b["pod"].split("/")[0] for b in out["bindings"])
    assert per_queue == {"team-a": 12, "team-b": 4}
    pending = {u["pod"] for u in out["unschedulable"]}
    assert len(pending) == 8 and all(p.startswith("team-b/") for p in pending)


def test_reclaim():
    out = schedule("reclaim", EX / "reclaim" / "volcano-scheduler.conf")
    assert out["bindings"] == []
    assert sorted(e["pod"] for e in out["evictions"]) == ["batch/etl-4", "batch/etl-6"]
    assert {e["reason"] for e in out["evictions"]} == {"reclaim"}
    assert out["pipelined"] == [{"pod": "interactive/notebook-0", "node": "node-0"},
                                {"pod": "interactive/notebook-1", "node": "node-0"}]
