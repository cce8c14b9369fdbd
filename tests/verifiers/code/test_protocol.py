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


# A reply is the candidate's bytes, and decoding it must cost time linear in it. Keys that all hash alike
# (ints that differ by multiples of 2**61 - 1, tuples of them, complex numbers re + 1000003 * im = 0) made one set()
# call quadratic: they are inserted key by key, under a DecodeBudget of CPU time.
P = (1 << 61) - 1
N_COLLIDING = 30_000  # a single set() of these takes about 10 s here; the budget below stops it in 0.3 s


def colliding_keys(kind: str, n: int = N_COLLIDING) -> list:
    if kind == "ints":
        return [k * P for k in range(n)]
    if kind == "tuples":
        return [(k * P, "x") for k in range(n)]
    return [complex(-1000003 * k, k) for k in range(n)]


def tagged(container: str, keys: list):
    """The wire form of `container` holding `keys`, written without building it (which is what takes the time)."""
    items = [encode(k) for k in keys]
    pairs = [[k, 1] for k in items]
    return json.loads(json.dumps({
        "set": {"s": items}, "frozenset": {"fs": items}, "dict": {"d": pairs}, "Counter": {"C": pairs},
        "OrderedDict": {"od": pairs}, "defaultdict": {"dd": ["int", pairs]},
    }[container]))  # fmt: skip


@pytest.mark.parametrize("kind", ["ints", "tuples", "complex"])
@pytest.mark.parametrize("container", ["set", "frozenset", "dict", "Counter", "OrderedDict", "defaultdict"])
def test_keys_that_hash_alike_are_decoded_within_the_budget(kind, container):
    import time

    from trl_grpo_ext.verifiers.code.standalone.protocol import DecodeBudget, OverBudget

    keys = colliding_keys(kind)
    assert len({hash(k) for k in keys[:300]}) == 1
    few = decode(tagged(container, keys[:300]))  # a few hundred: decoded within any budget, the same value
    assert len(few) == 300 and type(few).__name__ == container and set(few) == set(keys[:300])
    encoded = tagged(container, keys)
    started = time.process_time()
    with pytest.raises(OverBudget):
        decode(encoded, budget=DecodeBudget(time.process_time() + 0.3))
    assert time.process_time() - started < 2.0


def test_a_large_plain_reply_decodes_quickly_and_keeps_its_order():
    import collections
    import time

    from trl_grpo_ext.verifiers.code.standalone.protocol import DecodeBudget

    values = {
        "set": set(range(200_000)), "dict": {str(i): i for i in range(200_000)},
        "od": collections.OrderedDict((i, -i) for i in range(200_000, 0, -1)),
        "keys_around_collisions": {-1: 1, -2: 2, P: 3, 0: 4, 2 * P: 5, 1: 6},  # a few keys share hashes: the slow path
        "list": list(range(1_000_000)),
    }  # fmt: skip
    for name, value in values.items():
        encoded = json.loads(json.dumps(encode(value)))
        started = time.process_time()
        back = decode(encoded, budget=DecodeBudget(time.process_time() + 30))
        assert time.process_time() - started < 2.0, name
        assert back == value and type(back) is type(value), name
        if isinstance(value, dict):
            assert list(back) == list(value), name  # insertion order, the slow path's included


def test_handle_numbers_cannot_flood_the_judges_table_of_handles():
    made = []
    assert decode({"h": 5}, lambda n, t: made.append(n) or n) == 5
    for number in (P, 2 * P, 1 << 60, -1):
        with pytest.raises(ProtocolError):
            decode({"h": number}, lambda n, t: n)


def test_a_message_that_is_not_an_object_is_refused_before_it_is_parsed():
    import time

    from trl_grpo_ext.verifiers.code.standalone.protocol import parse_message

    line = b"[" + b"[]," * (20 << 20) + b"[]]"  # 60 MiB: about 1.6 GB of lists, were it parsed
    started = time.process_time()
    with pytest.raises(ProtocolError, match="JSON object"):
        parse_message(line)
    assert time.process_time() - started < 0.5
    assert parse_message(b'{"id": 1}') == {"id": 1}


@pytest.mark.parametrize(
    "items",
    [
        [], [1, 2, 3], [2**62, 1], [1, -(2**62)], [float("nan"), 2**70], [1.0, float("nan"), 2**70, 3],
        [float("inf"), 1], [True, 2, 3.5], ["a", 1, None], [1, "a", 2**80], [None, False, "x", 0.5],
    ],
)  # fmt: skip
def test_a_flat_list_is_sent_as_it_is_only_when_json_writes_it_as_encode_would(items):
    """The fast path of `encode` (a list of plain scalars is its own encoding) never lets an int beyond 2**62
    travel as digits: a NaN ahead of it, or strings around it, send the list item by item."""
    encoded = encode(items)
    if any(type(x) is int and not -(2**62) < x < 2**62 for x in items):
        assert (
            encoded is not items and {"i": hex(max(items, key=lambda x: abs(x) if type(x) is int else 0))} in encoded
        )
    got = decode(json.loads(json.dumps(encoded)))
    assert [type(x) for x in got] == [type(x) for x in items]
    assert all(a == b or (a != a and b != b) for a, b in zip(got, items))
