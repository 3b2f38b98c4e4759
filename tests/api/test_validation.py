"""apimachinery's name validation (v0.35.4): the valid/invalid tables of
pkg/util/validation/validation_test.go and pkg/api/validate/content/{kube,dns}_test.go, and the
exact messages kube's own tests pin (metav1 validation_test.go, the scheduler's
node_affinity_test.go)."""
from __future__ import annotations

import pytest

from caldera.api.selectors import node_affinity_errors, requirement_errors
from caldera.api.validation import (
    aggregate,
    already_exists,
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    format_quantity,
    go_quote,
    is_qualified_name,
    label_value_errors,
    object_meta_errors,
    qualified_name_errors,
)
from caldera.errors import InputError

# ---- TestIsDNS1123Label ---------------------------------------------------------------------------
DNS1123_LABEL_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2",
                      "a" * 63]
DNS1123_LABEL_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A",
                     "-", "a-", "-a", "1-", "-1",
                     "_", "a_", "_a", "a_b", "1_", "_1", "1_2",
                     ".", "a.", ".a", "a.b", "1.", ".1", "1.2",
                     " ", "a ", " a", "a b", "1 ", " 1", "1 2",
                     "a" * 64]

# ---- TestIsDNS1123Subdomain -----------------------------------------------------------------------
DNS1123_SUBDOMAIN_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b",
                          "0", "01", "012", "1a", "1-a", "1--a--b--2",
                          "a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a",
                          "a.1", "ab.1", "abc.1", "a1.1", "a-1.1", "a--1--2--b.1",
                          "0.a", "01.a", "012.a", "1a.a", "1-a.a", "1--a--b--2",
                          "0.1", "01.1", "012.1", "1a.1", "1-a.1", "1--a--b--2.1",
                          "a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55",
                          "a" * 253]
DNS1123_SUBDOMAIN_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A",
                         "-", "a-", "-a", "1-", "-1",
                         "_", "a_", "_a", "a_b", "1_", "_1", "1_2",
                         ".", "a.", ".a", "a..b", "1.", ".1", "1..2",
                         " ", "a ", " a", "a b", "1 ", " 1", "1 2",
                         "A.a", "aB.a", "ab.A", "A1.a", "a1.A",
                         "A.1", "aB.1", "A1.1", "1A.1",
                         "0.A", "01.A", "012.A", "1A.a", "1a.A",
                         "A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e", "aa.bB.cc.dd.ee",
                         "a@b", "a,b", "a_b", "a;b",
                         "a:b", "a%b", "a?b", "a$b",
                         "a" * 254]

# ---- TestIsDNS1035Label ---------------------------------------------------------------------------
DNS1035_LABEL_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "a" * 63]
DNS1035_LABEL_BAD = ["0", "01", "012", "1a", "1-a", "1--a--b--2",
                     "", "A", "ABC", "aBc", "A1", "A-1", "1-A",
                     "-", "a-", "-a", "1-", "-1",
                     "_", "a_", "_a", "a_b", "1_", "_1", "1_2",
                     ".", "a.", ".a", "a.b", "1.", ".1", "1.2",
                     " ", "a ", " a", "a b", "1 ", " 1", "1 2",
                     "a" * 64]

# ---- TestIsQualifiedName / TestIsLabelKey -----------------------------------------------------------
QUALIFIED_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple",
                  "now-with-dashes/simple", "now-with-dashes/now-with-dashes", "now.with.dots/simple",
                  "now-with.dashes-and.dots/simple", "1-num.2-num/3-num", "1234/5678", "1.2.3.4/5678",
                  "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123", "requests.storage-foo",
                  "a" * 63, "a" * 253 + "/" + "b" * 63]
QUALIFIED_BAD = ["nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-", "only/one/slash",
                 "Example.com/abc", "example_com/abc", "example.com/", "/simple", "a" * 64, "a" * 254 + "/abc"]

# ---- TestIsValidLabelValue / TestIsLabelValue ---------------------------------------------------------
LABEL_VALUE_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""]
LABEL_VALUE_BAD = ["nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad",
                   "-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot.", "a" * 64]

TABLES = [
    (dns1123_label_errors, DNS1123_LABEL_GOOD, DNS1123_LABEL_BAD),
    (dns1123_subdomain_errors, DNS1123_SUBDOMAIN_GOOD, DNS1123_SUBDOMAIN_BAD),
    (dns1035_label_errors, DNS1035_LABEL_GOOD, DNS1035_LABEL_BAD),
    (qualified_name_errors, QUALIFIED_GOOD, QUALIFIED_BAD),
    (label_value_errors, LABEL_VALUE_GOOD, LABEL_VALUE_BAD),
]
GOOD = [(f, v) for f, good, _ in TABLES for v in good]
BAD = [(f, v) for f, _, bad in TABLES for v in bad]


@pytest.mark.parametrize(("fn", "value"), GOOD, ids=[f"{f.__name__}-{v[:20]!r}" for f, v in GOOD])
def test_valid(fn, value):
    assert fn(value) == []


@pytest.mark.parametrize(("fn", "value"), BAD, ids=[f"{f.__name__}-{v[:20]!r}" for f, v in BAD])
def test_invalid(fn, value):
    assert fn(value)


def test_is_qualified_name_predicate():
    assert all(is_qualified_name(v) for v in QUALIFIED_GOOD)
    assert not any(is_qualified_name(v) for v in QUALIFIED_BAD)


def test_go_anchors_at_end_of_text():
    """Go's `$` does not match before a trailing newline as Python's does."""
    for fn in (dns1123_label_errors, dns1123_subdomain_errors, dns1035_label_errors, qualified_name_errors,
               label_value_errors):
        assert fn("abc\n")


# ---- exact messages ---------------------------------------------------------------------------------
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_KEY = ("a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
             "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
             "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
             "'/' (e.g. 'example.com/MyName')")
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
         "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
           "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
           "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
               "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
               "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")

MESSAGES = [
    (qualified_name_errors, ":invalid", [NAME_PART]),
    (qualified_name_errors, "only/one/slash", [LABEL_KEY]),
    (qualified_name_errors, "example.com/", ["name part must be non-empty", NAME_PART]),
    (qualified_name_errors, "/simple", ["prefix part must be non-empty"]),
    (qualified_name_errors, "Example.com/abc", ["prefix part " + SUBDOMAIN]),
    (qualified_name_errors, "a" * 254 + "/abc", ["prefix part must be no more than 253 bytes"]),
    (qualified_name_errors, "A" * 254 + "/abc",
     ["prefix part must be no more than 253 bytes", "prefix part " + SUBDOMAIN]),
    (qualified_name_errors, "a" * 64, ["name part must be no more than 63 bytes"]),
    (qualified_name_errors, "a" * 64 + "-", ["name part must be no more than 63 bytes", NAME_PART]),
    (qualified_name_errors, "ā" * 32, ["name part must be no more than 63 bytes", NAME_PART]),   # Go counts bytes
    (label_value_errors, "a" * 64, ["must be no more than 63 bytes"]),
    (label_value_errors, "bad,value", [LABEL_VALUE]),
    (dns1123_label_errors, "a.b", ["must not contain dots"]),
    (dns1123_label_errors, "PS", [LABEL]),
    (dns1123_label_errors, "a" * 64, ["must be no more than 63 characters"]),
    (dns1123_label_errors, "a" * 30 + "." + "b" * 33, ["must be no more than 63 characters", "must not contain dots"]),
    (dns1123_subdomain_errors, "a" * 254, ["must be no more than 253 characters"]),
    (dns1123_subdomain_errors, "A", [SUBDOMAIN]),
    (dns1035_label_errors, "1a", [DNS1035]),
]


@pytest.mark.parametrize(("fn", "value", "want"), MESSAGES, ids=[f"{f.__name__}-{v[:20]!r}" for f, v, _ in MESSAGES])
def test_messages(fn, value, want):
    assert fn(value) == want


def test_metav1_validation_needle():
    """TestValidateConditions' needle: field.Invalid wrapping IsQualifiedName's message."""
    (msg,) = qualified_name_errors(":invalid")
    assert field_invalid("status.conditions[0].type", ":invalid", msg) == (
        "status.conditions[0].type: Invalid value: \":invalid\": name part must consist of alphanumeric characters, "
        "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def test_new_requirement_errors():
    """labels.NewRequirement's field errors, with and without a path (the scheduler's
    node_affinity_test.go: 'Invalid key in preferred affinity')."""
    assert requirement_errors("invalid key", "In", ("bar",), "[0].matchExpressions[0]") == [
        '[0].matchExpressions[0].key: Invalid value: "invalid key": ' + NAME_PART]
    assert requirement_errors("k", "In", ("{{.bad-value.}}",)) == [
        'values[0][k]: Invalid value: "{{.bad-value.}}": ' + LABEL_VALUE]
    assert requirement_errors("k", "Gt", ("1_0",), "p") == [
        "p.values[0]: Invalid value: \"1_0\": for 'Gt', 'Lt' operators, the value must be an integer"]
    assert requirement_errors("a b", "Gt", ("x y",)) == [
        'key: Invalid value: "a b": ' + NAME_PART,
        "values[0]: Invalid value: \"x y\": for 'Gt', 'Lt' operators, the value must be an integer",
        'values[0][a b]: Invalid value: "x y": ' + LABEL_VALUE]
    assert requirement_errors("k", "Lt", ("-5",), "p") == ['p.values[0][k]: Invalid value: "-5": ' + LABEL_VALUE]
    assert requirement_errors("ok/key", "Exists", ()) == []


def test_go_quote_and_aggregate():
    assert go_quote('a"b\\c\n\x01é\u2028') == '"a\\"b\\\\c\\n\\x01é\\u2028"'
    assert aggregate(["x"]) == "x"
    assert aggregate(["x", "x"]) == "x"
    assert aggregate(["x", "y", "x"]) == "[x, y]"


# ---- Quantity.String (apimachinery resource/quantity_test.go canonical forms) -----------------------
@pytest.mark.parametrize(("value", "want"), [
    ("0", "0"), ("0Mi", "0"), ("2", "2"), ("2000m", "2"), ("500m", "500m"), ("0.5", "500m"), (0.5, "500m"),
    (3, "3"), ("1000", "1k"), ("1001", "1001"), ("1.5", "1500m"), ("100n", "100n"), ("1u", "1u"),
    ("1Ki", "1Ki"), ("1024", "1024"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("1.5Gi", "1536Mi"),
    ("0.5Gi", "512Mi"), ("512Ki", "512Ki"), ("0.5Ki", "512"), ("1.1Ki", "1126400m"),
    ("1e3", "1e3"), ("1.5e3", "1500"), ("1E6", "1e6"), ("12e6", "12e6"), ("-1", "-1"), ("-1024Mi", "-1Gi"),
    ("5M", "5M"), ("5000k", "5M"), ("1G", "1G"),
])
def test_format_quantity(value, want):
    assert format_quantity(value) == want


def test_field_errors():
    """field.Error's Error() for each type the validation uses (pkg/util/validation/field)."""
    assert field_required("spec.containers") == "spec.containers: Required value"
    assert field_required("a.values", "must be x") == "a.values: Required value: must be x"
    assert field_forbidden("value", "no") == "value: Forbidden: no"
    assert field_invalid("w", 0, "must be in the range 1-100") == "w: Invalid value: 0: must be in the range 1-100"
    assert field_invalid("q", "500m", "must be an integer", quote=False) == "q: Invalid value: 500m: must be an integer"
    assert field_not_supported("p", "X", ("A", "B")) == 'p: Unsupported value: "X": supported values: "A", "B"'
    assert field_duplicate("g[1]", "a") == 'g[1]: Duplicate value: "a"'
    assert already_exists("pods", "x") == 'pods "x" already exists'


def test_object_meta_errors():
    assert object_meta_errors("ok", "default", {"a": "b"}, {"Example.com/Key": "v"}) == []
    errs = object_meta_errors("a" * 254, "x.y", {"k": "-v"}, {"-a": ""})
    assert [e.split(": Invalid value")[0] for e in errs] == [
        "metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations"]
    assert errs[0].endswith("must be no more than 253 characters")
    assert errs[1].endswith("must not contain dots")
    big = {"a": "x" * (256 * 1024)}
    assert object_meta_errors("n", None, {}, big) == ["metadata.annotations: Too long: must have at most 262144 bytes"]


def test_node_affinity_errors():
    """validateNodeAffinity: kube's messages; what the API server lets through is left to the
    scheduler's parse (invalid label values in preferred terms, Gt/Lt values that are no integer)."""
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"

    def na(*exprs, fields=(), preferred=None):
        out = {req: {"nodeSelectorTerms": [{"matchExpressions": list(exprs), "matchFields": list(fields)}]}}
        if preferred is not None:
            out = {pref: preferred}
        return out

    p = f"na.{req}.nodeSelectorTerms[0]"
    assert node_affinity_errors(na({"key": "k", "operator": "Gt", "values": ["abc"]}), "na") == []
    assert node_affinity_errors(na({"key": "k", "operator": "Exists", "values": ["a"]}), "na") == [
        f"{p}.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'"]
    assert node_affinity_errors(na({"key": "k", "operator": "Lt", "values": ["1", "2"]}), "na") == [
        f"{p}.matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' "
        "or 'Gt'"]
    assert node_affinity_errors(na({"key": "k", "operator": "In", "values": ["a b"]}), "na") == [
        f'{p}.matchExpressions[0].values[0]: Invalid value: "a b": ' + LABEL_VALUE]
    assert node_affinity_errors(na({"key": "bad key", "operator": "Exists"}), "na") == [
        f'{p}.matchExpressions[0].key: Invalid value: "bad key": ' + NAME_PART]
    assert node_affinity_errors(na(fields=[{"key": "metadata.name", "operator": "Exists"}]), "na") == [
        f'{p}.matchFields[0].operator: Invalid value: "Exists": not a valid selector operator']
    assert node_affinity_errors(na(fields=[{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]),
                                "na") == [
        f"{p}.matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' "
        "for node field selector"]
    assert node_affinity_errors(na(fields=[{"key": "metadata.name", "operator": "In", "values": ["N1"]}]), "na") == [
        f'{p}.matchFields[0].values[0]: Invalid value: "N1": ' + SUBDOMAIN]
    # preferred terms: label values are not checked (they may match on a single-node cluster)
    assert node_affinity_errors(na(preferred=[{"weight": 101, "preference": {"matchExpressions": [
        {"key": "k", "operator": "In", "values": ["a b"]}]}}]), "na") == [
        f"na.{pref}[0].weight: Invalid value: 101: must be in the range 1-100"]
    with pytest.raises(InputError, match=r"^na\.requiredDuringSchedulingIgnoredDuringExecution: must be a mapping"):
        node_affinity_errors({req: []}, "na")
