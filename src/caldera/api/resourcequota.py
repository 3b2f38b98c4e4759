"""ResourceQuota (v1) as Volcano's scheduler cache reads it.

Volcano keeps, per namespace, the *status* of every ResourceQuota (NamespaceCollection.Update:
`QuotaStatus[name] = quota.Status`): `status.hard` (the limits the quota controller copied from
`spec.hard`) and `status.used` (the usage it computed). Scopes and scope selectors are not
honoured (Volcano's resourcequota plugin: "resourceQuota scope not supported").

A manifest often has no status (the controller has not processed it): then `spec.hard` stands
for `status.hard` (what the controller would copy) and a missing `status.used` is nothing used;
both are reported as warnings by the loader (`assumed`).

Quantities are kept exactly (nano-units) with their manifest text, so messages print them as
Quantity.String() does.
"""
from __future__ import annotations

from typing import Any

from ..errors import InputError
from .objects import read_namespaced_meta
from .podresources import parse_resources_nano
from .validation import format_quantity

ResourceList = dict[str, int]      # resource name -> nano-units


def _raw_list(rl: object, where: str) -> dict[str, str]:
    if rl is None:
        return {}
    if not isinstance(rl, dict):
        raise InputError(f"{where}: must be a mapping of resource name to quantity")
    return {str(k): v for k, v in rl.items()}


class ResourceQuota:
    __slots__ = ("assumed", "hard", "key", "name", "namespace", "raw", "scoped", "text", "used")

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        _, self.name, self.namespace = read_namespaced_meta(raw, "ResourceQuota")
        self.key = f"{self.namespace}/{self.name}"
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        if not isinstance(spec, dict) or not isinstance(status, dict):
            raise InputError("spec/status: must be mappings")
        spec_hard = parse_resources_nano(spec.get("hard"), "spec.hard")
        self.scoped = bool(spec.get("scopes") or spec.get("scopeSelector"))
        self.assumed: list[str] = []         # what stood in for a missing status
        # the text of each quantity, for messages: (hard | used, name) -> manifest value
        self.text: dict[tuple[str, str], object] = {}
        if "hard" in status:
            self.hard: ResourceList = parse_resources_nano(status.get("hard"), "status.hard")
            hard_raw = _raw_list(status.get("hard"), "status.hard")
        else:
            self.hard = spec_hard
            hard_raw = _raw_list(spec.get("hard"), "spec.hard")
            self.assumed.append("no status.hard; spec.hard used (the quota controller copies it)")
        if "used" in status:
            self.used: ResourceList = parse_resources_nano(status.get("used"), "status.used")
            used_raw = _raw_list(status.get("used"), "status.used")
        else:
            self.used = {}
            used_raw = {}
            self.assumed.append("no status.used; nothing used assumed (the quota controller computes it)")
        for k, v in hard_raw.items():
            self.text[("hard", k)] = v
        for k, v in used_raw.items():
            self.text[("used", k)] = v

    def quantity(self, which: str, name: str) -> str:
        """status.hard / status.used of `name` as Quantity.String() prints it."""
        return format_quantity(self.text.get((which, name), "0"))

    def __repr__(self) -> str:
        return f"ResourceQuota({self.key})"
