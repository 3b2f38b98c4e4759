"""Quantity parsing and int64 conversion, reproducing apimachinery's resource/quantity_test.go
(TestQuantityParse incl. its negated and '+'-prefixed variants and invalid forms,
TestParseQuantityString, TestQuantityParseEmit, TestQuantityRoundUp, TestScaledValue,
TestNewSet / TestMilliNewSet round trips, TestQuantityCmp, TestJSONWhitespace)."""
from __future__ import annotations

from fractions import Fraction

import pytest

from caldera.api.quantity import (
    INT64_MAX,
    QuantityError,
    nano_to_milli,
    nano_to_value,
    parse_nano,
    parse_quantity,
    parse_quantity_strict,
    resource_value,
)

MAX_ALLOWED = Fraction(INT64_MAX)     # apimachinery's maxAllowed (BinarySI cap)


def dec(i, exp):
    """decQuantity(i, exponent): i * 10^exp."""
    return Fraction(i) * Fraction(10) ** exp


def value(s):
    return Fraction(parse_quantity_strict(s), 10**9)


# TestQuantityParse: input -> exact value
PARSE = [
    ("0", dec(0, 0)), ("0n", dec(0, 0)), ("0u", dec(0, 0)), ("0m", dec(0, 0)), ("0Ki", dec(0, 0)),
    ("0k", dec(0, 0)), ("0Mi", dec(0, 0)), ("0M", dec(0, 0)), ("0Gi", dec(0, 0)), ("0G", dec(0, 0)),
    ("0Ti", dec(0, 0)), ("0T", dec(0, 0)),
    ("1", dec(1, 0)),
    ("1Ki", dec(1024, 0)), ("8Ki", dec(8 * 1024, 0)), ("7Mi", dec(7 * 1024**2, 0)), ("6Gi", dec(6 * 1024**3, 0)),
    ("5Ti", dec(5 * 1024**4, 0)), ("4Pi", dec(4 * 1024**5, 0)), ("3Ei", dec(3 * 1024**6, 0)),
    ("10Ti", dec(10 * 1024**4, 0)), ("100Ti", dec(100 * 1024**4, 0)),
    ("5n", dec(5, -9)), ("4u", dec(4, -6)), ("3m", dec(3, -3)), ("9", dec(9, 0)), ("8k", dec(8, 3)),
    ("50k", dec(5, 4)), ("7M", dec(7, 6)), ("6G", dec(6, 9)), ("5T", dec(5, 12)), ("40T", dec(4, 13)),
    ("300T", dec(3, 14)), ("2P", dec(2, 15)), ("1E", dec(1, 18)),
    ("1E-3", dec(1, -3)), ("1e3", dec(1, 3)), ("1E6", dec(1, 6)), ("1e9", dec(1, 9)), ("1E12", dec(1, 12)),
    ("1e15", dec(1, 15)), ("1E18", dec(1, 18)),
    ("1e14", dec(1, 14)), ("1e13", dec(1, 13)), ("100.035k", dec(100035, 0)),
    ("0.001", dec(1, -3)), ("0.0005k", dec(5, -1)), ("0.005", dec(5, -3)), ("0.05", dec(5, -2)),
    ("0.5", dec(5, -1)), ("0.00050k", dec(5, -1)), ("0.00500", dec(5, -3)), ("0.05000", dec(5, -2)),
    ("0.50000", dec(5, -1)), ("0.5e0", dec(5, -1)), ("0.5e-1", dec(5, -2)), ("0.5e-2", dec(5, -3)),
    ("10.035M", dec(10035, 3)),
    ("1.2e3", dec(12, 2)), ("1.3E+6", dec(13, 5)), ("1.40e9", dec(14, 8)), ("1.53E12", dec(153, 10)),
    ("1.6e15", dec(16, 14)), ("1.7E18", dec(17, 17)),
    ("9.01", dec(901, -2)), ("8.1k", dec(81, 2)), ("7.123456M", dec(7123456, 0)),
    ("6.987654321G", dec(6987654321, 0)), ("5.444T", dec(5444, 9)), ("40.1T", dec(401, 11)),
    ("300.2T", dec(3002, 11)), ("2.5P", dec(25, 14)), ("1.01E", dec(101, 16)),
    # things that saturate / round (up to the next nano-unit)
    ("3.001n", dec(4, -9)), ("1.1E-9", dec(2, -9)), ("0.0000000001", dec(1, -9)),
    ("0.0000000005", dec(1, -9)), ("0.00000000050", dec(1, -9)), ("0.5e-9", dec(1, -9)),
    ("0.9n", dec(1, -9)), ("0.00000012345", dec(124, -9)), ("0.00000012354", dec(124, -9)),
    ("9Ei", MAX_ALLOWED), ("9223372036854775807Ki", MAX_ALLOWED), ("12E", dec(12, 18)),
    # fractional binary
    ("100.035Ki", dec(10243584, -2)), ("0.5Mi", dec(512 * 1024, 0)), ("0.05Gi", dec(536870912, -1)),
    ("0.025Ti", dec(274877906944, -1)),
    # "things written by trolls"
    ("0.000000000001Ki", dec(2, -9)), (".001", dec(1, -3)), (".0001k", dec(100, -3)), ("1.", dec(1, 0)),
    ("1.G", dec(1, 9)),
]


@pytest.mark.parametrize("text,want", PARSE, ids=[p[0] for p in PARSE])
def test_parse(text, want):
    assert value(text) == want


@pytest.mark.parametrize("text,want", PARSE, ids=[p[0] for p in PARSE])
def test_parse_negative_and_explicit_plus(text, want):
    assert value("-" + text) == -want
    assert value("+" + text) == want


INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
           " 1", "1 ", "", "Non-Numeric", "1K", "1e", "1Kb", "1Mi5", "1E+", "2x"]


@pytest.mark.parametrize("text", INVALID)
def test_invalid(text):
    with pytest.raises(QuantityError):
        parse_quantity_strict(text)


def test_parse_zero_and_degenerate_forms():
    # TestQuantityParseZero, TestParseQuantityString: "." and "-." scan as zero
    for s in ("0", ".", "-.", "-0", "+0", "00"):
        assert parse_quantity_strict(s) == 0


@pytest.mark.parametrize("text,want", [
    # TestQuantityParseEmit: the exact value the canonical string encodes
    ("1Ki", dec(1024, 0)), ("1024Mi", dec(1024**3, 0)), ("1000M", dec(1, 9)), (".001Ki", dec(1024, -3)),
    (".000001Ki", dec(1024, -6)), (".000000001Ki", dec(1024, -9)), (".000000000001Ki", dec(2, -9)),
])
def test_parse_emit_values(text, want):
    assert value(text) == want
    assert value("-" + text) == -want


@pytest.mark.parametrize("text,milli,val", [
    # TestQuantityRoundUp (scale 0 and -3) / ScaledValue rounds up, negatives away from zero
    ("9.01", 9010, 10), ("-9.01", -9010, -10),
    # TestScaledValue: one unit of a small scale reads as 1 at every larger scale
    ("1n", 1, 1), ("1u", 1, 1), ("1m", 1, 1), ("1", 1000, 1),
    # TestMilliNewSet / TestNewSet round trips
    ("1234", 1234000, 1234), ("1e3", 1000000, 1000), ("1k", 1000000, 1000), ("1234k", 1234000000, 1234000),
    ("1Ki", 1024000, 1024), ("1e6", 10**9, 10**6), ("1Mi", 1024**2 * 1000, 1024**2),
    ("0.5m", 1, 1), ("100m", 100, 1), ("1.5", 1500, 2), ("250m", 250, 1), ("1000Mi", 1048576000000, 1048576000),
])
def test_milli_value_and_value_round_up(text, milli, val):
    n = parse_quantity_strict(text)
    assert nano_to_milli(n) == milli
    assert nano_to_value(n) == val


def test_conversions_saturate_at_int64():
    assert nano_to_value(parse_quantity_strict("12E")) == INT64_MAX      # 1.2e19 > int64
    assert nano_to_milli(parse_quantity_strict("9Ei")) == INT64_MAX
    assert nano_to_value(parse_quantity_strict("9Ei")) == INT64_MAX


def test_cmp():
    # TestQuantityCmp
    assert value("100m") > value("50m") and value("50m") < value("100m") and value("0") == value("0")
    assert value("10000T") > value("100Gi")


@pytest.mark.parametrize("raw,want", [
    # TestJSONWhitespace: manifests are trimmed like Quantity.UnmarshalJSON; YAML numbers and null
    (" 1", 1), ("1 ", 1), (1, 1), (10, 10), (-1, -1), (" -1", -1), (None, 0), (0.5, Fraction(1, 2)),
    (1e3, 1000), (1e-07, Fraction(1, 10**7)),
])
def test_manifest_values(raw, want):
    assert parse_quantity(raw) == want


@pytest.mark.parametrize("raw", [True, float("nan"), float("inf"), [1], {"a": 1}])
def test_manifest_value_types(raw):
    with pytest.raises(QuantityError):
        parse_nano(raw)


@pytest.mark.parametrize("name,raw,want", [
    ("cpu", "100m", 100), ("cpu", "1", 1000), ("cpu", "0.1", 100), ("cpu", "1u", 1), ("memory", "1Gi", 2**30),
    ("memory", "1.5", 2), ("example.com/gpu", "2", 2), ("pods", "110", 110), ("cpu", 2, 2000),
])
def test_resource_value(name, raw, want):
    assert resource_value(name, raw) == want
