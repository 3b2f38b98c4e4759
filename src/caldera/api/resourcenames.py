"""Classes of resource names, as kube's v1helper and scheduler util tell them apart."""
from __future__ import annotations

from functools import lru_cache

from .validation import is_qualified_name

# the resources kube-scheduler's scoring handles natively (besides scalar resources)
NATIVE_SCORED = ("cpu", "memory", "ephemeral-storage")


def is_prefixed_native(name: str) -> bool:
    """IsPrefixedNativeResource: a name in the *kubernetes.io/ domain."""
    return "kubernetes.io/" in name


def is_native(name: str) -> bool:
    """IsNativeResource: no domain, or a *kubernetes.io/ one."""
    return "/" not in name or is_prefixed_native(name)


@lru_cache(maxsize=4096)
def is_extended(name: str) -> bool:
    """IsExtendedResourceName: a domain-prefixed name outside *kubernetes.io, not requests.*,
    that stays a qualified name with the quota prefix 'requests.'."""
    if is_native(name) or name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


@lru_cache(maxsize=4096)
def is_scalar(name: str) -> bool:
    """schedutil.IsScalarResourceName: the names kube tracks besides cpu/memory/ephemeral-storage/pods."""
    return (is_extended(name) or name.startswith(("hugepages-", "attachable-volumes-"))
            or is_prefixed_native(name))
