"""What kube checks when it parses node selector terms (component-helpers' nodeaffinity).

A term kube cannot parse (invalid label key or value, non-integer Gt/Lt: labels.NewRequirement's
errors) never matches in a required selector, as kube's lazy-error selector; in preferred terms
it fails PreScore (the pod's) or the plugin args (addedAffinity) with kube's field errors.
Malformed structure (unknown operator, In without values, ...) is rejected by the parsers in
api.selectors, and bad matchFields here, as the API server would.
"""
from __future__ import annotations

from ...api.selectors import NodeSelectorTerm, requirement_errors

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def term_errors(term: NodeSelectorTerm, path: str) -> list[str]:
    """newNodeSelectorTerm's parse errors for the term at field path `path` (e.g. '[0]')."""
    errs: list[str] = []
    for j, r in enumerate(term.expressions):
        errs += requirement_errors(r.key, r.op, r.values, f"{path}.matchExpressions[{j}]")
    return errs


def term_parses(term: NodeSelectorTerm) -> bool:
    """False where kube's labels.NewRequirement rejects a matchExpressions requirement."""
    return not term_errors(term, "")


def check_fields(sel_terms, where: str, err) -> None:
    """matchFields on metadata.name take In/NotIn with exactly one value (API validation)."""
    for i, t in enumerate(sel_terms):
        for j, r in enumerate(t.fields):
            if r.op not in ("In", "NotIn") or len(r.values) != 1:
                raise err(f"{where}[{i}].matchFields[{j}]: a metadata.name requirement needs operator "
                          f"In or NotIn with exactly one value, got {r.op} with {len(r.values)} value(s)")
