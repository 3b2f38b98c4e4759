"""What the trace readers share: finding the input files, telling their formats apart, reading
CSV rows with their line numbers, and parsing cells into numbers with one-line errors."""
from __future__ import annotations

import csv
import gc
import io
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...api.reader import MANIFEST_SUFFIXES
from ...errors import InputError

TRACE_SUFFIXES = (*MANIFEST_SUFFIXES, ".csv")
STDIN = "-"

MANIFESTS = "manifests"
CALDERA_CSV = "caldera-csv"
OPENB_PODS = "openb-pods"
OPENB_NODES = "openb-nodes"

OPENB_POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli"
OPENB_NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
CALDERA_KEY_COLUMN = "job"
HEADER_HINT = (f"expected a Caldera trace (a header with columns {CALDERA_KEY_COLUMN!r} and 'arrival'), "
               f"an openb pod list ({OPENB_POD_HEADER},...) or an openb node list ({OPENB_NODE_HEADER})")


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while reading: building 100k pods creates millions of
    containers, and the collections they trigger would take about half of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class Source:
    """One input file (or stdin) and the format its content was detected as."""
    path: str
    fmt: str


def expand_paths(paths: list[str], warnings: list[str]) -> list[str]:
    """Files in argument order; a directory gives its *.yaml, *.yml, *.json and *.csv files, sorted."""
    out: list[str] = []
    for p in paths:
        if p == STDIN:
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix in TRACE_SUFFIXES)
            if not files:
                warnings.append(f"{p}: no .yaml, .yml, .json or .csv files in this directory")
            out.extend(str(f) for f in files)
        elif path.is_file():
            out.append(str(path))
        else:
            raise InputError("no such file or directory", p)
    return out


def _first_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return f.readline().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", path) from None


def _header_cells(line: str) -> list[str]:
    return [c.strip() for c in next(csv.reader([line]), [])]


def detect(path: str) -> Source:
    """The format of one input: a CSV by its header (any file), else manifests (not *.csv)."""
    if path == STDIN:
        return Source(path, MANIFESTS)        # stdin holds manifests only
    line = _first_line(path)
    if line.startswith(OPENB_POD_HEADER):
        return Source(path, OPENB_PODS)
    if line.startswith(OPENB_NODE_HEADER):
        return Source(path, OPENB_NODES)
    if "," in line and CALDERA_KEY_COLUMN in _header_cells(line):
        return Source(path, CALDERA_CSV)
    if path.endswith(".csv"):
        raise InputError(f"unknown CSV header {line[:80]!r}; {HEADER_HINT}", path, "row 1")
    return Source(path, MANIFESTS)


def detect_all(paths: list[str], warnings: list[str]) -> list[Source]:
    return [detect(p) for p in expand_paths(paths, warnings)]


def row_where(line: int) -> str:
    return f"row {line}"


def csv_table(path: str) -> tuple[dict[str, int], Iterator[tuple[int, list[str]]]]:
    """(column name -> index, iterator of (row number, cells)); rows are numbered as lines of the
    file (the header is row 1); blank lines are skipped, missing trailing cells are empty."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", path) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, [])
    except csv.Error as e:
        raise InputError(f"malformed CSV: {e}", path, "row 1") from None
    columns: dict[str, int] = {}
    for i, name in enumerate(c.strip() for c in header):
        if name in columns:
            raise InputError(f"column {name!r} appears twice in the header", path, "row 1")
        columns[name] = i
    return columns, _rows(reader, path, len(header))


def _rows(reader: Any, path: str, width: int) -> Iterator[tuple[int, list[str]]]:
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(f"malformed CSV: {e}", path, row_where(reader.line_num)) from None
        if not cells:
            continue
        if len(cells) > width:
            raise InputError(f"{len(cells)} cells, but the header has {width} columns",
                             path, row_where(reader.line_num))
        if len(cells) < width:
            cells += [""] * (width - len(cells))    # trailing empty cells may be left out
        yield reader.line_num, cells


def require_columns(columns: dict[str, int], required: tuple[str, ...], path: str) -> None:
    missing = [c for c in required if c not in columns]
    if missing:
        raise InputError(f"missing column {', '.join(map(repr, missing))}; the header has "
                         f"{', '.join(columns) or 'no columns'}", path, "row 1 (header)")


def parse_seconds(value: str, column: str) -> float:
    """A time in seconds: a finite number >= 0."""
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0:
        raise InputError(f"{column}: must be a number >= 0, got {value!r}")
    return v


def parse_optional_seconds(value: str, column: str) -> float | None:
    value = value.strip()
    return parse_seconds(value, column) if value else None


def parse_count(value: str, column: str, minimum: int = 0) -> int:
    """A whole number >= minimum ("8" or "8.0")."""
    try:
        v = int(value)
    except ValueError:
        try:
            f = float(value)
        except ValueError:
            f = math.nan
        if not f.is_integer():
            raise InputError(f"{column}: must be a whole number >= {minimum}, got {value!r}") from None
        v = int(f)
    if v < minimum:
        raise InputError(f"{column}: must be a whole number >= {minimum}, got {value!r}")
    return v


def annotation_seconds(annotations: dict[str, Any], key: str) -> float | None:
    """A seconds annotation (float >= 0) or None when absent."""
    if key not in annotations or annotations[key] is None:
        return None
    value = annotations[key]
    if isinstance(value, bool):
        raise InputError(f"metadata.annotations[{key}]: must be a number of seconds >= 0, got {value!r}")
    try:
        return parse_seconds(str(value).strip(), f"metadata.annotations[{key}]")
    except InputError:
        raise InputError(f"metadata.annotations[{key}]: must be a number of seconds >= 0, got {value!r}") from None
