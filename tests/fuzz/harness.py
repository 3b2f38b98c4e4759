"""Run `caldera schedule` in-process and check its contract: exit 0 with a JSON document valid
against the output schema (src/caldera/api/schedule-output.schema.json), or exit 2 with one
`caldera: error:` line on stderr (after warnings only); never a traceback, always within a time
bound.

Shared by tests/test_output_schema.py, tests/test_readme.py and the fuzzing suite.
"""
from __future__ import annotations

import contextlib
import copy
import json
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from click.testing import CliRunner
from jsonschema import Draft202012Validator

from caldera.cli.main import cli

# The environment the CLI runs in: an 80-column, colourless terminal, whatever the caller's is.
ENV = {"COLUMNS": "80", "LINES": "50", "FORCE_COLOR": None, "NO_COLOR": "1", "TTY_COMPATIBLE": None,
       "TTY_INTERACTIVE": None, "CLICOLOR_FORCE": None}


@cache
def schema() -> dict[str, Any]:
    return json.loads((files("caldera.api") / "schedule-output.schema.json").read_text())


@cache
def validator(mode: str | None = None) -> Draft202012Validator:
    """The output schema; with mode "kube" or "volcano", narrowed to that variant of its anyOf."""
    s = schema()
    if mode is not None:
        s = copy.deepcopy(s)
        s["anyOf"] = [{"$ref": "#/$defs/kubePass" if mode == "kube" else "#/$defs/volcanoSession"}]
    Draft202012Validator.check_schema(s)
    return Draft202012Validator(s)


def schema_errors(doc: Any, mode: str | None = None) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator(mode).iter_errors(doc)]


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def strict_json(text: str) -> Any:
    """json.loads that rejects NaN / Infinity, which Python writes but JSON has not."""
    return json.loads(text, parse_constant=_no_constants)


class TimeLimit(BaseException):
    """Raised in the CLI's thread when an example runs past its bound (a BaseException so no
    `except Exception` inside the code under test swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def on_alarm(signum, frame):
        raise TimeLimit(f"took longer than {seconds} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Run:
    args: list[str]
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None
    seconds: float
    traceback: str = ""


def invoke(args: Sequence[str], *, timeout: float | None = None, stdin: str | None = None) -> Run:
    """`caldera ARGS` in this process (CliRunner), stdout and stderr apart."""
    runner = CliRunner(env=ENV)
    t0 = time.monotonic()
    with time_limit(timeout) if timeout else contextlib.nullcontext():
        try:
            r = runner.invoke(cli, list(args), input=stdin, catch_exceptions=True)
        except TimeLimit as e:   # raised outside the command (CliRunner's own code)
            return Run(list(args), -1, "", "", e, time.monotonic() - t0)
    exc = r.exception if not isinstance(r.exception, SystemExit) else None
    tb = ""
    if exc is not None and r.exc_info is not None:
        import traceback
        tb = "".join(traceback.format_exception(*r.exc_info))
    return Run(list(args), r.exit_code, r.stdout, r.stderr, exc, time.monotonic() - t0, tb)


def contract_violations(run: Run, mode: str | None = None) -> list[str]:
    """Why a `schedule -o json` run breaks the CLI contract ([] if it keeps it)."""
    if run.exception is not None:
        return [f"exception {type(run.exception).__name__}: {run.exception}\n{run.traceback}"]
    if "Traceback" in run.stderr:
        return [f"traceback on stderr:\n{run.stderr}"]
    if run.exit_code == 0:
        bad = [ln for ln in run.stderr.splitlines() if ln and not ln.startswith("caldera: warning: ")]
        if bad:
            return [f"exit 0 with stderr lines that are not warnings: {bad[:3]}"]
        try:
            doc = strict_json(run.stdout)
        except ValueError as e:
            return [f"exit 0 but stdout is not JSON ({e}): {run.stdout[:300]!r}"]
        return schema_errors(doc, mode)
    if run.exit_code == 2:
        # one error line, last; before it only warnings (a config's, printed before the manifests are read)
        lines = run.stderr.splitlines()
        if (not lines or not lines[-1].startswith("caldera: error: ")
                or not all(ln.startswith("caldera: warning: ") for ln in lines[:-1])):
            return [f"exit 2 without exactly one 'caldera: error:' line on stderr: {run.stderr[:500]!r}"]
        if run.stdout:
            return [f"exit 2 with output on stdout: {run.stdout[:200]!r}"]
        return []
    return [f"exit {run.exit_code}: stdout {run.stdout[:200]!r} stderr {run.stderr[:500]!r}"]
