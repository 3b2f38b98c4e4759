"""README's sample outputs are what the commands print: every code block that starts with a
`$ … caldera schedule …` line followed by output is run (in-process, 80 columns, no colour)
and compared line by line, whitespace normalised. A `...` line in a sample stands for any
number of lines left out."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.fuzz.harness import invoke

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def samples(text: str) -> list[tuple[int, str, list[str]]]:
    """(line number, command, expected output lines) for each sample block."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start = i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if body and body[0].startswith("$ ") and "caldera schedule" in body[0] and len(body) > 1:
                out.append((start + 1, body[0][2:], body[1:]))
        i += 1
    return out


def norm(lines: list[str]) -> list[str]:
    return [re.sub(r"\s+", " ", ln).strip() for ln in lines if ln.strip()]


def matches(expected: list[str], got: list[str]) -> bool:
    """`expected` against `got`; a "..." line in `expected` matches any run of lines."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and expected[0] == got[0] and matches(expected[1:], got[1:])


SAMPLES = samples(README.read_text())


def test_readme_has_samples():
    assert len(SAMPLES) >= 2, "README's sample outputs were not found"


@pytest.mark.parametrize(("line", "command", "expected"), SAMPLES, ids=[f"README.md:{s[0]}" for s in SAMPLES])
def test_sample_output(line, command, expected, monkeypatch):
    argv = shlex.split(command)
    assert Path(argv[0]).name == "caldera", command
    monkeypatch.chdir(ROOT)
    r = invoke(argv[1:], timeout=120)
    assert r.exception is None, r.traceback
    assert r.exit_code == 0, r.stderr
    want, got = norm(expected), norm(r.stdout.splitlines())
    assert matches(want, got), (f"README.md:{line}: the sample output of `{command}` is not what it prints; "
                                f"it prints:\n" + r.stdout)
