"""The `caldera schedule` contract by example: scenario files from the reference schedulers'
own tests (tests/scenarios, copied from the shared scenarios; ../shared/scenarios too when present),
checked with their check.py through the installed CLI."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ROOT / "tests" / "scenarios"
SHARED = ROOT.parent / "shared" / "scenarios"
CALDERA = str(Path(sys.executable).parent / "caldera")


def _files():
    seen = {}
    for d in (LOCAL, SHARED):
        if d.is_dir():
            for f in sorted(d.glob("*.yaml")):
                seen.setdefault(f.name, f)
    return [seen[k] for k in sorted(seen)]


@pytest.mark.parametrize("scenario", _files(), ids=lambda f: f.stem)
def test_scenario(scenario: Path):
    p = subprocess.run([sys.executable, str(LOCAL / "check.py"), "--caldera", CALDERA, str(scenario)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
