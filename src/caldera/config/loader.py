"""Load a scheduler configuration file: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1),
YAML or JSON, decoded strictly as kube-scheduler does (unknown or duplicate fields are errors).

Every problem raises ConfigError with one line: "<file>: <field path>: <problem>; <what to do>".
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .decode import API_VERSION, KIND, decode_kube_config
from .defaults import default_config
from .types import SchedulerConfig

_REMOVED_VERSIONS = {
    "kubescheduler.config.k8s.io/v1alpha1", "kubescheduler.config.k8s.io/v1alpha2",
    "kubescheduler.config.k8s.io/v1beta1", "kubescheduler.config.k8s.io/v1beta2",
    "kubescheduler.config.k8s.io/v1beta3",
}


def load_kube_config(path: str | None, registry: Mapping[str, Callable[..., Any]]) -> SchedulerConfig:
    """None -> kube's default configuration; else the file, defaulted and validated."""
    if path is None:
        return default_config(registry)
    return decode_document(read_document(path), path, registry)


def decode_document(doc: object, path: str, registry: Mapping[str, Callable[..., Any]]) -> SchedulerConfig:
    """A parsed document that must be a KubeSchedulerConfiguration."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: (document): expected a mapping (a KubeSchedulerConfiguration), "
                          f"got {_kind_of(doc)}; write the file as 'apiVersion: {API_VERSION}' / 'kind: {KIND}' / ...")
    api = doc.get("apiVersion")
    if api is None:
        raise ConfigError(f"{path}: apiVersion: missing; set apiVersion: {API_VERSION} and kind: {KIND}")
    if api in _REMOVED_VERSIONS:
        raise ConfigError(f"{path}: apiVersion: {api} is no longer served by kube-scheduler; "
                          f"migrate the file to {API_VERSION}")
    if api != API_VERSION:
        raise ConfigError(f"{path}: apiVersion: unsupported value {api!r}; use {API_VERSION}")
    if doc.get("kind") != KIND:
        raise ConfigError(f"{path}: kind: expected {KIND}, got {doc.get('kind')!r}; set kind: {KIND}")
    return decode_kube_config(doc, path, registry)


def _kind_of(x: object) -> str:
    return "an empty document" if x is None else f"a {type(x).__name__}"


def read_document(path: str) -> object:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: (file): no such file; check the --config path") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: (file): is a directory; pass a KubeSchedulerConfiguration file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: (file): cannot read it ({e}); check the path and its permissions") from None
    if not text.strip():
        raise ConfigError(f"{path}: (document): the file is empty; write a KubeSchedulerConfiguration "
                          f"(apiVersion: {API_VERSION}, kind: {KIND})")
    if path.endswith(".json") or text.lstrip().startswith("{"):
        try:
            return json.loads(text, object_pairs_hook=_no_duplicate_pairs)
        except _DuplicateKey as e:
            raise ConfigError(f"{path}: {e.key}: duplicate field; keep one of them (the configuration is "
                              "decoded strictly)") from None
        except json.JSONDecodeError as e:
            if path.endswith(".json"):
                raise ConfigError(f"{path}: line {e.lineno}, column {e.colno}: malformed JSON: {e.msg}; "
                                  "fix the JSON syntax") from None
            # YAML flow mappings also start with '{': let the YAML parser decide
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(document)"
        problem = " ".join(str(e.problem or e.context or "invalid YAML").split())
        if problem.startswith("duplicate field"):
            raise ConfigError(f"{path}: {where}: {problem}; keep one of them (the configuration is "
                              "decoded strictly)") from None
        raise ConfigError(f"{path}: {where}: malformed YAML: {problem}; fix the YAML syntax") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: (document): malformed YAML: {' '.join(str(e).split())}; "
                          "fix the YAML syntax") from None


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicate_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key repeated in one mapping (kube's strict decoding does)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[str] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            if key_node.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate field {key_node.value!r}", key_node.start_mark)
            seen.add(key_node.value)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
