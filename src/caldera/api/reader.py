"""Read manifest files (files, directories, stdin) into documents.

Accepts multi-document YAML, JSON, and `kind: List` wrappers, as `kubectl get -o yaml` prints
them. Every error names the file, the document index, and the problem.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _load_text(text: str, source: str) -> list[Any]:
    try:
        if source.endswith(".json") or text.lstrip().startswith(("{", "[")):
            try:
                data = json.loads(text)
                return data if isinstance(data, list) else [data]
            except json.JSONDecodeError:
                pass  # YAML is a superset; let the YAML parser produce the error message
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"malformed YAML{where}: {problem}", source) from None


def _flatten(docs: Iterable[object], source: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for i, d in enumerate(docs):
        if d is None:
            continue
        if not isinstance(d, dict):
            raise InputError(f"document {i}: expected a Kubernetes object (a mapping), got {type(d).__name__}", source)
        if d.get("kind") == "List" or (str(d.get("kind", "")).endswith("List") and isinstance(d.get("items"), list)):
            for j, item in enumerate(d.get("items") or []):
                if not isinstance(item, dict):
                    raise InputError(f"document {i} item {j}: expected a mapping", source)
                out.append((i, item))
        else:
            out.append((i, d))
    return out


def _sources(paths: list[str]) -> list[tuple[str, Callable[[], str]]]:
    out = []
    for p in paths:
        if p == "-":
            out.append(("<stdin>", sys.stdin.read))
            continue
        path = Path(p)
        if path.is_dir():
            files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
            out.extend((str(f), f.read_text) for f in files)
        elif path.is_file():
            out.append((str(path), path.read_text))
        else:
            raise InputError("no such file or directory", p)
    return out


def read_documents(paths: list[str]) -> list[tuple[str, int, dict[str, Any]]]:
    docs = []
    for source, read in _sources(paths):
        try:
            text = read()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read: {e}", source) from None
        for i, d in _flatten(_load_text(text, source), source):
            docs.append((source, i, d))
    return docs
