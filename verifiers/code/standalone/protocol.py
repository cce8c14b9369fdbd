"""Plain-data wire format shared by the candidate sandbox, the judge and the verifier.

Standard library only: the sandbox runs it with `python -I -S`, outside the package. Messages are JSON lines. A value
is encoded with exact type checks (`type(v) is int`, never `isinstance`), so subclasses, objects with a custom
`__eq__` and `unittest.mock.ANY` cannot travel as data; the decoder builds builtin objects only, never unpickles,
and bounds nesting. JSON objects are always tagged wrappers:

    {"t": [...]} tuple     {"s": [...]} set      {"fs": [...]} frozenset   {"d": [[k, v], ...]} dict
    {"b": hex} bytes       {"c": [re, im]} complex   {"i": hex} int beyond 64 bits (no digit limit)
    {"h": n, "type": name} handle to an object kept in the candidate sandbox
    {"x": type name} a value that could not be encoded (never equals anything)

Lists, str, bool, None, small ints and floats (NaN and infinities included) are plain JSON.
"""

from __future__ import annotations

import json
import os

MAX_DEPTH = 100
# The longest message (one JSON line) the judge and the sandbox accept from each other.
MAX_MESSAGE_BYTES = 1 << 26
_SMALL_INT = 1 << 62


class ProtocolError(Exception):
    """A message that is not well-formed plain data."""


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
    """Plain builtin data -> JSON-ready structure. `handle_of(obj)` names objects that are not data (or None)."""
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is float:
        return value
    if kind is int:
        return value if -_SMALL_INT < value < _SMALL_INT else {"i": hex(value)}
    if kind is list:
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
    handle = handle_of(value) if handle_of is not None else None
    if handle is not None:
        return handle
    return {"x": kind.__name__}


def decode(data, make_handle=None, depth=0):
    """JSON structure -> builtin objects. `make_handle(number, type_name)` builds handle proxies (or refuse them)."""
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    kind = type(data)
    if data is None or kind in (bool, str, int, float):
        return data
    if kind is list:
        return [decode(v, make_handle, depth + 1) for v in data]
    if kind is not dict or len(data) not in (1, 2):
        raise ProtocolError(f"unexpected {kind.__name__} in message")
    try:
        return _decode_tagged(data, make_handle, depth)
    except (TypeError, ValueError, KeyError) as exc:
        raise ProtocolError(f"malformed tagged value: {exc}") from None


def _decode_tagged(data, make_handle, depth):
    (tag,) = [k for k in data if k != "type"] or ["?"]
    body = data[tag]

    def items():
        return [decode(v, make_handle, depth + 1) for v in _as_list(body)]

    if tag == "t":
        return tuple(items())
    if tag == "s":
        return set(items())
    if tag == "fs":
        return frozenset(items())
    if tag == "d":
        pairs = items()
        if not all(type(p) is list and len(p) == 2 for p in pairs):
            raise ProtocolError("dict entries must be [key, value] pairs")
        return {k: v for k, v in pairs}
    if tag == "b" and type(body) is str:
        return bytes.fromhex(body)
    if tag == "c" and type(body) is list and len(body) == 2 and all(type(x) in (int, float) for x in body):
        return complex(body[0], body[1])
    if tag == "i" and type(body) is str:
        return int(body, 16)
    if tag == "x" and type(body) is str:
        return Unrepresentable(body[:100])
    if tag == "h" and type(body) is int and make_handle is not None:
        return make_handle(body, str(data.get("type", "object"))[:100])
    raise ProtocolError(f"unknown tag {tag!r}")


def _as_list(body):
    if type(body) is not list:
        raise ProtocolError("tagged container body must be a list")
    return body


def dumps(message) -> bytes:
    """One message as a JSON line."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def write_message(fd: int, message) -> None:
    data = dumps(message)
    while data:
        data = data[os.write(fd, data) :]


class LineReader:
    """Reads newline-terminated JSON messages from a file descriptor, refusing lines over `max_bytes`."""

    def __init__(self, fd: int, max_bytes: int):
        self.fd = fd
        self.max_bytes = max_bytes
        self.buffer = bytearray()

    def read_line(self) -> bytes | None:
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
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return line

    def read_message(self):
        line = self.read_line()
        if line is None:
            return None
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ProtocolError(f"not a JSON message: {exc}") from None
        if type(message) is not dict:
            raise ProtocolError("a message must be a JSON object")
        return message
