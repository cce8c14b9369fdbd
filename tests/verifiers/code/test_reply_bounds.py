"""Adversarial suite: what a candidate sends is read in bounded time and memory, and charged to it.

Three classes, each with the attacks that found it and attacks of our own:

- the trainer's process compares a stdio program's output with the expected one: pathological outputs (one huge
  token, digits that end in a letter, `1e` repeated, millions of tokens) cost it milliseconds, under a float
  tolerance too, measured as the trainer's own CPU time around `verify`;
- the judge decodes the candidate's replies: sets and dicts whose keys all hash alike (ints that differ by multiples
  of 2**61 - 1, tuples and frozensets of them, floats, complex numbers) are refused in linear time, as are replies
  nested or counted beyond the bounds; each scores 0, never None;
- the judge's memory for a reply is bounded: a reply of nested empty lists, or of tagged values, that would make it
  build gigabytes of objects scores 0 with `reply_too_large`, and the judge child stays within its bound.
"""

from __future__ import annotations

import time

import pytest
from code_verifier_helpers import assert_wrong_answer, make_code_verifier


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(5, float_tolerance=1e-6)
    yield v
    v.close()


# --- 1. The trainer never spends more than linear time on a candidate's output ---------------------------------

OUTPUT_BYTES = (8 << 20) - 64  # just under the 8 MiB a stdio case may print
STDIO_OUTPUTS = {
    "digits_then_a_letter": "'1' * (N - 1) + 'x'",
    "digits_only": "'7' * N",
    "1e_repeated": "'1e' * (N // 2)",
    "point_digits_e": "'.' + '1' * (N - 2) + 'e'",
    "long_exponent": "'1e' + '9' * (N - 2)",
    "one_token_per_line": "'1.0\\n' * (N // 4)",
    "many_tokens": "'1.5 ' * (N // 4)",
    "unicode_digits": "'\\u0663' * (N // 2)",
}


@pytest.mark.parametrize("expected", ["1.5\n", "1.5 2.5\n3\n"])
@pytest.mark.parametrize("shape", sorted(STDIO_OUTPUTS))
def test_a_pathological_output_costs_the_trainer_milliseconds(verifier, shape, expected):
    """8 MiB of output, compared under a float tolerance: milliseconds of the trainer's CPU (bounded at 2 s: the
    machine is shared). The regular expression this replaced spent 3.4 s on a 16 kB token of digits and an `x`."""
    code = f"import sys\nN = {OUTPUT_BYTES}\nsys.stdout.write({STDIO_OUTPUTS[shape]})\n"
    started = time.process_time()
    result = verifier.verify(code, [{"input": "", "output": expected}])
    spent = time.process_time() - started
    assert_wrong_answer(result, "wrong")
    assert spent < 2.0, f"the trainer's process spent {spent:.2f} s of CPU on one candidate's output"


def test_a_long_correct_output_costs_the_trainer_little(verifier):
    """The slow path, every token read as a number (more digits than expected), on 1 MiB: still cheap, still 1.0."""
    n = (1 << 20) // 12
    code = f"for i in range({n}):\n    print(f'{{i + 0.25:.6f}}')\n"
    expected = "".join(f"{i + 0.25}\n" for i in range(n))
    started = time.process_time()
    result = verifier.verify(code, [{"input": "", "output": expected}])
    spent = time.process_time() - started
    assert (result.score, result.reason) == (1.0, "correct"), result.reason
    assert spent < 2.0, spent


# --- 2. A forged reply is decoded in bounded time, charged to the candidate: 0, never None --------------------------

# The candidate shares the harness's interpreter, so it can send any bytes as its reply: here the harness's writer is
# replaced by one that answers every call with BODY, written without building the value it encodes (which is what
# would cost the candidate the quadratic time).
FORGED_REPLY = """
import os, sys
harness = sys.modules.get("harness") or sys.modules["__main__"]
P = (1 << 61) - 1
body = BODY
original = harness.write_message
def write_message(fd, message, body=body):
    if "id" not in message:  # the set-up and ready messages
        return original(fd, message)
    data = b'{"id":%d,"ok":true,"value":' % message["id"] + body + b"}\\n"
    while data:
        data = data[os.write(fd, data):]
harness.write_message = write_message
def add(a, b): return a + b
"""

N = 150_000  # decoded without a budget, a single set() of these takes the judge 32 s and more
COLLIDING_KEY = {
    "ints": "(b'{\"i\":\"%x\"}' % (k * P) if k * P >= 1 << 62 else b'%d' % (k * P))",
    "tuples": '(b\'{"t":[{"i":"%x"},0]}\' % (k * P))',
    "complex": "(b'{\"c\":[%d.0,%d.0]}' % (-1000003 * k, k))",
    "frozensets": '(b\'{"fs":[{"i":"%x"}]}\' % (k * P))',
}
CONTAINERS = {
    "set": "b'{\"s\":[' + b','.join(KEYS) + b']}'",
    "dict": "b'{\"d\":[' + b','.join(b'[' + key + b',1]' for key in KEYS) + b']}'",
    "Counter": "b'{\"C\":[' + b','.join(b'[' + key + b',1]' for key in KEYS) + b']}'",
    "defaultdict": "b'{\"dd\":[\"int\",[' + b','.join(b'[' + key + b',1]' for key in KEYS) + b']]}'",
    "set_in_a_list": "b'[1,{\"s\":[' + b','.join(KEYS) + b']}]'",
}
FLOODS = {
    "ints_in_a_set": ("set", "ints"), "ints_as_dict_keys": ("dict", "ints"), "tuples_in_a_set": ("set", "tuples"),
    "complex_in_a_counter": ("Counter", "complex"), "frozensets_in_a_defaultdict": ("defaultdict", "frozensets"),
    "ints_in_a_nested_set": ("set_in_a_list", "ints"),
}  # fmt: skip


def forged(body: str) -> str:
    return FORGED_REPLY.replace("BODY", body)


@pytest.mark.parametrize("attack", sorted(FLOODS))
def test_keys_that_all_hash_alike_score_zero_in_bounded_time(attack):
    container, key = FLOODS[attack]
    keys = f"[{COLLIDING_KEY[key]} for k in range(1, {N})]"
    verifier = make_code_verifier(2, workers=1)
    try:
        started = time.monotonic()
        result = verifier.verify(forged(CONTAINERS[container].replace("KEYS", keys)), "assert add(1, 2) == 3\n")
        elapsed = time.monotonic() - started
    finally:
        verifier.close()
    assert result.score == 0.0, (result.reason, result.details)
    assert "judge's CPU time" in result.reason, result.reason
    assert elapsed < 25, elapsed  # the judge stops at the candidate's 2 s, far from the 30 s backstop (None)


def test_a_correct_set_with_keys_that_share_hashes_still_passes():
    """A set a correct program computes, some of whose keys share a hash (-1 and -2, multiples of 2**61 - 1): the
    judge decodes it key by key, within the candidate's time, and it equals the expected value."""
    verifier = make_code_verifier(5, workers=1)
    try:
        code = "def keys(n):\n    P = (1 << 61) - 1\n    return {-1, -2, *range(n), *(k * P for k in range(1, 200))}\n"
        tests = "P = (1 << 61) - 1\nassert keys(100000) == {-1, -2, *range(100000), *(k * P for k in range(1, 200))}\n"
        result = verifier.verify(code, tests)
    finally:
        verifier.close()
    assert (result.score, result.reason) == (1.0, "correct"), result.reason


# --- 3. The judge's memory for a reply is bounded by the candidate's memory_mb ---------------------------------------

HUGE_REPLIES = {
    "nested_empty_lists": "b'[' + b'[],' * (20 << 20) + b'[]]'",  # 60 MiB: about 1.6 GB of lists
    "empty_tuples": "b'[' + b'{\"t\":[]},' * (7 << 20) + b'0]'",  # 63 MiB: a dict, a list and a tuple each
    "empty_dicts_deep": "b'[' + b'[[{\"d\":[]}]],' * (4 << 20) + b'0]'",  # 60 MiB
    "one_item_sets": "b'[' + b'{\"s\":[0]},' * (6 << 20) + b'0]'",
}


@pytest.mark.parametrize("attack", sorted(HUGE_REPLIES))
def test_a_reply_that_would_build_gigabytes_is_too_large(attack):
    verifier = make_code_verifier(2, workers=1, memory_mb=512)
    try:
        started = time.monotonic()
        result = verifier.verify(forged(HUGE_REPLIES[attack]), "assert add(1, 2) == 3\n")
        elapsed = time.monotonic() - started
    finally:
        verifier.close()
    assert result.score == 0.0, (result.reason, result.details)
    assert "reply_too_large" in result.reason, result.reason
    assert elapsed < 25, elapsed


def test_a_message_that_is_not_an_object_is_refused_unread():
    """60 MiB of nested empty lists as the whole message: refused at its first byte, before JSON builds anything."""
    code = (
        "import os\ndef add(a, b):\n    blob = b'[' + b'[],' * (20 << 20) + b'[]]\\n'\n"
        "    for fd in range(3, 64):\n        try: os.write(fd, blob)\n        except OSError: pass\n    os._exit(0)\n"
    )
    verifier = make_code_verifier(2, workers=1)
    try:
        result = verifier.verify(code, "assert add(1, 2) == 3\n")
    finally:
        verifier.close()
    assert_wrong_answer(result)
    assert "JSON object" in result.reason, result.reason


def test_a_large_correct_reply_is_within_the_bound():
    """A correct program returning 2,000,000 integers (about 15 MiB of JSON) still passes under the bound."""
    verifier = make_code_verifier(5, workers=1)
    try:
        result = verifier.verify(
            "def squares(n): return [i * i for i in range(n)]",
            "assert squares(2000000)[-1] == 1999999 ** 2\nassert len(squares(2000000)) == 2000000\n",
        )
    finally:
        verifier.close()
    assert (result.score, result.reason) == (1.0, "correct"), result.reason


# The judge child's peak memory, measured in a process of its own: a session reads a 60 MiB reply of nested empty
# lists with a ceiling of 128 MiB (the candidate's memory_mb), and reports its peak resident memory. The peak is the
# process's own VmHWM: getrusage's ru_maxrss keeps the high-water mark of the process before exec (here pytest's,
# which can exceed the bound by itself in a full run).
SESSION_PEAK = """
import os, sys, threading

def peak_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) >> 10

sys.path.insert(0, sys.argv[1])
from formats_units import CandidateGone
from judge_proxy import Session
reply_memory_mb = int(sys.argv[2]) or None
request_r, request_w = os.pipe()
reply_r, reply_w = os.pipe()
def write():
    data = b'{"id":1,"ok":true,"value":[' + b'[],' * (20 << 20) + b'[]]}\\n'
    view = memoryview(data)
    while view:
        view = view[os.write(reply_w, view):]
threading.Thread(target=write, daemon=True).start()
before = peak_mib()
session = Session(request_w, reply_r, 60.0, reply_memory_mb)
try:
    session.request("call", {"name": "add"}, args=[], kwargs={})
    outcome = "decoded"
except CandidateGone as exc:
    outcome = str(exc)
print(peak_mib(), before, outcome)
"""


def test_the_judge_builds_no_more_than_the_bound_of_a_reply(tmp_path):
    import subprocess
    import sys

    from trl_grpo_ext.verifiers.code.standalone import STANDALONE_DIR

    script = tmp_path / "session_peak.py"
    script.write_text(SESSION_PEAK)
    run = subprocess.run(
        [sys.executable, str(script), str(STANDALONE_DIR), "128"], capture_output=True, text=True, timeout=300
    )
    peak, before, outcome = run.stdout.split(maxsplit=2)
    assert outcome.startswith("reply_too_large"), (outcome, run.stderr[-2000:])
    # Before parsing it holds the reply three times (the writer's copy, the reader's buffer, the line): about 200 MiB.
    # Then at most 128 MiB more; without the bound JSON builds about 1.6 GB of lists.
    assert int(peak) < 200 + 128 + 120, (peak, before)
