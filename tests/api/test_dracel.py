"""DRA's CEL (api/dracel.py) against kube v1.35.4: k8s.io/dynamic-resource-allocation cel/compile_test.go
(TestCEL, the cases for the v1.35 default environment), k8s.io/apiserver pkg/cel/library
quantity_test.go (TestQuantity) and semver_test.go (TestSemver), with their expected values,
runtime errors and compile errors."""
from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import pytest

from caldera.api.dracel import (
    CelRuntimeError,
    Quantity,
    Semver,
    _compile,
    compile_selector,
    device_activation,
    evaluate,
    parse_semver,
)
from caldera.api.quantity import parse_quantity
from caldera.errors import InputError


def device(driver="", attributes=None, capacity=None):
    """cel.Device: qualified names split as parseQualifiedName does (no domain: the driver's)."""
    attrs: dict = {}
    for k, v in (attributes or {}).items():
        dom, _, n = k.rpartition("/")
        attrs.setdefault(dom or driver, {})[n] = parse_semver(v[1]) if isinstance(v, tuple) else v
    caps: dict = {}
    for k, v in (capacity or {}).items():
        dom, _, n = k.rpartition("/")
        caps.setdefault(dom or driver, {})[n] = parse_quantity(v)
    return device_activation(SimpleNamespace(driver=driver, attributes=attrs, capacity=caps))


def version(s):
    return ("version", s)


D = "dra.example.com"
ALL_EXPR = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

# name: (expression, driver, attributes, capacity, expected match | ("error", text))
TEST_CEL = {
    "true": ("true", "", None, None, True),
    "false": ("false", "", None, None, False),
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', "", None, None,
        ("error", "no such key: noSuchAttr")),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))', "", None, None,
        ("error", "no such key: noSuchAttr")),
    "domain-check-negative": ('"no-such-domain" in device.attributes', "", None, None, False),
    "domain-check-positive": ('"dra.example.com" in device.attributes', "", {f"{D}/something": True}, None, True),
    "empty-driver-name": ('device.driver == ""', "", None, None, True),
    "real-driver-name": (f'device.driver == "{D}"', D, None, None, True),
    "driver-name-qualifier": (f'device.attributes["{D}"].name', D, {"name": True}, None, True),
    "driver-name-qualifier-map-lookup": (f'device.attributes["{D}"]["name"]', D, {"name": True}, None, True),
    "qualified-attribute-name": ('device.attributes["other.example.com"].name', D, {"other.example.com/name": True},
                                 None, True),
    "bool": (f'device.attributes["{D}"].name', D, {"name": True}, None, True),
    "int": (f'device.attributes["{D}"].name > 0', D, {"name": 1}, None, True),
    "string": (f'device.attributes["{D}"].name == "fish"', D, {"name": "fish"}, None, True),
    "version": (f'device.attributes["{D}"].name.isGreaterThan(semver("0.0.1"))', D, {"name": version("1.0.0")},
                None, True),
    "version_v": (f'device.attributes["{D}"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
                  D, {"name": version("1.0.0")}, None, True),
    "quantity": (f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))', D, None, {"name": "1Mi"}, True),
    "check-positive": (f'"name" in device.capacity["{D}"] && '
                       f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
                       D, None, {"name": "1Mi"}, True),
    "check-negative": (f'!("name" in device.capacity["{D}"]) || '
                       f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
                       "", None, None, True),
    "all": (ALL_EXPR, D, {"bool": True, "int": 1, "string": "fish", "version": version("1.0.0")},
            {"quantity": "1Mi"}, True),
    "many": (f'device.attributes["{D}"].a && device.attributes["{D}"].b && device.attributes["{D}"].c', D,
             {"a": True, "b": True, "c": True}, None, True),
    "check_attribute_domains": (f'device.attributes.exists_one(x, x == "{D}")', D, {"services": "some_example_value"},
                                None, True),
    "check_attribute_ids": (f'device.attributes["{D}"].exists_one(x, x == "services")', D,
                            {"services": "some_example_value"}, None, True),
    "regexp_attribute": (f'device.attributes["{D}"].services.matches("[^a]?sym")', D, {"services": "asymetric"},
                         None, True),
    "check_capacity_domains": (f'device.capacity.exists_one(x, x == "{D}")', D, None, {"memory": "1Mi"}, True),
    "check_capacity_ids": (f'device.capacity["{D}"].exists_one(x, x == "memory")', D, None, {"memory": "1Mi"}, True),
    # the docs' canonical selector
    "docs-canonical": ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', "gpu.example.com",
                       None, {"memory": "40Gi"}, True),
}


@pytest.mark.parametrize("name", list(TEST_CEL))
def test_cel(name):
    expr, driver, attrs, caps, want = TEST_CEL[name]
    compile_selector(expr)
    act = device(driver, attrs, caps)
    if isinstance(want, tuple):
        with pytest.raises(CelRuntimeError) as e:
            evaluate(expr, act)
        assert str(e.value) == want[1]
    else:
        assert evaluate(expr, act) is want


@pytest.mark.parametrize("expr,needle", [
    ("?!", "does not compile"),                                          # syntax-error
    ("device.allowMultipleAllocations == false", "undefined field 'allowMultipleAllocations'"),   # gate off in 1.35
    ('device.attributes["d"].x.noSuchFunction()', "undeclared reference to 'noSuchFunction'"),
])
def test_cel_compile_errors_are_input_errors(expr, needle):
    with pytest.raises(InputError) as e:
        compile_selector(expr, "spec.selectors[0].cel.expression", "DeviceClass c")
    assert needle in str(e.value) and "DeviceClass c" in str(e.value) and "\n" not in str(e.value)


def value(expr):
    return _compile(expr).evaluate(device())


# quantity_test.go TestQuantity
@pytest.mark.parametrize("expr,want", [
    ('quantity("12Mi")', Quantity(Fraction(12 * 2**20))),
    ('isQuantity("20")', True), ('isQuantity("20M")', True), ('isQuantity("20Mi")', True),
    ('isQuantity("20Mo")', False), ('isQuantity("10Mm")', False),
    ('quantity("200M") == quantity("200M")', True),
    ('quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', True),
    ('quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && '
     'quantity("0.002G") == quantity("2000k")', True),
    ('quantity("200M") == quantity("0.3G")', False),
    ('quantity("50M").isLessThan(quantity("50Mi"))', True),
    ('quantity("50M").isLessThan(quantity("100M"))', True),
    ('quantity("100M").isLessThan(quantity("50M"))', False),
    ('quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    ('quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ('quantity("50M").isGreaterThan(quantity("100M"))', False),
    ('quantity("200M").compareTo(quantity("0.2G"))', 0),
    ('quantity("50M").compareTo(quantity("50Mi"))', -1),
    ('quantity("50Mi").compareTo(quantity("50M"))', 1),
    ('quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    ('quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    ('quantity("50k").sub(20) == quantity("49980")', True),
    ('quantity("50k").add(20).sub(quantity("100k")).asInteger()', -49980),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()', 20),
    ('quantity("50k").asInteger()', 50000),
    ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    ('quantity("50").isInteger()', True),
    ('quantity("50.703k").asApproximateFloat()', 50703.0),
    ('quantity("-5").sign()', -1), ('quantity("0").sign()', 0), ('quantity("5m").sign()', 1),
])
def test_quantity(expr, want):
    assert value(expr) == want


@pytest.mark.parametrize("expr,err", [
    ('quantity("10Mo")', "quantities must match the regular expression"),
    ('quantity("10Mm")', "unable to parse quantity's suffix"),
    ('quantity("9999999999999999999999999999999999999G").asInteger()', "cannot convert value to integer"),
    ('semver("v1.0")', "No Major.Minor.Patch elements found"),
    ('quantity("1") > 0', "no such overload"),      # kube: a compile error (no type checker here)
])
def test_runtime_errors(expr, err):
    with pytest.raises(CelRuntimeError, match=err):
        evaluate(expr + " == 1" if "sign" in expr else expr, device())


# semver_test.go TestSemver
@pytest.mark.parametrize("expr,want", [
    ('isSemver("1.2.3-beta.1+build.1")', True), ('isSemver("")', False), ('isSemver("v1.0.0")', False),
    ('isSemver(" 1.0.0")', False), ('isSemver("1. 0.0")', False), ('isSemver("1.0.0 ")', False),
    ('isSemver("01.01.01")', False), ('isSemver("1")', False), ('isSemver("1.1")', False),
    ('isSemver("", true)', False), ('isSemver(" 1.0.0", true)', False), ('isSemver("1. 0.0", true)', False),
    ('isSemver("1.0.0 ", true)', False), ('isSemver("v1.0.0", true)', True), ('isSemver("01.01.01", true)', True),
    ('isSemver("1", true)', True), ('isSemver("1.1", true)', True),
    ('semver("v01.01", true) == semver("1.1.0")', True),
    ('semver("1.2.3") == semver("1.2.3")', True), ('semver("1.2.3") == semver("1.0.0")', False),
    ('semver("1.0.0").isLessThan(semver("1.2.3"))', True), ('semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    ('semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    ('semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    ('semver("1.2.3").compareTo(semver("1.2.3"))', 0), ('semver("1.0.0").compareTo(semver("1.2.3"))', -1),
    ('semver("1.2.3").compareTo(semver("1.0.0"))', 1),
    ('semver("1.2.3").major()', 1), ('semver("1.2.3").minor()', 2), ('semver("1.2.3").patch()', 3),
    # semver 2.0.0 precedence: a pre-release sorts before its release, numeric identifiers by value
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
    ('semver("1.0.0-alpha.2").isLessThan(semver("1.0.0-alpha.10"))', True),
    ('semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))', True),
])
def test_semver(expr, want):
    assert value(expr) == want


def test_semver_value():
    v = value('semver("1.2.3")')
    assert isinstance(v, Semver) and (v.major, v.minor, v.patch) == (1, 2, 3)
