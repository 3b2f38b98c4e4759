"""`caldera schedule -o json` against its schema (src/caldera/api/schedule-output.schema.json,
described in docs/output.md): every example and every scenario file, with and without --explain,
kube passes against the schema's kube variant and Volcano sessions against its Volcano one."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.fuzz.harness import invoke, schema_errors, strict_json, validator

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
SCENARIOS = [ROOT / "tests" / "scenarios", ROOT.parent / "shared" / "scenarios"]

# (id, manifests, config or None, mode)
EXAMPLES = [
    ("cluster", [EX / "cluster"], None, "kube"),
    ("gang-training", [EX / "batch" / "gang-training"], EX / "batch" / "volcano-scheduler.conf", "volcano"),
    ("weighted-queues", [EX / "batch" / "weighted-queues"], EX / "batch" / "volcano-scheduler.conf", "volcano"),
    ("reclaim", [EX / "batch" / "reclaim"], EX / "batch" / "reclaim" / "volcano-scheduler.conf", "volcano"),
    ("deviceshare", [EX / "batch" / "deviceshare"], EX / "batch" / "deviceshare" / "volcano-scheduler.conf", "volcano"),
    # Volcano objects with a kube pass: validated, then listed as ignored
    ("gang-training-kube", [EX / "batch" / "gang-training"], None, "kube"),
]


def _scenario_files() -> list[Path]:
    seen: dict[str, Path] = {}
    for d in SCENARIOS:
        if d.is_dir():
            for f in sorted(d.glob("*.yaml")):
                seen.setdefault(f.name, f)
    return [seen[k] for k in sorted(seen)]


def _check(args: list[str], mode: str) -> dict:
    r = invoke(["schedule", *args, "-o", "json"], timeout=120)
    assert r.exception is None, r.traceback
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    errs = schema_errors(doc, mode)
    assert not errs, "\n".join(errs)
    return doc


def test_schema_is_valid_draft_2020_12():
    validator()             # check_schema raises on an invalid schema
    validator("kube")
    validator("volcano")


@pytest.mark.parametrize("explain", [False, True], ids=["plain", "explain"])
@pytest.mark.parametrize(("name", "files", "conf", "mode"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_examples(name, files, conf, mode, explain):
    args = [a for f in files for a in ("-f", str(f))]
    if conf is not None:
        args += ["--config", str(conf)]
    doc = _check(args + (["--explain"] if explain else []), mode)
    assert ("explain" in doc) == explain
    if explain and name != "gang-training-kube":      # (there, every pod is volcano's: none is attempted)
        assert doc["explain"], "--explain explained no pod"
    if name == "gang-training-kube":
        assert {i["kind"] for i in doc["ignored"]} == {"Job", "Queue"}


@pytest.mark.parametrize("explain", [False, True], ids=["plain", "explain"])
@pytest.mark.parametrize("scenario", _scenario_files(), ids=lambda f: f.stem)
def test_scenarios(scenario: Path, explain: bool, tmp_path: Path):
    docs = [d for d in yaml.safe_load_all(scenario.read_text()) if d]
    scen = next(d for d in docs if d.get("kind") == "Scenario")
    man = tmp_path / "manifests.yaml"
    man.write_text(yaml.safe_dump_all([d for d in docs if d.get("kind") != "Scenario"]))
    args = ["-f", str(man)]
    sch = scen.get("scheduler") or {}
    conf = sch.get("conf") or sch.get("config")
    volcano = sch.get("kind") == "volcano"
    if conf:
        c = tmp_path / ("scheduler.conf" if volcano else "config.yaml")
        c.write_text(conf if isinstance(conf, str) else yaml.safe_dump(conf))
        args += ["--config", str(c)]
    _check(args + (["--explain"] if explain else []), "volcano" if volcano else "kube")


# The schema must be able to fail: documents that break it in the ways a regression would.
GOOD = {"bindings": [{"pod": "ns/p", "node": "n1"}], "unschedulable": [], "evictions": [],
        "nominations": [], "podGroups": [], "ignored": []}


@pytest.mark.parametrize(("change", "mode"), [
    ({"bindings": [{"pod": "p", "node": "n1"}]}, None),                          # pod key without namespace
    ({"bindings": [{"pod": "ns/p", "node": "n1", "score": 3}]}, None),           # unknown field
    ({"extra": []}, None),                                                       # unknown top-level key
    ({"ignored": None}, None),
    ({"pipelined": []}, None),                                                   # present only when not empty
    ({"unschedulable": [{"pod": "ns/p"}]}, None),                                # no message
    ({"explain": {"ns/p": {"filtered": {}}}}, None),                             # no scores
    ({"explain": {"ns/p": {"filtered": {}, "scores": {"n1": {"Fit": 3}}}}}, None),  # no total
    ({"explain": {"ns/p": {"filtered": {}, "scores": {"n1": {"total": "3"}}}}}, None),
    ({"podGroups": [{"name": "ns/pg", "phase": "Bound"}]}, None),
    ({"evictions": [{"pod": "ns/v", "node": "n1", "reason": "x"}]}, "kube"),     # kube evictions name no node
    ({"explain": {"ns/p": {"filtered": {}, "scores": {"n1": {"total": 1.5}}}}}, "kube"),
    ({"nominations": [{"pod": "ns/p", "node": "n1"}]}, "volcano"),
    ({"evictions": [{"pod": "ns/v", "reason": "reclaim"}]}, "volcano"),
])
def test_schema_rejects(change, mode):
    doc = {**GOOD}
    for k, v in change.items():
        if v is None:
            doc.pop(k)
        else:
            doc[k] = v
    assert not schema_errors(GOOD, mode)
    assert schema_errors(doc, mode)


def test_strict_json_rejects_infinity():
    with pytest.raises(ValueError):
        strict_json('{"total": Infinity}')
