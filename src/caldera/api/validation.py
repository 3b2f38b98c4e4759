"""apimachinery's name validation (k8s.io/apimachinery/pkg/util/validation)."""
from __future__ import annotations

import re

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def is_qualified_name(value: str) -> bool:
    """IsQualifiedName: [DNS-subdomain prefix '/'] name (<= 63 chars)."""
    prefix, sep, name = value.rpartition("/")
    if sep:
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.fullmatch(name))
