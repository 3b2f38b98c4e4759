"""apimachinery's name validation, written once, with kube's exact error strings.

The checks of k8s.io/apimachinery v0.35.4 (the version Caldera is tested against):
- label keys and values (pkg/api/validate/content/kube.go, which util/validation's
  IsQualifiedName and IsValidLabelValue alias): their length errors say "bytes";
- DNS-1123 labels and subdomains, DNS-1035 labels (pkg/util/validation/validation.go): their
  length errors say "characters" (util/validation's own MaxLenError);
- the field errors callers wrap them in (pkg/util/validation/field), the aggregate of
  several errors (pkg/util/errors) and AlreadyExists (pkg/api/errors);
- ObjectMeta on create (pkg/api/validation/objectmeta.go: name, namespace, labels, annotations);
- a quantity as kube prints it in messages (resource.Quantity.String).

Each `*_errors` function returns kube's list of messages, empty when the value is valid. Go
measures lengths in bytes (UTF-8) and anchors its regexps at the very end of the text, so
lengths here are UTF-8 lengths and patterns are matched with `fullmatch` (a Python `$` would
also accept a trailing newline).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

from ..errors import InputError
from .quantity import NANO, parse_nano

# ---- formats (the Go constants, verbatim) ----------------------------------------------------
_LABEL_KEY_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR_MSG: Final = ("must consist of alphanumeric characters, '-', '_' or '.', "
                             "and must start and end with an alphanumeric character")
_LABEL_KEY_MAX_LENGTH: Final = 63
_LABEL_VALUE_FMT: Final = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR_MSG: Final = ("a valid label must be an empty string or consist of alphanumeric characters, "
                               "'-', '_' or '.', and must start and end with an alphanumeric character")
LABEL_VALUE_MAX_LENGTH: Final = 63

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_ERR_MSG: Final = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                                 "or '-', and must start and end with an alphanumeric character")
DNS1123_LABEL_MAX_LENGTH: Final = 63
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR_MSG: Final = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                     "characters, '-' or '.', and must start and end with an alphanumeric character")
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_ERR_MSG: Final = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                                 "start with an alphabetic character, and end with an alphanumeric character")
DNS1035_LABEL_MAX_LENGTH: Final = 63

_LABEL_KEY_RE: Final = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE: Final = re.compile(_DNS1035_LABEL_FMT)


# ---- message builders ---------------------------------------------------------------------------
def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """RegexError (both copies agree): note kube's two spaces before each 'or'."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def _max_len_bytes(length: int) -> str:
    """content.MaxLenError."""
    return f"must be no more than {length} bytes"


def _max_len_chars(length: int) -> str:
    """validation.MaxLenError."""
    return f"must be no more than {length} characters"


def empty_error() -> str:
    """EmptyError."""
    return "must be non-empty"


def _go_len(value: str) -> int:
    """Go's len(string): the UTF-8 length."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


# ---- label keys and values (pkg/api/validate/content) --------------------------------------------
def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName (= content.IsLabelKey): an optional DNS-subdomain prefix and '/', then a
    name of at most 63 bytes."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in _dns1123_subdomain(prefix, _max_len_bytes))
    else:
        return ["a valid label key " + regex_error(_LABEL_KEY_ERR_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part " + empty_error())
    elif _go_len(name) > _LABEL_KEY_MAX_LENGTH:
        errs.append("name part " + _max_len_bytes(_LABEL_KEY_MAX_LENGTH))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append("name part " + regex_error(_LABEL_KEY_ERR_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_qualified_name(value: str) -> bool:
    """True where IsQualifiedName reports no error."""
    return not qualified_name_errors(value)


def label_value_errors(value: str) -> list[str]:
    """IsValidLabelValue (= content.IsLabelValue): empty, or at most 63 bytes of the label syntax."""
    errs: list[str] = []
    if _go_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len_bytes(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_ERR_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


# ---- DNS names (pkg/util/validation) --------------------------------------------------------------
def dns1123_label_errors(value: str) -> list[str]:
    """IsDNS1123Label."""
    errs: list[str] = []
    if _go_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_chars(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")      # a valid subdomain: it can only be the dots
        else:
            errs.append(regex_error(_DNS1123_LABEL_ERR_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def _dns1123_subdomain(value: str, max_len_error: Callable[[int], str]) -> list[str]:
    errs: list[str] = []
    if _go_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """IsDNS1123Subdomain (util/validation's: its length error says "characters"; the copy a
    label key's prefix is checked with, content.IsDNS1123Subdomain, says "bytes")."""
    return _dns1123_subdomain(value, _max_len_chars)


def dns1035_label_errors(value: str) -> list[str]:
    """IsDNS1035Label."""
    errs: list[str] = []
    if _go_len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(_max_len_chars(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_ERR_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


# ---- field errors and aggregates (pkg/util/validation/field, pkg/util/errors) --------------------
_GO_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                      "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(s: str) -> str:
    """fmt's %q of a string (strconv.Quote)."""
    out = ['"']
    for c in s:
        esc = _GO_ESCAPES.get(c)
        if esc is not None:
            out.append(esc)
        elif c.isprintable():
            out.append(c)
        else:
            o = ord(c)
            out.append(f"\\x{o:02x}" if o < 0x80 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


def field_invalid(path: str, value: str | int, detail: str, *, quote: bool = True) -> str:
    """field.Invalid(path, value, detail).Error(): a string value quoted (%q), an integer as is;
    quote=False for a value kube prints through its String() method (a resource.Quantity)."""
    v = go_quote(value) if isinstance(value, str) and quote else str(value)
    return f"{path}: Invalid value: {v}: {detail}"


def field_required(path: str, detail: str = "") -> str:
    """field.Required(path, detail).Error()."""
    return f"{path}: Required value: {detail}" if detail else f"{path}: Required value"


def field_forbidden(path: str, detail: str) -> str:
    """field.Forbidden(path, detail).Error()."""
    return f"{path}: Forbidden: {detail}"


def field_not_supported(path: str, value: str, supported: Sequence[str]) -> str:
    """field.NotSupported(path, value, supported).Error() for a string value."""
    return f"{path}: Unsupported value: {go_quote(value)}: supported values: " + ", ".join(map(go_quote, supported))


def field_duplicate(path: str, value: str) -> str:
    """field.Duplicate(path, value).Error() for a string value."""
    return f"{path}: Duplicate value: {go_quote(value)}"


def field_too_long(path: str, max_bytes: int) -> str:
    """field.TooLong(path, value, max).Error() (the value is never shown)."""
    return f"{path}: Too long: must have at most {max_bytes} bytes"


def already_exists(resource: str, name: str) -> str:
    """apierrors.NewAlreadyExists(resource, name).Error(): a second object of one kind and name."""
    return f'{resource} "{name}" already exists'


def aggregate(msgs: list[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message as is, several deduplicated in '[a, b]'
    (no messages: "", where kube has no error at all)."""
    if len(msgs) <= 1:
        return msgs[0] if msgs else ""
    seen = list(dict.fromkeys(msgs))
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


# ---- object metadata (pkg/api/validation objectmeta.go, meta/v1/validation) -----------------------
TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * (1 << 10)


@lru_cache(maxsize=8192)
def _label_errors(key: str, value: str, path: str) -> tuple[str, ...]:
    return (tuple(field_invalid(path, key, m) for m in qualified_name_errors(key))
            + tuple(field_invalid(path, value, m) for m in label_value_errors(value)))


def labels_errors(labels: Mapping[str, str], path: str) -> list[str]:
    """ValidateLabels(labels, path): every key a qualified name, every value a label value."""
    errs: list[str] = []
    for k, v in labels.items():
        errs.extend(_label_errors(k, v, path))
    return errs


@lru_cache(maxsize=8192)
def _annotation_key_errors(key: str, path: str) -> tuple[str, ...]:
    # "the rule is QualifiedName except that case doesn't matter"
    return tuple(field_invalid(path, key, m) for m in qualified_name_errors(key.lower()))


def annotations_errors(annotations: Mapping[str, str], path: str) -> list[str]:
    """ValidateAnnotations(annotations, path): qualified-name keys (any case), 256 KiB in all."""
    errs: list[str] = []
    size = 0
    for k, v in annotations.items():
        errs.extend(_annotation_key_errors(k, path))
        size += _go_len(k) + _go_len(v)
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(field_too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


@lru_cache(maxsize=1024)
def _namespace_errors(namespace: str) -> tuple[str, ...]:
    """metadata.namespace's errors (a big input has a few namespaces and many objects)."""
    return tuple(field_invalid("metadata.namespace", namespace, m) for m in dns1123_label_errors(namespace))


def object_meta_errors(name: str, namespace: str | None, labels: Mapping[str, str],
                       annotations: Mapping[str, str]) -> list[str]:
    """ValidateObjectMeta on create with NameIsDNSSubdomain (the rule of Pods, Nodes,
    PriorityClasses, PodDisruptionBudgets): the name a DNS-1123 subdomain, the namespace (None for
    a cluster-scoped object) a DNS-1123 label, then labels and annotations. The name is present
    (read_meta has required it)."""
    errs = [field_invalid("metadata.name", name, m) for m in dns1123_subdomain_errors(name)]
    if namespace is not None:
        errs += _namespace_errors(namespace)
    if labels:
        errs += labels_errors(labels, "metadata.labels")
    if annotations:
        errs += annotations_errors(annotations, "metadata.annotations")
    return errs


# ---- quantities as kube prints them (resource.Quantity.String) ------------------------------------
_QUANTITY_SUFFIX = re.compile(r"[+-]?[0-9]*(?:\.[0-9]*)?(.*)")
_BINARY_SUFFIXES: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES: Final = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def format_quantity(value: object) -> str:
    """Quantity.String() of a manifest quantity: the canonical form in the format its suffix
    chose (CanonicalizeBytes). DecimalSI and DecimalExponent take the mantissa with its trailing
    zeros moved into a base-10 exponent, lowered to a multiple of 3 ("2000m" is "2", "1000" is
    "1k", "1.5e3" is "1500"); BinarySI takes the largest power of 1024 that divides the value
    ("1024Mi" is "1Gi"), or falls back to DecimalSI when the value is below 1024 or fractional.
    `value` must parse (callers format quantities they have read)."""
    nano = parse_nano(value)
    if nano == 0:
        return "0"
    text = repr(value) if isinstance(value, float) else str(value).strip()
    m = _QUANTITY_SUFFIX.fullmatch(text)
    suffix = m.group(1) if m else ""
    sign = "-" if nano < 0 else ""
    a = abs(nano)
    if suffix in _BINARY_SUFFIXES[1:] and a >= 1024 * NANO and a % NANO == 0:
        v, exp = a // NANO, 0
        while v % 1024 == 0:
            v //= 1024
            exp += 1
        return f"{sign}{v}{_BINARY_SUFFIXES[exp]}"
    exp = -9
    while a % 10 == 0:
        a //= 10
        exp += 1
    r = exp % 3
    a, exp = a * 10 ** r, exp - r
    exponent_form = suffix[:1] in ("e", "E")
    if exponent_form or exp not in _DECIMAL_SUFFIXES:
        return f"{sign}{a}e{exp}" if exp else f"{sign}{a}"
    return f"{sign}{a}{_DECIMAL_SUFFIXES[exp]}"


def optional_mapping(v: object, where: str) -> dict[str, Any]:
    """A field that must be a mapping when given ({} when absent); else a one-line InputError."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"{where}: must be a mapping")
    return v
