"""The judge's side of the conversation with one candidate sandbox: the candidate's functions and objects as proxies.

Every call of a proxy becomes a request carrying its arguments as plain data, and the reply is decoded as plain
builtin data, so the `==` of an assert is always the builtin one and the expected values never leave the judge. A
proxy cannot be compared, hashed or tested for truth: it can never stand in for an expected value.
"""

import collections
import resource
import time

from formats_units import (
    CandidateClasses,
    CandidateFailure,
    CandidateGone,
    JudgeFault,
    UnsupportedTest,
    candidate_raised,
    describe,
)
from protocol import (
    ITERATOR,
    MAX_MESSAGE_BYTES,
    DecodeBudget,
    LineReader,
    OverBudget,
    ProtocolError,
    decode,
    encode,
    parse_message,
    roomy,
    write_message,
)

# A reply longer than this is parsed and decoded under a ceiling of address space (`reply_memory`): JSON builds up to
# about 30 bytes of objects per byte it reads (nested empty lists, tuples), so shorter ones stay within tens of MiB.
CHECKED_REPLY_BYTES = 1 << 20
EXIT_CODE_BUDGET_S = 1.0  # a SystemExit's code, decoded apart from the replies' budget
# Transport is charged to nobody (docs/code_verifier_sandbox.md, The candidate's clock). Reading one reply costs the
# judge a wake-up, a read, a parse and a few checks (6 - 20 us here, with the load) whatever the candidate computed:
# that much of each reply is not counted against the candidate's budget, up to the budget itself (a reply that costs
# more is charged the rest). It is the judge's CPU time, not the candidate's: a cheaper reply gains the candidate no
# time of its own. Every CALLS_PER_REPORT requests, the session tells the verifier how many it has made (`on_calls`):
# the candidate's clock credits each one (code/clock.py). A constant, as that one is (the same doc says why).
REPLY_ALLOWANCE_S = 15e-6
CALLS_PER_REPORT = 1 << 10
PLAIN_SCALARS = (bool, int, float)  # JSON numbers, which decode to themselves

READS = ("get", "class")  # requests that only read the candidate's state
MAX_ATTRIBUTES = 16  # of an exception the candidate raised (harness.raised_attributes)


class Session:
    """Request/reply conversation with one candidate sandbox.

    The CPU time this process spends reading and decoding the candidate's replies is the candidate's doing (a reply
    sent many times costs it one write and the judge a parse each time), and is not charged to it by the verifier's
    clock, which leaves the judge's work alone: past `budget_s` of it, the candidate has ended its run, and a decode
    that would go past it stops there (DecodeBudget). The memory it spends on one reply is the candidate's doing too:
    with `reply_memory_mb`, a reply longer than CHECKED_REPLY_BYTES is parsed and decoded with at most that much more
    address space than the judge held before (RLIMIT_AS, lowered for that time), and past it the candidate has ended
    its run (`reply_too_large`). A reply's line itself may be as long as `reply_memory_mb` (MAX_MESSAGE_BYTES when
    that is less): the judge holds at most that much of a reply, and builds at most that much more from it.

    Every reply is a round trip: besides what the candidate computed, it costs its harness a read, a decode, an encode
    and a write, and this process a write and a read. The reading allowance (REPLY_ALLOWANCE_S per reply, at most
    `budget_s` in all) keeps that out of the candidate's budget here; `on_calls(n)`, called every CALLS_PER_REPORT
    requests, gives the count to the verifier, whose clock does the same for the candidate's own CPU time."""

    def __init__(
        self,
        request_fd: int,
        reply_fd: int,
        budget_s: float = float("inf"),
        reply_memory_mb: int | None = None,
        on_calls=None,
    ):
        self.request_fd = request_fd
        self.reply_memory = reply_memory_mb << 20 if reply_memory_mb else None
        self.replies = LineReader(reply_fd, max(MAX_MESSAGE_BYTES, self.reply_memory or 0))
        self.next_id = 0
        self.gone = None
        self.touched = False  # something the candidate provided reached the test code (see `reference_fault`)
        self.handles: dict[int, RemoteObject] = {}
        self.classes = CandidateClasses()  # the candidate's exception classes, as the test code sees them
        self.actions = 0
        self.budget_s = budget_s
        self.reading_s = 0.0  # CPU time spent on the candidate's replies
        self.events = None  # the benchmark's readings, when the sandbox sent some (sandbox/stages.py)
        self.prepared = None  # (wall, CPU) readings once the test is parsed, for the same
        self.ceiling = None  # the address space the reply being read may reach (RLIMIT_AS), or None: no bound
        self.on_calls = on_calls

    def left_s(self) -> float:
        """The judge's CPU time the candidate's replies may still take: its budget, and each reply's allowance."""
        return self.budget_s + min(self.next_id * REPLY_ALLOWANCE_S, self.budget_s) - self.reading_s

    def charge(self, since: float) -> None:
        self.reading_s += time.process_time() - since
        if self.left_s() < 0 and not self.gone:
            self.gone = self.timed_out()

    def read_message(self):
        started = time.process_time()
        try:
            line = self.replies.read_line()
            self.ceiling = None
            if line is not None and self.reply_memory is not None and len(line) > CHECKED_REPLY_BYTES:
                self.ceiling = address_space() + self.reply_memory
            message = None if line is None else within_address_space(self.ceiling, parse_message, line)
        except MemoryError:
            message, self.gone = None, self.too_large()
        except (ProtocolError, OSError, RecursionError) as exc:  # a reply too big for the judge
            message, self.gone = None, f"unreadable reply: {describe(exc)}"
        self.charge(started)
        if message is None or self.gone:
            self.gone = self.gone or "the candidate sandbox ended"
            raise CandidateGone(self.gone)
        return message

    def request(self, op: str, target: dict, **fields):
        self.touched = True
        self.actions += op not in READS  # what may change the candidate's state (see judge_namespace.LiveValues)
        if self.gone:
            raise CandidateGone(self.gone)
        self.next_id += 1
        if self.on_calls is not None and self.next_id % CALLS_PER_REPORT == 0:
            self.on_calls(self.next_id)
        try:
            roomy(write_message, self.request_fd, {"id": self.next_id, "op": op, "target": target, **fields})
        except OSError as exc:
            self.gone = f"the candidate sandbox stopped reading ({exc})"
            raise CandidateGone(self.gone) from None
        reply = self.read_message()
        if reply.get("id") != self.next_id or type(reply.get("ok")) is not bool:
            self.gone = "reply out of sequence"
            raise CandidateGone(self.gone)
        if not reply["ok"]:
            error = str(reply.get("error"))[:300]
            attributes = self.exception_attributes(reply.get("attrs"))
            raise candidate_raised(error, reply.get("class"), exit_code(reply.get("code")), self.classes, attributes)
        value = reply.get("value")
        if value is None or type(value) in PLAIN_SCALARS:  # what many calls return: nothing to decode, or to time
            return reply, value
        started = time.process_time()
        try:
            return reply, self.decode(value, started)
        except (ProtocolError, RecursionError) as exc:
            raise CandidateFailure(f"reply is not plain data: {describe(exc)}") from None
        except Exception as exc:  # anything else the decoder raises is its own bug, not the candidate's answer
            raise JudgeFault(f"decoding a reply: {describe(exc)}") from exc
        finally:
            self.charge(started)

    def decode(self, value, started: float):
        """A value of the last reply read, decoded under its bounds: the CPU time left of `budget_s` (then a timeout)
        and the reply's ceiling of address space (then `reply_too_large`); either ends the candidate's run."""
        if value is None or type(value) in PLAIN_SCALARS:  # what many calls return: nothing to build
            return value
        budget = DecodeBudget(started + max(0.0, self.left_s()))
        try:
            return within_address_space(self.ceiling, decode, value, self.make_handle, 0, budget)
        except OverBudget:
            self.gone = self.gone or self.timed_out()
        except MemoryError:
            self.gone = self.gone or self.too_large()
        raise CandidateGone(self.gone)

    def exception_attributes(self, encoded) -> dict:
        """The attributes of an exception the candidate raised (harness.raised_attributes), each decoded as plain data
        within the reply's bounds and a second of CPU time for all; one that is not plain data is left out."""
        if type(encoded) is not dict:
            return {}
        found, budget = {}, DecodeBudget(time.process_time() + EXIT_CODE_BUDGET_S)
        for name, value in list(encoded.items())[:MAX_ATTRIBUTES]:
            try:
                found[name] = within_address_space(self.ceiling, decode, value, None, 0, budget)
            except (ProtocolError, RecursionError, MemoryError):
                continue
        return found

    def timed_out(self) -> str:
        return f"timeout: its replies took more than {self.budget_s:g} s of the judge's CPU time to read"

    def too_large(self) -> str:
        mb = (self.reply_memory or 0) >> 20
        return f"reply_too_large: a reply needs more than {mb} MiB of the judge's memory (the candidate's memory_mb)"

    def make_handle(self, number: int, type_name: str):
        """One proxy per object, as the sandbox keeps one number per object: an iterator stays one stream. The sandbox
        says whether the object is an iterator (a claim the candidate could make true by giving its class a
        `__next__`); nothing else of its type reaches the test."""
        if number not in self.handles:
            proxy = RemoteIterator if type_name == ITERATOR else RemoteObject
            self.handles[number] = proxy(self, {"h": number}, "object")
        return self.handles[number]

    def call(self, target: dict, args: tuple, kwargs: dict):
        encoded_args, encoded_kwargs = roomy(encode_arguments, args, kwargs)
        reply, value = self.request("call", target, args=encoded_args, kwargs=encoded_kwargs)
        args_after, kwargs_after = reply.get("args_after"), reply.get("kwargs_after")
        if (type(args_after) is not list or args_after.count(None) == len(args_after)) and not kwargs_after:
            return value  # no argument changed (the sandbox sends None for each): nothing to mirror
        started = time.process_time()
        try:
            apply_mutations(args, args_after, lambda new: self.decode(new, started))
            if kwargs and type(kwargs_after) is dict:  # `sort_in_place(nums=xs)` mutates xs too
                names = list(kwargs)
                changed = [kwargs_after.get(str(name)) for name in names]
                apply_mutations(tuple(kwargs.values()), changed, lambda new: self.decode(new, started))
        except CandidateGone:
            raise
        except Exception as exc:  # mirroring plain data raises nothing but by a bug of the judge's
            raise JudgeFault(f"mirroring the candidate's changes to its arguments: {describe(exc)}") from exc
        finally:
            self.charge(started)
        return value


def encode_arguments(args: tuple, kwargs: dict) -> tuple[list, dict]:
    return [encode(a, remote_reference) for a in args], {
        str(k): encode(v, remote_reference) for k, v in kwargs.items()
    }


def exit_code(encoded):
    """A SystemExit's code as the sandbox sent it: plain data, or None (also when it takes too long to decode)."""
    try:
        return roomy(decode, encoded, None, 0, DecodeBudget(time.process_time() + EXIT_CODE_BUDGET_S))
    except (ProtocolError, RecursionError, MemoryError):
        return None


def remote_reference(obj):
    if isinstance(obj, RemoteObject) and "h" in obj._target:
        return dict(obj._target)
    raise UnsupportedTest(f"the test passes a {type(obj).__name__} to the candidate; only plain data can be sent")


def apply_mutations(args: tuple, after, decode_value) -> None:
    """Mirror in-place changes the candidate made to list, dict and set arguments, positional or keyword (e.g. an
    in-place sort). `decode_value(encoded)`: the session's decoding, under its bounds."""
    if type(after) is not list or len(after) != len(args):
        return
    for arg, new in zip(args, after):
        if new is None or type(arg) not in (list, dict, set):
            continue
        try:
            value = decode_value(new)
        except (ProtocolError, RecursionError):
            continue
        if type(value) is type(arg):
            arg.clear()
            arg.update(value) if type(arg) is not list else arg.extend(value)


class RemoteObject:
    """A candidate function, class or object. It can be called, its attributes read, and iterated; it cannot be
    compared, hashed or tested for truth, so it can never stand in for an expected value. Its string form is the
    judge's text alone (`<candidate object>`): a class the candidate names `Valid` cannot satisfy `'Valid' in
    str(result)`."""

    def __init__(self, session: Session, target: dict, kind: str = "function"):
        self._session = session
        self._target = target
        self._kind = kind  # "function" or "object": the judge's words, never the candidate's
        self._stream = None  # the items fetched ahead, when it is iterated with next()

    def __call__(self, *args, **kwargs):
        return self._session.call(self._target, args, kwargs)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._session.request("getattr", self._target, attr=attr)[1]

    def __iter__(self):
        iterator = self._session.request("iter", self._target)[1]
        if not isinstance(iterator, RemoteIterator):  # a forged reply: a list is not what iter() gives
            raise CandidateFailure("iter() of a candidate object returned no iterator")
        return iterator

    def _refuse(self, *_):
        self._session.touched = True
        raise TypeError(f"a {self._kind} from the candidate is not plain data and cannot be compared")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = __len__ = _refuse

    def __repr__(self):
        return f"<candidate {self._kind}>"


class RemoteIterator(RemoteObject):
    """A candidate iterator (a generator): a RemoteObject that `next()` also works on."""

    def __next__(self):
        """The next item of a candidate iterator (a generator, `islice(gen, n)`), fetched in batches of 1, 2, 4, ...
        items as they are consumed: never more than twice what the test took, so an endless generator is fine."""
        if self._stream is None:
            self._stream = {"items": collections.deque(), "done": False, "raised": None, "batch": 1}
        stream = self._stream
        if not stream["items"] and not stream["done"] and stream["raised"] is None:
            reply, items = self._session.request("next", self._target, count=stream["batch"])
            if type(items) is not list:
                raise CandidateFailure("next() of a candidate iterator returned no list of items")
            stream["items"].extend(items)
            stream["batch"] = min(2 * stream["batch"], 1 << 12)
            stream["done"] = reply.get("done") is True
            raised = reply.get("raised")
            if type(raised) is dict:
                error = str(raised.get("error"))[:300]
                attributes = self._session.exception_attributes(raised.get("attrs"))
                stream["raised"] = candidate_raised(
                    error, raised.get("class"), None, self._session.classes, attributes
                )
        if stream["items"]:
            return stream["items"].popleft()
        if stream["raised"] is not None:
            raised, stream["raised"], stream["done"] = stream["raised"], None, True
            raise raised
        raise StopIteration


def address_space() -> int:
    """The bytes of address space this process holds now (/proc/self/statm, in pages)."""
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def within_address_space(ceiling: int | None, function, *args):
    """`roomy(function, *args)` with RLIMIT_AS lowered to `ceiling` (never raised) for its time: an allocation past it
    raises MemoryError there. The limit the judge child set for itself (judge.apply_limits) is back afterwards. No
    ceiling, no system call: the common case, a short reply."""
    if ceiling is None:
        return roomy(function, *args)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    lowered = min(limit for limit in (ceiling, soft, hard) if limit != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_AS, (lowered, hard))
    try:
        return roomy(function, *args)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
