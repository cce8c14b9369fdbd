"""The judge's side of the conversation with one candidate sandbox: the candidate's functions and objects as proxies.

Every call of a proxy becomes a request carrying its arguments as plain data, and the reply is decoded as plain
builtin data, so the `==` of an assert is always the builtin one and the expected values never leave the judge. A
proxy cannot be compared, hashed or tested for truth: it can never stand in for an expected value.
"""

import time

from formats_units import CandidateFailure, CandidateGone, UnsupportedTest, candidate_raised, describe
from protocol import MAX_MESSAGE_BYTES, LineReader, ProtocolError, decode, encode, write_message


class Session:
    """Request/reply conversation with one candidate sandbox.

    The CPU time this process spends reading and decoding the candidate's replies is the candidate's doing (a reply
    sent many times costs it one write and the judge a parse each time), and is not charged to it by the verifier's
    clock, which leaves the judge's work alone: past `budget_s` of it, the candidate has ended its run."""

    def __init__(self, request_fd: int, reply_fd: int, budget_s: float = float("inf")):
        self.request_fd = request_fd
        self.replies = LineReader(reply_fd, MAX_MESSAGE_BYTES)
        self.next_id = 0
        self.gone = None
        self.touched = False  # something the candidate provided reached the test code (see `reference_fault`)
        self.budget_s = budget_s
        self.reading_s = 0.0  # CPU time spent on the candidate's replies

    def charge(self, since: float) -> None:
        self.reading_s += time.process_time() - since
        if self.reading_s > self.budget_s and not self.gone:
            self.gone = f"timeout: its replies took more than {self.budget_s:g} s of the judge's CPU time to read"

    def read_message(self):
        started = time.process_time()
        try:
            message = self.replies.read_message()
        except (ProtocolError, OSError, MemoryError, RecursionError) as exc:  # a reply too big for the judge
            message, self.gone = None, f"unreadable reply: {describe(exc)}"
        self.charge(started)
        if message is None or self.gone:
            self.gone = self.gone or "the candidate sandbox ended"
            raise CandidateGone(self.gone)
        return message

    def request(self, op: str, target: dict, **fields):
        self.touched = True
        if self.gone:
            raise CandidateGone(self.gone)
        self.next_id += 1
        try:
            write_message(self.request_fd, {"id": self.next_id, "op": op, "target": target, **fields})
        except OSError as exc:
            self.gone = f"the candidate sandbox stopped reading ({exc})"
            raise CandidateGone(self.gone) from None
        reply = self.read_message()
        if reply.get("id") != self.next_id or type(reply.get("ok")) is not bool:
            self.gone = "reply out of sequence"
            raise CandidateGone(self.gone)
        if not reply["ok"]:
            raise candidate_raised(str(reply.get("error"))[:300])
        started = time.process_time()
        try:
            return reply, decode(reply.get("value"), self.make_handle)
        except (ProtocolError, MemoryError, RecursionError) as exc:
            raise CandidateFailure(f"reply is not plain data: {describe(exc)}") from None
        finally:
            self.charge(started)

    def make_handle(self, number: int, type_name: str):
        return RemoteObject(self, {"h": number}, type_name)

    def call(self, target: dict, args: tuple, kwargs: dict):
        encoded_args = [encode(a, remote_reference) for a in args]
        encoded_kwargs = {str(k): encode(v, remote_reference) for k, v in kwargs.items()}
        reply, value = self.request("call", target, args=encoded_args, kwargs=encoded_kwargs)
        started = time.process_time()
        apply_mutations(args, reply.get("args_after"), self.make_handle)
        self.charge(started)
        return value


def remote_reference(obj):
    if isinstance(obj, RemoteObject) and "h" in obj._target:
        return dict(obj._target)
    raise UnsupportedTest(f"the test passes a {type(obj).__name__} to the candidate; only plain data can be sent")


def apply_mutations(args: tuple, after, make_handle) -> None:
    """Mirror in-place changes the candidate made to list, dict and set arguments (e.g. an in-place sort)."""
    if type(after) is not list or len(after) != len(args):
        return
    for arg, new in zip(args, after):
        if new is None or type(arg) not in (list, dict, set):
            continue
        try:
            value = decode(new, make_handle)
        except ProtocolError:
            continue
        if type(value) is type(arg):
            arg.clear()
            arg.update(value) if type(arg) is not list else arg.extend(value)


class RemoteObject:
    """A candidate function, class or object. It can be called, its attributes read, and iterated; it cannot be
    compared, hashed or tested for truth, so it can never stand in for an expected value."""

    def __init__(self, session: Session, target: dict, type_name: str = "function"):
        self._session = session
        self._target = target
        self._type_name = type_name

    def __call__(self, *args, **kwargs):
        return self._session.call(self._target, args, kwargs)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._session.request("getattr", self._target, attr=attr)[1]

    def __iter__(self):
        return iter(self._session.request("iter", self._target)[1])

    def _refuse(self, *_):
        self._session.touched = True
        raise TypeError(f"a {self._type_name} from the candidate is not plain data and cannot be compared")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = __len__ = _refuse

    def __repr__(self):
        return f"<candidate {self._type_name}>"


def candidate_class_name(obj) -> str | None:
    """The name of a candidate class given to pytest.raises (its exceptions are matched by that name)."""
    if isinstance(obj, RemoteObject) and "name" in obj._target:
        return obj._target["name"]
    return None
