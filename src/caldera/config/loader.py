"""Load a scheduler configuration file: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1),
YAML or JSON, decoded strictly as kube-scheduler does (unknown or duplicate fields are errors).
The file may also be a ConfigMap holding it, as deployed, alone or among other objects (a
multi-document file, a List): `select_configuration` finds it, and errors inside it are
reported under `<file> (data["<key>"])`.

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
    """None -> kube's default configuration; else the file (or the ConfigMap in it that holds
    one), defaulted and validated."""
    if path is None:
        return default_config(registry)
    doc, source = select_configuration(read_config_documents(path), path, accepts=is_kube_config,
                                       expected=f"a {KIND}")
    return decode_document(doc, source, registry)


def is_kube_config(doc: object) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == KIND


def decode_document(doc: object, path: str, registry: Mapping[str, Callable[..., Any]]) -> SchedulerConfig:
    """A parsed document that must be a KubeSchedulerConfiguration."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: (document): expected a mapping (a KubeSchedulerConfiguration), "
                          f"got {_kind_of(doc)}; write the file as 'apiVersion: {API_VERSION}' / 'kind: {KIND}' / ...")
    api = doc.get("apiVersion")
    if api is None:
        raise ConfigError(f"{path}: apiVersion: missing; set apiVersion: {API_VERSION} and kind: {KIND}")
    if not isinstance(api, str):
        raise ConfigError(f"{path}: apiVersion: must be a string, got {api!r}; set apiVersion: {API_VERSION}")
    if not isinstance(api, str):
        raise ConfigError(f"{path}: apiVersion: must be a string, got {api!r}; set apiVersion: {API_VERSION}")
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


def read_config_documents(path: str) -> list[object]:
    """Every document of a configuration file: one, or several in a multi-document YAML file
    (such as a rendered Helm chart); empty documents are dropped."""
    return [d for d in parse_text(_read_text(path), path, json_hint=path.endswith(".json"), every=True)
            if d is not None]


def _read_text(path: str) -> str:
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
    return text


# No scheduler configuration comes near this; a document nested deeper is not one (and would
# exhaust Python's recursion limit in the parser or the decoder).
MAX_DEPTH = 100


def _too_deep(doc: object) -> bool:
    stack: list[tuple[object, int]] = [(doc, 1)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, dict):
            children: Any = x.values()
        elif isinstance(x, list):
            children = x
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((c, depth + 1) for c in children)
    return False


def _deep_error(source: str) -> ConfigError:
    return ConfigError(f"{source}: (document): nested more than {MAX_DEPTH} levels deep; a scheduler "
                       "configuration never is, check that this is the right file")


def parse_text(text: str, source: str, *, json_hint: bool = False, every: bool = False) -> Any:
    """Parse a configuration (JSON when `json_hint` or it starts with '{', else YAML), strictly:
    duplicate keys, bad syntax and documents nested more than MAX_DEPTH levels are ConfigErrors
    naming `source`. `every`: a list of every YAML document (a JSON text is one)."""
    try:
        docs = _parse(text, source, json_hint, every)
    except RecursionError:
        raise _deep_error(source) from None
    for d in (docs if every else [docs]):
        if _too_deep(d):
            raise _deep_error(source)
    return docs


def _parse(text: str, path: str, json_hint: bool, every: bool) -> Any:
    if json_hint or text.lstrip().startswith("{"):
        try:
            doc = json.loads(text, object_pairs_hook=_no_duplicate_pairs)
            return [doc] if every else doc
        except _DuplicateKey as e:
            raise ConfigError(f"{path}: {e.key}: duplicate field; keep one of them (the configuration is "
                              "decoded strictly)") from None
        except json.JSONDecodeError as e:
            if json_hint:
                raise ConfigError(f"{path}: line {e.lineno}, column {e.colno}: malformed JSON: {e.msg}; "
                                  "fix the JSON syntax") from None
            # YAML flow mappings also start with '{': let the YAML parser decide
    try:
        if every:
            return list(yaml.load_all(text, Loader=_StrictLoader))
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


# ---- a configuration inside a ConfigMap (as deployed), a List or a multi-document file -------------
def _is_configmap(doc: object) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "ConfigMap" and doc.get("apiVersion", "v1") == "v1"


def _cm_name(cm: dict[str, Any]) -> str:
    meta = cm.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"ConfigMap {name}" if name else "the ConfigMap"


def select_configuration(docs: list[object], path: str, *, accepts: Callable[[object], bool],
                         expected: str, preferred_key: str | None = None) -> tuple[object, str]:
    """The configuration among the documents of a --config file, and the name to report errors
    under: the document itself when it is the only one; else the one ConfigMap holding a
    configuration (`data[preferred_key]`, or the one data value that `accepts`, as deployed:
    errors then name `path (data["key"])`); else the one document that `accepts`. Several
    candidates, or none, are one-line errors."""
    items: list[object] = []
    for d in docs:      # a `kind: List` (kubectl get -o yaml) stands for its items
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), list):
            items.extend(d["items"])
        else:
            items.append(d)
    if not items:
        return None, path
    cms: list[dict[str, Any]] = [d for d in items if isinstance(d, dict) and _is_configmap(d)]
    if len(cms) == 1:
        return _from_configmap(cms[0], path, accepts, expected, preferred_key)
    if len(items) == 1:
        return items[0], path
    if cms:
        holding = [c for c in cms if _configmap_key(c, path, accepts, preferred_key, strict=False)]
        if len(holding) == 1:
            return _from_configmap(holding[0], path, accepts, expected, preferred_key)
        names = ", ".join(_cm_name(c) for c in (holding or cms))
        if holding:
            raise ConfigError(f"{path}: (document): several ConfigMaps hold a scheduler configuration ({names}); "
                              "--config takes one, put it in a file of its own")
        raise ConfigError(f"{path}: (document): none of its ConfigMaps ({names}) holds {expected}"
                          + (f" (expected data[\"{preferred_key}\"] or a key whose value is one)" if preferred_key
                             else ""))
    candidates = [d for d in items if accepts(d)]
    if len(candidates) == 1:
        return candidates[0], path
    raise ConfigError(f"{path}: (document): {len(items)} documents, {len(candidates) or 'none'} of them "
                      f"{expected}; --config takes one (or a ConfigMap holding one)")


def _label(path: str, key: str) -> str:
    return f'{path} (data["{key}"])'


def _configmap_key(cm: dict[str, Any], path: str, accepts: Callable[[object], bool],
                   preferred_key: str | None, *, strict: bool, expected: str = "") -> str | None:
    """The data key that holds the configuration (None when not `strict` and none does)."""
    data = cm.get("data")
    where = f"{path}: {_cm_name(cm)}: data"
    if not isinstance(data, dict) or not data:
        if not strict:
            return None
        raise ConfigError(f"{where}: {'missing' if data is None else 'empty' if not data else 'not a mapping'}; "
                          f"expected {_expected_keys(expected, preferred_key)}")
    if preferred_key is not None and preferred_key in data:
        return preferred_key
    if len(data) == 1 and strict:       # the only value: its errors are the user's to see
        return str(next(iter(data)))
    found = []
    for k, v in data.items():
        if not isinstance(v, str):
            continue
        try:
            doc = parse_text(v, _label(path, str(k)), json_hint=str(k).endswith(".json"))
        except ConfigError:
            continue
        if accepts(doc):
            found.append(str(k))
    if len(found) == 1:
        return found[0]
    if not strict:
        return None
    if found:
        raise ConfigError(f"{where}: several keys hold a scheduler configuration "
                          f"({', '.join(found)}); keep one of them in the ConfigMap given to --config")
    raise ConfigError(f"{where}: no key holds {expected} (keys: {', '.join(map(str, data))}); "
                      f"expected {_expected_keys(expected, preferred_key)}")


def _expected_keys(expected: str, preferred_key: str | None) -> str:
    if preferred_key:
        return f'data["{preferred_key}"] or one key whose value is {expected}'
    return f"one key whose value is {expected}"


def _from_configmap(cm: dict[str, Any], path: str, accepts: Callable[[object], bool], expected: str,
                    preferred_key: str | None) -> tuple[object, str]:
    key = _configmap_key(cm, path, accepts, preferred_key, strict=True, expected=expected)
    assert key is not None
    value = cm["data"][key]
    label = _label(path, key)
    if not isinstance(value, str):
        raise ConfigError(f"{label}: expected the configuration as a string (a YAML block: '{key}: |'), "
                          f"got a {type(value).__name__}")
    if not value.strip():
        raise ConfigError(f"{label}: (document): empty; write {expected} there")
    return parse_text(value, label, json_hint=key.endswith(".json")), label


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
