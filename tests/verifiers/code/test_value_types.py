"""The standard library's value types and numpy's scalars compare as plain Python compares them.

A Fraction, Decimal, date, time, datetime or timedelta the candidate returns arrives in the judge as the same type
(built there from plain data); a numpy scalar as the same scalar (its dtype and value). Each case below is judged twice:
by plain Python (the candidate's expression and the test's, evaluated here) and by the verifier: the same verdict.
"""

from __future__ import annotations

import datetime
import decimal
import fractions

import numpy
import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code.standalone.protocol import ProtocolError, decode, encode

IMPORTS = "import datetime, decimal, fractions\nfrom fractions import Fraction\nfrom decimal import Decimal\n"
CASES = [
    ("Fraction(1, 3)", "Fraction(2, 6)"),
    ("Fraction(1, 3)", "Fraction(1, 4)"),
    ("Fraction(1, 2)", "0.5"),
    ("Fraction(-10**30, 7)", "Fraction(-10**30, 7)"),
    ("Decimal('0.10')", "Decimal('0.1')"),
    ("Decimal('0.1')", "0.1"),  # a Decimal is not the float nearest 0.1
    ("Decimal('-Infinity')", "Decimal('-Infinity')"),
    ("datetime.date(2024, 2, 29)", "datetime.date(2024, 2, 29)"),
    ("datetime.date(2024, 2, 29)", "datetime.date(2024, 3, 1)"),
    ("datetime.datetime(2024, 1, 2, 3, 4, 5, 6)", "datetime.datetime(2024, 1, 2, 3, 4, 5, 6)"),
    (
        "datetime.datetime(2024, 1, 2, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))",
        "datetime.datetime(2024, 1, 2, 3, tzinfo=datetime.timezone.utc)",
    ),  # the same instant
    ("datetime.time(23, 59, 1)", "datetime.time(23, 59, 1)"),
    ("datetime.timedelta(days=-1, seconds=5)", "datetime.timedelta(seconds=5 - 86400)"),
    ("[Fraction(1, 2), datetime.date(2000, 1, 1)]", "[0.5, datetime.date(2000, 1, 1)]"),
]
NUMPY_CASES = [
    ("numpy.int64(3)", "3"),
    ("numpy.float64(0.1)", "0.1"),
    ("numpy.float32(0.1)", "0.1"),  # numpy compares in float32 (NEP 50)
    ("numpy.float32(0.1)", "numpy.float64(0.1)"),  # float32's 0.1 is not float64's
    ("numpy.uint64(2**64 - 1)", "2**64 - 1"),
    ("numpy.bool_(True)", "True"),
    ("[numpy.int32(1), numpy.int64(2)]", "[1, 2]"),
    ("numpy.complex128(1 + 2j)", "1 + 2j"),
]


def plain(candidate: str, expected: str) -> bool:
    space = {"datetime": datetime, "decimal": decimal, "fractions": fractions, "numpy": numpy}
    space.update(Fraction=fractions.Fraction, Decimal=decimal.Decimal)
    return bool(eval(candidate, space) == eval(expected, space))


def judged(verifier, candidate: str, expected: str, imports: str = IMPORTS) -> float:
    code = f"{imports}def value():\n    return {candidate}\n"
    return verifier.verify(code, f"{imports}assert value() == {expected}\n").score


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(5.0)
    yield v
    v.close()


@pytest.mark.parametrize("candidate, expected", CASES)
def test_standard_library_values_compare_as_in_plain_python(verifier, candidate, expected):
    assert judged(verifier, candidate, expected) == float(plain(candidate, expected))


def test_numpy_scalars_compare_as_in_plain_python():
    v = make_code_verifier(5.0, site_packages=True)
    try:
        verdicts = [(c, e, judged(v, c, e, "import numpy\n")) for c, e in NUMPY_CASES]
    finally:
        v.close()
    assert verdicts == [(c, e, float(plain(c, e))) for c, e in NUMPY_CASES]
    assert 0.0 in [verdict for *_, verdict in verdicts]  # both verdicts exercised


@pytest.mark.parametrize("candidate", [c for c, _ in CASES])
def test_round_trip_keeps_type_and_value(candidate):
    value = eval(candidate, {"datetime": datetime, "Fraction": fractions.Fraction, "Decimal": decimal.Decimal})
    back = decode(encode(value))
    assert type(back) is type(value) and (back == value or str(back) == str(value))


@pytest.mark.parametrize(
    "message",
    [
        {"fr": ["1", "0"]},  # a zero denominator
        {"fr": ["1", "-2"]},
        {"fr": [1, 2]},
        {"de": "1.2.3"},
        {"de": "9" * 5000},  # longer than a plain value
        {"dt": ["date", "2024-13-01"]},
        {"dt": ["tzinfo", "x"]},
        {"td": [1, 2]},
        {"td": [1, 2, "3"]},
        {"np": ["object", 1]},
        {"np": ["int64", "x"]},
        {"np": ["float32", 1]},  # an int where the dtype's item() is a float
    ],
)
def test_malformed_values_are_refused(message):
    with pytest.raises(ProtocolError):
        decode(message)


@pytest.mark.parametrize("candidate", [c for c, _ in NUMPY_CASES])
def test_numpy_round_trip_keeps_dtype_and_value(candidate):
    value = eval(candidate, {"numpy": numpy})
    back = decode(encode(value))
    assert type(back) is type(value) and back == value if not isinstance(value, list) else back == value


def test_a_numpy_scalar_of_another_dtype_is_not_data():
    assert encode(numpy.datetime64("2024-01-01"), lambda obj: {"h": 0}) == {"h": 0}
