"""NodeAffinityArgs: addedAffinity, parsed and checked as ValidateNodeAffinityArgs does."""
from __future__ import annotations

from ...api.selectors import NodeSelector, NodeSelectorTerm, parse_node_selector, parse_node_selector_term
from ...api.validation import aggregate
from ...errors import ConfigError, InputError
from .terms import PREFERRED, REQUIRED, check_fields, term_errors

_BASE = "NodeAffinityArgs.addedAffinity"


def parse_args(args: dict) -> tuple[NodeSelector | None, tuple[tuple[int, NodeSelectorTerm], ...]]:
    """(added required selector or None, added preferred (weight, term) pairs)."""
    unknown = set(args) - {"addedAffinity"}
    if unknown:
        raise ConfigError(f"NodeAffinityArgs: unknown field(s) {sorted(unknown)}; the only field is addedAffinity")
    added = args.get("addedAffinity")
    if added is None:
        return None, ()
    if not isinstance(added, dict):
        raise ConfigError(f"{_BASE}: must be a mapping with {REQUIRED} and/or {PREFERRED}")
    unknown = set(added) - {REQUIRED, PREFERRED}
    if unknown:
        raise ConfigError(f"{_BASE}: unknown field(s) {sorted(unknown)}; use {REQUIRED} and/or {PREFERRED}")
    required: NodeSelector | None = None
    errs: list[str] = []              # kube's parse errors of all terms, reported together
    try:
        if added.get(REQUIRED) is not None:
            where = f"{_BASE}.{REQUIRED}"
            required = parse_node_selector(added[REQUIRED], where)
            check_fields(required.terms, f"{where}.nodeSelectorTerms", ConfigError)
            for i, t in enumerate(required.terms):
                errs += term_errors(t, f"{where}.nodeSelectorTerms[{i}]")
        preferred = []
        raw = added.get(PREFERRED)
        if raw is not None:
            where = f"{_BASE}.{PREFERRED}"
            if not isinstance(raw, list):
                raise ConfigError(f"{where}: must be a list of {{weight, preference}}")
            for i, it in enumerate(raw):
                if not isinstance(it, dict):
                    raise ConfigError(f"{where}[{i}]: must be a mapping with weight and preference")
                w = it.get("weight", 0)
                if not isinstance(w, int) or isinstance(w, bool):
                    raise ConfigError(f"{where}[{i}].weight: must be an integer, got {w!r}")
                term = parse_node_selector_term(it.get("preference") or {}, f"{where}[{i}].preference")
                if w == 0 or (not term.expressions and not term.fields):
                    continue                           # kube ignores these terms
                check_fields([term], f"{where}[{i}].preference", ConfigError)
                errs += term_errors(term, f"{where}[{i}]")
                preferred.append((w, term))
    except InputError as e:
        raise ConfigError(str(e)) from None
    if errs:
        raise ConfigError(aggregate(errs))
    return required, tuple(preferred)
