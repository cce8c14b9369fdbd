"""Plain-data wire format shared by the candidate sandbox, the judge and the verifier.

Standard library only: the sandbox runs it with `python -I -S`, outside the package. Messages are JSON lines. A value
is encoded with exact type checks (`type(v) is int`, never `isinstance`), so subclasses, objects with a custom
`__eq__` and `unittest.mock.ANY` cannot travel as data; the decoder builds builtin objects only, never unpickles,
and bounds nesting. JSON objects are always tagged wrappers:

    {"t": [...]} tuple     {"s": [...]} set      {"fs": [...]} frozenset   {"d": [[k, v], ...]} dict
    {"b": hex} bytes       {"c": [re, im]} complex   {"i": hex} int beyond 64 bits (no digit limit)
    {"ba": hex} bytearray  {"C": [[k, v], ...]} Counter   {"od": [[k, v], ...]} OrderedDict   {"dq": [[...], maxlen]}
    {"dd": [factory, [[k, v], ...]]} defaultdict   {"nt": [[field, ...], [...]]} namedtuple
    {"fr": [numerator hex, denominator hex]} Fraction   {"de": text} Decimal   {"td": [days, s, us]} timedelta
    {"dt": ["date" | "time" | "datetime", isoformat]}   {"np": [dtype name, item()]} numpy scalar
    {"h": n, "type": "object" | ITERATOR} handle to an object kept in the candidate sandbox
    {"x": type name} a value that could not be encoded (never equals anything)

Lists, str, bool, None, small ints and floats (NaN and infinities included) are plain JSON.

What the judge decodes is the candidate's (a reply can be any bytes: the candidate shares the harness's interpreter),
so decoding is linear in the message: a set or dict whose keys share a hash (integers that differ by multiples of
2**61 - 1, tuples of them) is built key by key under a DecodeBudget of CPU time rather than in one quadratic call,
and a message that is not a JSON object is refused before any object is built.
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import sys
import time

# How deep a value may nest: deeper than a recursive solution gets under Python's default recursion limit. Encoding,
# decoding and JSON recurse up to ~4 frames per level (a dict is 3 JSON levels), so both ends raise the recursion
# limit to RECURSION_LIMIT while they do (JSON's C code needs ~150 bytes of stack per level: 3000 levels are far from
# the 8 MiB main-thread stack).
MAX_DEPTH = 1000
RECURSION_LIMIT = 6 * MAX_DEPTH
ITERATOR = "<iterator>"  # the "type" of a handle to an iterator: the judge's proxy of it has next()
# The longest message (one JSON line) the judge accepts from the sandbox: what it sends is the candidate's, and the
# judge's memory must not be the candidate's to spend. A reply of a call may be as long as the candidate's own
# `memory_mb` when that is more (judge_proxy.Session): a value the candidate can hold, it can return.
MAX_MESSAGE_BYTES = 1 << 26
# The longest request the sandbox accepts from the judge (the test's arguments, trusted): beyond the message bound, so
# that a test passing a 100 MiB list does not fail a correct candidate; the candidate's address space bounds it anyway.
MAX_REQUEST_BYTES = 1 << 30
_SMALL_INT = 1 << 62
# What the verifier sends the judge's zygote of each job's test, so that it prepares the test once for the children it
# forks next (judge_prepared.py): the dataset's fields a test's preparation depends on, as JSON of at most this size.
TEST_KEY_FIELDS = ("test", "format", "entry_point", "check_name", "module", "prompt")
MAX_TEST_NOTE_BYTES = 1 << 16


def roomy(function, *args):
    """`function(*args)` with the recursion limit that values nested MAX_DEPTH deep need; the code around it (the
    candidate's in the sandbox, the test's in the judge) keeps its own limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        return function(*args)
    finally:
        sys.setrecursionlimit(limit)


class ProtocolError(Exception):
    """A message that is not well-formed plain data."""


class OverBudget(ProtocolError):
    """Decoding a value spent the CPU time it was given (DecodeBudget)."""


class DecodeBudget:
    """The CPU time (`time.process_time()`) by which decoding one value must end. Checked every CHECK_EVERY items of
    the lists it decodes, and after each insertion of a key that shares its hash with another key of its set or dict
    (each such insertion compares the key with all the others: the one step whose cost a candidate chooses)."""

    CHECK_EVERY = 1 << 16

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.items = 0

    def spend(self, items: int) -> None:
        self.items += items
        if self.items >= self.CHECK_EVERY:
            self.items = 0
            self.check()

    def check(self) -> None:
        if time.process_time() > self.deadline:
            raise OverBudget("decoding the value took longer than the time left to it")


class Unrepresentable:
    """Stands for a value the sandbox could not encode: comparing it or testing its truth raises, so it fails. The
    type's name the sandbox reported is the candidate's choice: it is kept out of the string form and the error."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def _refuse(self, *_):
        raise TypeError("a value returned by the candidate is not plain data")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = _refuse

    def __repr__(self):
        return "<unrepresentable value>"


def encode(value, handle_of=None, depth=0):
    """Plain builtin data -> JSON-ready structure. `handle_of(obj)` names objects that are not data (or None). A list
    of plain JSON scalars is its own encoding: it is returned as it is, not copied (see `_plain_json`)."""
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is float:
        return value
    if kind is int:
        return value if -_SMALL_INT < value < _SMALL_INT else {"i": hex(value)}
    if kind is list:
        if _plain_json(value):
            return value
        return [encode(v, handle_of, depth + 1) for v in value]
    if kind is tuple:
        return {"t": [encode(v, handle_of, depth + 1) for v in value]}
    if kind is set or kind is frozenset:
        return {"s" if kind is set else "fs": [encode(v, handle_of, depth + 1) for v in value]}
    if kind is dict:
        return {"d": [[encode(k, handle_of, depth + 1), encode(v, handle_of, depth + 1)] for k, v in value.items()]}
    if kind is bytes:
        return {"b": value.hex()}
    if kind is complex:
        return {"c": [value.real, value.imag]}
    if kind in _CONTAINERS or _is_namedtuple(value):
        return _encode_container(value, handle_of, depth)
    if (plain := _encode_value_type(value, kind)) is not None:
        return plain if type(plain) is dict else encode(plain, handle_of, depth + 1)
    handle = handle_of(value) if handle_of is not None else None
    if handle is not None:
        return handle
    return {"x": kind.__name__}


_SCALARS = frozenset({type(None), bool, str, int, float})
_NUMBERS = frozenset({bool, int, float})


def _plain_json(items: list) -> bool:
    """Whether every item of `items` is a scalar that JSON writes as `encode` would (None, bool, str, float, an int
    below 2**62 in magnitude), checked by C-level passes: a list of 10 million integers in about 0.3 s, where encoding
    it item by item took 1.3 s. An int beyond the bound (it travels in hex) sends the list down the item-by-item path:
    min() and max() find it, unless a NaN hides it from them, and a NaN makes the check fail too."""
    kinds = set(map(type, items))
    if not kinds <= _SCALARS:
        return False
    if int not in kinds:
        return True
    if not kinds <= _NUMBERS:  # ints among strings or None: min() cannot compare them
        return False
    return -_SMALL_INT < min(items) and max(items) < _SMALL_INT


def decode(data, make_handle=None, depth=0, budget: DecodeBudget | None = None):
    """JSON structure -> builtin objects. `make_handle(number, type_name)` builds handle proxies (or refuse them).
    `budget`: the CPU time decoding may take (the judge's, for a candidate's reply); OverBudget past it."""
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    kind = type(data)
    if data is None or kind in _SCALARS:
        return data
    if kind is list:
        if budget is not None:
            budget.spend(len(data))
        if depth < MAX_DEPTH and _SCALARS.issuperset(map(type, data)):  # plain JSON: a copy, no call per item
            return data.copy()
        return [decode(v, make_handle, depth + 1, budget) for v in data]
    if kind is not dict or len(data) not in (1, 2):
        raise ProtocolError(f"unexpected {kind.__name__} in message")
    try:
        return _decode_tagged(data, make_handle, depth, budget)
    except (TypeError, ValueError, KeyError) as exc:
        raise ProtocolError(f"malformed tagged value: {exc}") from None


def _decode_tagged(data, make_handle, depth, budget):
    (tag,) = [k for k in data if k != "type"] or ["?"]
    body = data[tag]

    if tag == "t":
        return tuple(_items(body, make_handle, depth, budget))
    if tag == "s":
        return _new_set(set, _items(body, make_handle, depth, budget), budget)
    if tag == "fs":
        return _new_set(frozenset, _items(body, make_handle, depth, budget), budget)
    if tag == "d":
        return _new_mapping(dict, _pairs(body, make_handle, depth, budget), budget)
    if tag == "b" and type(body) is str:
        return bytes.fromhex(body)
    if tag == "c" and type(body) is list and len(body) == 2 and all(type(x) in (int, float) for x in body):
        return complex(body[0], body[1])
    if tag == "i" and type(body) is str:
        return int(body, 16)
    if tag == "x" and type(body) is str:
        return Unrepresentable(body[:100])
    if tag in _VALUE_TAGS:
        return _decode_value_type(tag, body)
    if tag in _CONTAINER_TAGS:
        return _decode_container(tag, body, make_handle, depth, budget)
    if tag == "h" and type(body) is int and 0 <= body < MAX_HANDLE and make_handle is not None:
        return make_handle(body, str(data.get("type", "object"))[:100])
    raise ProtocolError(f"unknown tag {tag!r}")


# The standard library's value types (and numpy's scalars) travel as the values they stand for, so that they compare
# as plain Python compares them: a Fraction, a Decimal, a date, time, datetime or timedelta arrives as the same type
# of the judge's making; a numpy scalar of a bool, integer, float or complex dtype as the same scalar (its dtype and
# its `item()`), rebuilt by the judge's numpy. Each is recognised by its class exactly (the loaded module's).
_VALUE_TAGS = ("fr", "de", "dt", "td", "np")
# numpy's scalar types that travel: dtype name -> the Python numbers `item()` gives for it.
_NUMPY_SCALARS = {
    "bool": (bool,), **{f"{sign}int{bits}": (int,) for sign in ("", "u") for bits in (8, 16, 32, 64)},
    **{f"float{bits}": (float,) for bits in (16, 32, 64)}, "complex64": (complex,), "complex128": (complex,),
}  # fmt: skip
_DATE_TYPES = ("date", "time", "datetime")
MAX_VALUE_TEXT = 1 << 12  # an isoformat or a Decimal's digits: longer is no plain value


def _encode_value_type(value, kind):
    """A tagged form (a dict), a builtin number (numpy's scalars), or None (not one of these types)."""
    fractions, decimal, dates = (sys.modules.get(name) for name in ("fractions", "decimal", "datetime"))
    if fractions is not None and kind is fractions.Fraction:
        return {"fr": [hex(value.numerator), hex(value.denominator)]}
    if decimal is not None and kind is decimal.Decimal:
        return {"de": str(value)}
    if dates is not None and kind is dates.timedelta:
        return {"td": [value.days, value.seconds, value.microseconds]}
    if dates is not None and any(kind is getattr(dates, name) for name in _DATE_TYPES):
        return {"dt": [kind.__name__, value.isoformat()]}
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic) and str(value.dtype) in _NUMPY_SCALARS:
        return {"np": [str(value.dtype), encode(value.item())]}
    return None


def _decode_value_type(tag, body):
    import datetime
    import decimal
    import fractions

    if tag == "fr" and type(body) is list and len(body) == 2 and all(type(x) is str for x in body):
        numerator, denominator = int(body[0], 16), int(body[1], 16)
        if denominator > 0:
            return fractions.Fraction(numerator, denominator)
    if tag == "de" and type(body) is str and len(body) <= MAX_VALUE_TEXT:
        try:
            return decimal.Decimal(body)
        except decimal.InvalidOperation:
            pass
    if tag == "td" and type(body) is list and len(body) == 3 and all(type(x) is int for x in body):
        return datetime.timedelta(days=body[0], seconds=body[1], microseconds=body[2])
    if tag == "dt" and type(body) is list and len(body) == 2 and body[0] in _DATE_TYPES and type(body[1]) is str:
        if len(body[1]) <= MAX_VALUE_TEXT:
            return getattr(datetime, body[0]).fromisoformat(body[1])
    if tag == "np" and type(body) is list and len(body) == 2 and body[0] in _NUMPY_SCALARS:
        number = decode(body[1])
        if type(number) in _NUMPY_SCALARS[body[0]]:
            # A numpy scalar arrives only from a sandbox given site-packages: numpy then, where this interpreter has
            # it (the module stays standard-library only otherwise); without it, the Python number.
            try:
                numpy = sys.modules.get("numpy") or importlib.import_module("numpy")
            except ImportError:
                return number
            return numpy.dtype(body[0]).type(number)
    raise ProtocolError(f"malformed {tag!r} value")


# Handles are numbered from 0 by the sandbox; below 2**61 - 1 an int is its own hash, so the judge's table of handles
# cannot be flooded with numbers that all hash alike.
MAX_HANDLE = 1 << 60


def _shared_hashes(keys: list) -> tuple[list, set]:
    """The keys' hashes, and the hashes that two or more of them share (none, in the common case). Linear: the hash
    values are ints, of which at most a few share a hash in turn (an int's hash is itself modulo 2**61 - 1)."""
    hashes = list(map(hash, keys))  # TypeError for a key that cannot be one (a candidate object)
    if len(set(hashes)) == len(hashes):
        return hashes, set()
    counts = collections.Counter(hashes)
    return hashes, {h for h, n in counts.items() if n > 1}


def _new_set(kind: type, items: list, budget):
    """`kind(items)`, in time linear in the items unless their hashes collide: then key by key, the budget checked
    after each key that shares its hash (150,000 integers of one hash cost a single set() call about a minute)."""
    hashes, shared = _shared_hashes(items)
    if not shared:
        return kind(items)
    made = set()
    for item, h in zip(items, hashes):
        made.add(item)
        if budget is not None and h in shared:
            budget.check()
    return made if kind is set else frozenset(made)  # a set's entries are copied with their hashes: no comparison


def _new_mapping(make, pairs: list, budget):
    """`make(pairs)` (a dict, or one of the standard mappings), with colliding keys inserted as `_new_set` does, in
    their order."""
    hashes, shared = _shared_hashes([k for k, _ in pairs])
    if not shared:
        return make(pairs)
    made = make(())
    for (key, value), h in zip(pairs, hashes):
        made[key] = value
        if budget is not None and h in shared:
            budget.check()
    return made


# The standard library's containers that solutions return as data (`Counter(words)`, a `namedtuple`), rebuilt as the
# same standard types on the other side. A namedtuple arrives as a namedtuple of the judge's making with the same
# fields (its class, methods and name stay behind: its string form is a tuple's); a defaultdict keeps a builtin
# default factory, or gets a handle to the candidate's own (a lambda), which the judge then calls.
_CONTAINERS = {
    bytearray: "ba", collections.Counter: "C", collections.OrderedDict: "od", collections.defaultdict: "dd",
    collections.deque: "dq",
}  # fmt: skip
_CONTAINER_TAGS = {*_CONTAINERS.values(), "nt"}
_FACTORIES = {f.__name__: f for f in (int, float, str, bytes, bool, complex, list, dict, set, frozenset, tuple)}
_NAMEDTUPLES: dict = {}
MAX_FIELDS = 256
MAX_NAMEDTUPLE_CLASSES = 1000


def _is_namedtuple(value) -> bool:
    fields = getattr(type(value), "_fields", None) if isinstance(value, tuple) else None
    return type(fields) is tuple and all(type(f) is str for f in fields) and len(fields) == len(value)


def _encode_container(value, handle_of, depth):
    def items(values):
        return [encode(v, handle_of, depth + 1) for v in values]

    kind = type(value)
    if kind is bytearray:
        return {"ba": value.hex()}
    if kind is collections.deque:
        return {"dq": [items(value), value.maxlen]}
    if kind in _CONTAINERS:
        pairs = [items(pair) for pair in dict.items(value)]
        if kind is not collections.defaultdict:
            return {_CONTAINERS[kind]: pairs}
        factory = value.default_factory
        named = factory.__name__ if _FACTORIES.get(getattr(factory, "__name__", None)) is factory else None
        return {"dd": [named or (encode(factory, handle_of, depth + 1) if factory is not None else None), pairs]}
    return {"nt": [list(type(value)._fields), items(tuple.__iter__(value))]}


def _decode_container(tag, body, make_handle, depth, budget):
    if tag == "ba" and type(body) is str:
        return bytearray.fromhex(body)
    body = _as_list(body)
    if tag == "dq" and len(body) == 2 and (body[1] is None or type(body[1]) is int):
        return collections.deque(_items(body[0], make_handle, depth, budget), body[1])
    if tag in ("C", "od", "dd"):
        pairs = _pairs(body[1] if tag == "dd" else body, make_handle, depth, budget)
        if tag == "C":
            return _new_mapping(lambda items: collections.Counter(dict(items)), pairs, budget)
        if tag == "od":
            return _new_mapping(collections.OrderedDict, pairs, budget)
        factory = body[0]
        factory = _FACTORIES.get(factory) if type(factory) is str else decode(factory, make_handle, depth + 1, budget)
        factory = factory if callable(factory) else None
        return _new_mapping(lambda items: collections.defaultdict(factory, items), pairs, budget)
    if tag == "nt" and len(body) == 2:
        return _namedtuple(body[0], budget)._make(_items(body[1], make_handle, depth, budget))
    raise ProtocolError(f"malformed {tag!r} value")


def _namedtuple(fields, budget=None) -> type:
    fields = tuple(fields) if type(fields) is list and len(fields) <= MAX_FIELDS else None
    if fields not in _NAMEDTUPLES:
        if len(_NAMEDTUPLES) >= MAX_NAMEDTUPLE_CLASSES:  # each is a class to build: a reply cannot ask for millions
            raise ProtocolError("too many kinds of namedtuple")
        if budget is not None:
            budget.check()
        try:
            cls = collections.namedtuple("namedtuple", fields)
        except (TypeError, ValueError):  # not identifiers, a keyword, a duplicate, a leading underscore
            raise ProtocolError("malformed namedtuple fields") from None
        cls.__repr__ = tuple.__repr__
        _NAMEDTUPLES[fields] = cls
    return _NAMEDTUPLES[fields]


def _items(body, make_handle, depth, budget=None) -> list:
    """A container's items, decoded one level deeper than the container (as encode counts)."""
    return decode(_as_list(body), make_handle, depth, budget)


def _pairs(body, make_handle, depth, budget=None) -> list:
    """A dict's [[key, value], ...], decoded; keys and values one level deeper than the dict (as encode counts)."""
    if not all(type(p) is list and len(p) == 2 for p in _as_list(body)):
        raise ProtocolError("dict entries must be [key, value] pairs")
    if budget is not None:
        budget.spend(2 * len(body))
    return [[decode(k, make_handle, depth + 1, budget), decode(v, make_handle, depth + 1, budget)] for k, v in body]


def _as_list(body):
    if type(body) is not list:
        raise ProtocolError("tagged container body must be a list")
    return body


# One encoder for every message (json.dumps builds one per call when given separators).
_ENCODER = json.JSONEncoder(separators=(",", ":"))
# A message longer than this is written without the copy that appends its newline.
_LONG_MESSAGE = 1 << 20


def dumps(message) -> bytes:
    """One message as a JSON line."""
    return _ENCODER.encode(message).encode() + b"\n"


def write_message(fd: int, message) -> None:
    data = _ENCODER.encode(message).encode()
    if len(data) < _LONG_MESSAGE:
        data += b"\n"
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if len(data) >= _LONG_MESSAGE:
        os.write(fd, b"\n")


class LineReader:
    """Reads newline-terminated JSON messages from a file descriptor, refusing lines over `max_bytes`."""

    def __init__(self, fd: int, max_bytes: int):
        self.fd = fd
        self.max_bytes = max_bytes
        self.buffer = bytearray()

    def read_line(self) -> bytes | bytearray | None:
        """The next line without its newline, or None at end of file."""
        scanned = 0
        while (end := self.buffer.find(b"\n", scanned)) < 0:
            scanned = len(self.buffer)
            if scanned > self.max_bytes:
                raise ProtocolError(f"message longer than {self.max_bytes} bytes")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        if end + 1 == len(self.buffer) and end >= _LONG_MESSAGE:  # a long line, alone in the buffer: not copied
            line, self.buffer = self.buffer, bytearray()
            del line[end:]
            return line
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return line

    def read_message(self):
        line = self.read_line()
        return None if line is None else parse_message(line)


def parse_message(line: bytes) -> dict:
    """One message (a JSON object) from its line. The type is checked before any object is built: a line of 60 MiB of
    nested empty lists made the judge build about 2 GiB of them before it found that they were not a message."""
    if line[:1] != b"{" or line[-1:] != b"}":
        raise ProtocolError("a message must be a JSON object")
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"not a JSON message: {exc}") from None
    if type(message) is not dict:
        raise ProtocolError("a message must be a JSON object")
    return message
