"""Pure parts of the `code` verifier, no sandbox: the plain-data codec, code extraction, reference parsing."""

from __future__ import annotations

import json
import math
import operator
from unittest import mock

import pytest

from trl_grpo_ext.verifiers.code.standalone.protocol import (
    MAX_DEPTH,
    ProtocolError,
    Unrepresentable,
    decode,
    encode,
    roomy,
)
from trl_grpo_ext.verifiers.code.verifier import extract_code, parse_reference

PLAIN_VALUES = [
    None, True, False, 0, -7, 2**62 - 1, 2**62, -(2**300), 1.5, -0.0, math.inf, "h\u00e9\n", "",
    [1, [2, []]], (1, (2,)), (), {1, 2}, set(), frozenset({"a"}), {"k": 1, 2: (3,), (4, 5): None},
    b"\x00\xff", 3 - 4j,
]  # fmt: skip


@pytest.mark.parametrize("value", PLAIN_VALUES, ids=repr)
def test_plain_values_round_trip_with_exact_types(value):
    back = decode(encode(value))
    assert back == value and type(back) is type(value)
    if isinstance(value, dict):
        assert [type(k) for k in back] == [type(k) for k in value]


def test_nan_round_trips_as_nan():
    assert math.isnan(decode(encode(float("nan"))))


class IntLike(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class AlwaysEqual:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("impostor", [IntLike(3), AlwaysEqual(), mock.ANY, [AlwaysEqual()], {"k": IntLike(1)}])
def test_impostors_never_travel_as_data(impostor):
    back = decode(encode(impostor))
    flat = back if isinstance(back, Unrepresentable) else (list(back.values()) if isinstance(back, dict) else back)[0]
    assert isinstance(flat, Unrepresentable)
    with pytest.raises(TypeError):
        _ = flat == 3


@pytest.mark.parametrize(
    "message",
    [{"?": 1}, {"t": 1}, {"d": [[1]]}, {"s": [[1]]}, {"i": "zz"}, {"c": ["a", 1]}, {"h": 1}, {"a": 1, "b": 2}],
)
def test_decoder_refuses_malformed_values(message):
    with pytest.raises(ProtocolError):
        decode(message)


def nested(levels: int, wrap):
    value = 0
    for _ in range(levels):
        value = wrap(value)
    return value


@pytest.mark.parametrize("wrap", [lambda v: [v], lambda v: (v,), lambda v: {"k": v}], ids=["list", "tuple", "dict"])
def test_decoder_bounds_nesting(wrap):
    # as deep as MAX_DEPTH travels, under the recursion limit `roomy` gives; one level more is refused
    fits, too_deep = nested(MAX_DEPTH, wrap), nested(MAX_DEPTH + 2, wrap)
    back = roomy(decode, roomy(json.loads, roomy(json.dumps, roomy(encode, fits))))
    assert roomy(operator.eq, back, fits)
    with pytest.raises(ProtocolError):
        roomy(encode, too_deep)
    with pytest.raises(ProtocolError):
        roomy(decode, [roomy(encode, fits)])


def test_extract_code_takes_the_last_python_block():
    assert extract_code("x\n```python\na = 1\n```\ntext\n```py\nb = 2\n```\n") == "b = 2\n"
    assert extract_code("```\nc = 3\n```") == "c = 3\n"
    assert extract_code("```python\nd = 4\n```\n```text\nnot code\n```") == "d = 4\n"
    assert extract_code("e = 5") == "e = 5"


def test_parse_reference_formats():
    assert parse_reference("assert f() == 1") == ("functions", {"test": "assert f() == 1", "entry_point": None})
    assert parse_reference(["assert f() == 1", "assert f() != 2"])[1]["test"] == "assert f() == 1\nassert f() != 2"
    assert parse_reference({"test": "def check(c): pass", "entry_point": "f"})[1]["entry_point"] == "f"
    row = {"test_list": ["assert f() == 1"], "test_setup_code": "x = 1", "test_imports": ["import math"]}
    assert parse_reference(row)[1]["test"] == "import math\nx = 1\nassert f() == 1"
    assert parse_reference([{"input": "1", "output": "2"}]) == ("stdio", [("1", "2")])
    assert parse_reference({"inputs": ["1"], "outputs": ["2"]}) == ("stdio", [("1", "2")])
    for bad in (None, 3, [], {"inputs": ["1"], "outputs": []}, [{"input": 1, "output": "2"}]):
        with pytest.raises(ValueError):
            parse_reference(bad)
