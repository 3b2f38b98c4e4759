"""summary.json figures computed by hand, the CSV files' shape, and the comparison plots and report."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from caldera.sim.model import PodRecord, SimResult
from caldera.sim.report import POD_COLUMNS, cell, write_comparison, write_run
from caldera.sim.summary import distribution, rounded, step_mean, summarize

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def records() -> list[PodRecord]:
    """Waits 0, 9, 8 (three started pods); JCTs 10 and 19 (two completed); one never started."""
    return [
        PodRecord("default/a", arrival=0.0, start=0.0, end=10.0, node="n1", attempts=1, outcome="completed",
                  queue="q1"),
        PodRecord("default/b", arrival=1.0, start=10.0, end=20.0, node="n1", attempts=2, evictions=1,
                  outcome="completed", queue="q2"),
        PodRecord("default/c", arrival=2.0, start=10.0, node="n2", attempts=1, outcome="running", queue="q1"),
        PodRecord("default/d", arrival=15.5, attempts=3, queue="q2"),
    ]


def result(name: str = "kube", queues: bool = True) -> SimResult:
    """cpu: 2 of 4 on [0, 10), 4 of 4 on [10, 20); memory 1 of 8 throughout; makespan 20."""
    return SimResult(
        name=name,
        records=records(),
        resources=["cpu", "memory", "nvidia.com/gpu"],
        capacity={"cpu": 4.0, "memory": 8.0, "nvidia.com/gpu": 0.0},
        times=[0.0, 10.0],
        allocated=[[2.0, 1.0, 0.0], [4.0, 1.0, 0.0]],
        pending=[1, 2],
        running=[1, 2],
        queue_names=["q1", "q2"] if queues else [],
        queue_allocated=[[0.5, 0.0], [0.25, 0.75]] if queues else [],
        cycle_seconds=[0.001, 0.002, 0.003, 0.004],
        gpu_fragmentation=1500.0,
        makespan=20.0,
        end_time=20.0,
        wall_seconds=1.25,
        peak_rss_mib=123.456789,
        warnings=["pod default/x: no duration"],
    )


# ---- summary ---------------------------------------------------------------------------------

def test_counts() -> None:
    assert summarize(result())["counts"] == {
        "submitted": 4, "started": 3, "completed": 2, "never_started": 1, "running": 1, "pending": 1,
        "evictions": 1}


def test_wait_and_jct() -> None:
    s = summarize(result())
    assert s["wait"]["mean"] == pytest.approx(17 / 3, rel=1e-5)
    assert s["wait"]["p50"] == 8.0
    assert s["wait"]["p95"] == pytest.approx(8.9)       # linear: 8 + 0.9 * (9 - 8)
    assert s["wait"]["max"] == 9.0
    assert s["jct"] == {"mean": 14.5, "p50": 14.5, "p95": pytest.approx(18.55), "max": 19.0}


def test_empty_distributions_are_null() -> None:
    assert distribution([]) == {"mean": None, "p50": None, "p95": None, "max": None}
    r = result()
    r.records = [PodRecord("default/p", arrival=0.0)]
    s = summarize(r)
    assert s["wait"]["mean"] is None
    assert s["jct"]["p95"] is None


def test_time_averaged_allocation() -> None:
    s = summarize(result())
    assert s["alloc_ratio"]["cpu"] == 0.75
    assert s["alloc_ratio"]["memory"] == 0.125
    assert s["alloc_ratio"]["nvidia.com/gpu"] is None      # no capacity


def test_allocation_null_on_zero_makespan() -> None:
    r = result()
    r.makespan = 0.0
    assert summarize(r)["alloc_ratio"]["cpu"] is None


def test_step_mean() -> None:
    assert step_mean([0.0, 10.0], [2.0, 4.0], 20.0) == 3.0
    assert step_mean([5.0], [4.0], 20.0) == 3.0                # 0 before the first sample
    assert step_mean([0.0, 10.0, 30.0], [2.0, 4.0, 100.0], 20.0) == 3.0   # samples after the horizon ignored
    assert step_mean([], [], 20.0) == 0.0
    assert step_mean([0.0], [1.0], 0.0) is None


def test_queue_share() -> None:
    s = summarize(result())
    assert s["queue_share"] == {"q1": 0.375, "q2": 0.375}
    assert "queue_share" not in summarize(result(queues=False))


def test_run_wide_figures() -> None:
    s = summarize(result())
    assert s["cycle_ms"] == {"p50": 2.5, "p99": pytest.approx(3.97)}
    assert s["cycles"] == 4
    assert s["gpu_fragmentation_milli"] == 1500.0
    assert s["makespan"] == 20.0
    assert s["peak_rss_mib"] == 123.457
    assert s["wall_seconds"] == 1.25
    assert s["stopped_early"] is False
    assert s["warnings"] == ["pod default/x: no duration"]
    r = result()
    r.cycle_seconds = []
    r.gpu_fragmentation = None
    assert summarize(r)["cycle_ms"] == {"p50": None, "p99": None}
    assert summarize(r)["gpu_fragmentation_milli"] is None


def test_rounding() -> None:
    assert rounded(17 / 3) == 5.66667
    assert rounded(float("nan")) is None
    assert rounded(None) is None


def test_summary_is_strict_json() -> None:
    s = summarize(result())
    assert json.loads(json.dumps(s, allow_nan=False)) == s


# ---- write_run -------------------------------------------------------------------------------

def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_cell() -> None:
    assert [cell(None), cell(10.0), cell(10.5), cell(3), cell("x"), cell(0.1)] == ["", "10", "10.5", "3", "x", "0.1"]


def test_pods_csv(tmp_path: Path) -> None:
    write_run(tmp_path, result())
    rows = read_csv(tmp_path / "pods.csv")
    assert rows[0][:8] == ["pod", "arrival", "start", "end", "node", "attempts", "evictions", "outcome"]
    assert tuple(rows[0]) == POD_COLUMNS
    assert rows[1] == ["default/a", "0", "0", "10", "n1", "1", "0", "completed", "q1"]
    assert rows[3] == ["default/c", "2", "10", "", "n2", "1", "0", "running", "q1"]
    assert rows[4] == ["default/d", "15.5", "", "", "", "3", "0", "pending", "q2"]
    assert len(rows) == 5


def test_summary_json(tmp_path: Path) -> None:
    write_run(tmp_path, result())
    assert json.loads((tmp_path / "summary.json").read_text()) == summarize(result())


def test_timeseries_csv(tmp_path: Path) -> None:
    write_run(tmp_path, result())
    rows = read_csv(tmp_path / "timeseries.csv")
    assert rows[0] == ["time", "allocated_cpu", "alloc_ratio_cpu", "allocated_memory", "alloc_ratio_memory",
                       "allocated_nvidia.com/gpu", "alloc_ratio_nvidia.com/gpu", "pending", "running",
                       "share_q1", "share_q2"]
    assert rows[1] == ["0", "2", "0.5", "1", "0.125", "0", "", "1", "1", "0.5", "0"]
    assert rows[2] == ["10", "4", "1", "1", "0.125", "0", "", "2", "2", "0.25", "0.75"]


def test_timeseries_without_queues(tmp_path: Path) -> None:
    write_run(tmp_path, result(queues=False))
    header = read_csv(tmp_path / "timeseries.csv")[0]
    assert header[-2:] == ["pending", "running"]


# ---- write_comparison ------------------------------------------------------------------------

def check_pngs(paths: list[Path]) -> None:
    for p in paths:
        assert p.read_bytes()[:8] == PNG_SIGNATURE, p


def test_comparison(tmp_path: Path) -> None:
    volcano = result("volcano <drf>")
    volcano.times = [0.0, 5.0, 12.0]
    volcano.allocated = [[1.0, 2.0, 0.0], [3.0, 4.0, 0.0], [4.0, 8.0, 0.0]]
    volcano.pending, volcano.running = [2, 1, 0], [1, 2, 3]
    volcano.queue_allocated = [[0.25, 0.25], [0.5, 0.25], [0.5, 0.5]]
    paths = write_comparison(tmp_path, [result("kube"), volcano])
    names = [p.name for p in paths]
    assert names == ["allocation.png", "wait_cdf.png", "pending.png", "queue_share.png", "report.html"]
    check_pngs(paths[:-1])
    page = (tmp_path / "report.html").read_text()
    assert "kube" in page
    assert "volcano &lt;drf&gt;" in page and "volcano <drf>" not in page
    assert page.count("data:image/png;base64,") == 4
    assert "<script" not in page and "<link" not in page
    assert "75.0%" in page          # kube's time-averaged cpu allocation


def test_comparison_one_run_without_queues(tmp_path: Path) -> None:
    paths = write_comparison(tmp_path / "out", [result(queues=False)])
    assert [p.name for p in paths] == ["allocation.png", "wait_cdf.png", "pending.png", "report.html"]
    check_pngs(paths[:-1])
    assert "data:image/png;base64," in (tmp_path / "out" / "report.html").read_text()


def test_comparison_hours_and_empty_run(tmp_path: Path) -> None:
    long = result("long")
    long.times = [0.0, 5 * 3600.0]
    long.makespan = 10 * 3600.0
    empty = SimResult(name="empty", records=[], resources=["cpu"], capacity={"cpu": 4.0}, times=[], allocated=[],
                      pending=[], running=[])
    paths = write_comparison(tmp_path, [long, empty])
    check_pngs([p for p in paths if p.suffix == ".png"])
    assert "empty" in (tmp_path / "report.html").read_text()


def test_comparison_needs_a_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_comparison(tmp_path, [])


def test_importing_caldera_sim_does_not_import_matplotlib() -> None:
    import subprocess
    import sys

    code = "import sys, caldera.sim.report, caldera.sim.summary; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_comparison_many_queues_and_warnings(tmp_path: Path) -> None:
    r = result("many")
    r.queue_names = [f"q{j}" for j in range(6)]
    r.queue_allocated = [[0.1 * j for j in range(6)], [0.05 * j for j in range(6)]]
    r.stopped_early = True
    r.warnings = ["pod <x> has no duration"] * 30
    paths = write_comparison(tmp_path, [r, result("other")])
    check_pngs([p for p in paths if p.suffix == ".png"])
    page = (tmp_path / "report.html").read_text()
    assert "many (stopped early)" in page
    assert "pod &lt;x&gt; has no duration" in page and "… and 10 more" in page


def test_numpy_scalars(tmp_path: Path) -> None:
    import numpy as np

    assert [cell(np.float64(10.0)), cell(np.float64(0.5))] == ["10", "0.5"]
    assert cell(np.int64(3)) == "3"  # type: ignore[arg-type]
    r = result()
    r.times = [np.float64(t) for t in r.times]
    r.allocated = [[np.float64(v) for v in row] for row in r.allocated]
    r.pending = [np.int64(v) for v in r.pending]  # type: ignore[misc]
    r.records[1].evictions = np.int64(1)  # type: ignore[assignment]
    write_run(tmp_path, r)
    assert json.loads((tmp_path / "summary.json").read_text())["counts"]["evictions"] == 1
    assert read_csv(tmp_path / "timeseries.csv")[2][:3] == ["10", "4", "1"]
