"""The `math` verifier end to end: registry, options, fast path, workers, deadlines in threads and under asyncio."""

import asyncio
import threading
import time

import pytest

from trl_grpo_ext.verifiers import MathVerifier, get_verifier, list_verifiers

# Undefined functions defeat numeric sampling, and the irrational factor the exact evaluation before simplify
# (`nonzero_at_exact_point`), so sympy.simplify expands two degree-2000 polynomials: 16 s in-process on the development
# machine. (Without the square root, the exact evaluation refutes the pair in 6 ms.)
SLOW_PAIR = (r"\boxed{\sqrt{2} f(x) (x+1)^{2000}}", r"\sqrt{2} f(x) (x+2)^{2000}")
# The deadline is CPU time, so on a busy machine a timeout takes longer than `timeout_s` on the wall clock; the
# wall-clock backstop (10 x timeout_s) bounds it.
WALL_LIMIT_FACTOR = 10.0


@pytest.fixture(scope="module")
def math_verifier():
    verifier = get_verifier("math", timeout_s=5.0, n_workers=2)
    yield verifier
    verifier.close()


CASES = [
    # (completion, reference, score)
    (r"The answer is $\boxed{\frac{1}{2}}$.", "0.5", 1.0),
    (r"\boxed{0.5}", r"\frac{1}{2}", 1.0),
    (r"\boxed{0.5}", r"$\frac{1}{2}$", 1.0),
    (r"\boxed{72}", 72, 1.0),
    ("Natalia sold 48 + 24 = 72 clips.\n#### 72", "72", 1.0),
    (r"\boxed{73}", "72", 0.0),
    (r"\boxed{10\%}", "10", 1.0),
    (r"\boxed{10}", r"10\%", 1.0),
    (r"\boxed{0.1}", r"10\%", 1.0),
    (r"\boxed{\$1,000}", "1000", 1.0),
    (r"\boxed{90^\circ}", "90", 1.0),
    (r"\boxed{5\text{ cm}}", "5", 1.0),
    (r"\boxed{4\frac{4}{9}}", r"\frac{40}{9}", 1.0),
    ("The answer is 4 4/9.", r"\frac{40}{9}", 1.0),
    ("The answer is 11 7/6.", "11", 0.0),
    (r"\boxed{\textbf{odd}}", r"\text{odd}", 1.0),
    (r"\boxed{e}", r"\mathrm{e}", 1.0),
    (r"\boxed{E}", "e", 0.0),
    (r"\boxed{(1,2]}", "(1,2]", 1.0),
    (r"\boxed{[1,2]}", "(1,2]", 0.0),
    (r"\boxed{x \in (-\infty, 3]}", r"x \le 3", 1.0),
    (r"\boxed{\{3, 1, 2\}}", r"\{1,2,3\}", 1.0),
    (r"\boxed{(1, 2, 3)}", "(3, 2, 1)", 0.0),
    (r"\boxed{y = 2x + 1}", "2x - y + 1 = 0", 1.0),
    (r"\boxed{\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}}", r"\begin{bmatrix}1&0\\0&1\end{bmatrix}", 1.0),
    (r"\boxed{1+2i}", "1 + 2i", 1.0),
    ("The answer is (B).", "B", 1.0),
    ("The answer is (C).", "B", 0.0),
    (r"\boxed{\text{(D)}}", "(D)", 1.0),
    (r"It is \boxed{3}. Hmm, on reflection it could instead be \boxed{4}", "3", 0.0),
    ("<think>It is \\boxed{5}</think>", "5", 0.0),
    ("<think>still thinking about \\boxed{5}", "5", 0.0),
    ("no answer here", "5", 0.0),
    (r"\boxed{\frac{1}{2", r"\frac{1}{2}", 0.0),
    (r"$\frac{1}{3}$", r"\frac{1}{3}", 1.0),
]


@pytest.mark.parametrize("completion, reference, score", CASES)
def test_verify(math_verifier, completion, reference, score):
    assert math_verifier.verify(completion, reference).score == score


def test_verify_batch_matches_verify_one_by_one(math_verifier):
    completions = [c for c, _, _ in CASES]
    references = [r for _, r, _ in CASES]
    assert [r.score for r in math_verifier.verify_batch(completions, references)] == [s for _, _, s in CASES]


@pytest.mark.parametrize("reference", [None, float("nan"), "", "   "])
def test_missing_reference_scores_none(math_verifier, reference):
    result = math_verifier.verify(r"\boxed{1}", reference)
    assert result.score is None
    assert result.reason.startswith("unusable_reference")


def test_unparseable_reference_scores_none(math_verifier):
    result = math_verifier.verify(r"\boxed{1}", r"\frac{1}{")
    assert result.score is None
    assert result.reason.startswith("unusable_reference")


@pytest.mark.parametrize("completion", [None, 12, ["not", "text"], {"content": "x"}])
def test_bad_completion_types_score_zero_without_raising(math_verifier, completion):
    result = math_verifier.verify(completion, "1")
    assert result.score == 0.0
    assert result.reason.startswith("bad_completion")


def test_result_carries_the_extracted_answer(math_verifier):
    result = math_verifier.verify(r"so \boxed{\dfrac{3}{4}}", "0.75")
    assert (result.score, result.extracted, result.details["how"]) == (1.0, r"\dfrac{3}{4}", "boxed")


def test_fast_path_does_not_start_workers():
    verifier = MathVerifier()
    try:
        results = verifier.verify_batch([r"\boxed{12}", "#### 7", r"\boxed{0.5}", "(B)"], ["12", "8", "1/2", "B"])
        assert [r.score for r in results] == [1.0, 0.0, 1.0, 1.0]
        assert verifier._pool is None
    finally:
        verifier.close()


@pytest.mark.parametrize(
    "options, field",
    [
        ({"rel_tol": -1}, "rel_tol"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"percent": "half"}, "percent"),
        ({"n_workers": 0}, "n_workers"),
        ({"abs_tol": "small"}, "abs_tol"),
    ],
)
def test_bad_options_name_the_field(options, field):
    with pytest.raises(ValueError, match=field):
        get_verifier("math", **options)


def test_percent_modes():
    strip, fraction = MathVerifier(percent="strip"), MathVerifier(percent="fraction")
    assert strip.verify(r"\boxed{0.1}", r"10\%").score == 0.0
    assert strip.verify(r"\boxed{10}", r"10\%").score == 1.0
    assert fraction.verify(r"\boxed{10}", r"10\%").score == 0.0
    assert fraction.verify(r"\boxed{0.1}", r"10\%").score == 1.0


def test_numbers_are_exact_by_default_and_a_tolerance_is_opt_in():
    exact, tolerant = MathVerifier(), MathVerifier(rel_tol=1e-3)
    assert exact.verify(r"\boxed{2.0001}", "2").score == 0.0  # the old default rel_tol=1e-4 paid for this
    assert exact.verify(r"\boxed{\frac{1}{3}}", "0.33").score == 1.0  # a decimal reference: 1/3 rounds to it
    assert exact.verify(r"\boxed{0.331}", "0.33").score == 0.0  # 0.33 is not read as a rounding of 0.331
    assert tolerant.verify(r"\boxed{2.0001}", "2").score == 1.0
    assert tolerant.verify(r"\boxed{1000001}", "1000000").score == 0.0  # never between two integers
    assert exact._pool is None and tolerant._pool is None  # decided without sympy


def test_registered_with_a_description():
    assert "math" in list_verifiers()
    assert list_verifiers()["math"]


def _worker_pids(verifier):
    return verifier._pool.worker_pids() if verifier._pool is not None else []


def test_deadline_holds_from_a_worker_thread():
    verifier = get_verifier("math", timeout_s=1.5, n_workers=1)
    try:
        verifier.verify(r"\boxed{x+1}", "1+x")  # start the worker outside the timed part
        out = {}

        def call():
            start = time.monotonic()
            out["result"] = verifier.verify(*SLOW_PAIR)
            out["elapsed"] = time.monotonic() - start

        thread = threading.Thread(target=call)
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive()
        assert out["result"].score == 0.0 and out["result"].reason == "timeout"
        assert out["elapsed"] < 1.5 * WALL_LIMIT_FACTOR
        # the pool replaced the killed worker and keeps working
        assert verifier.verify(r"\boxed{2}", "2").score == 1.0
        assert verifier.verify(r"\boxed{x^2-1}", "(x-1)(x+1)").score == 1.0
    finally:
        verifier.close()


def test_deadline_holds_under_asyncio():
    verifier = get_verifier("math", timeout_s=1.5, n_workers=2)
    verifier.start()  # workers ready before the event loop starts timing

    async def main():
        start = time.monotonic()
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        task = asyncio.create_task(ticker())
        results = await verifier.averify_batch([SLOW_PAIR[0], r"\boxed{x+x}"], [SLOW_PAIR[1], "2x"])
        task.cancel()
        return results, time.monotonic() - start, ticks

    try:
        results, elapsed, ticks = asyncio.run(main())
        assert [r.reason for r in results] == ["timeout", "correct"]
        assert elapsed < 1.5 * WALL_LIMIT_FACTOR
        assert ticks > 5  # the event loop kept running while the workers computed
    finally:
        verifier.close()


def test_close_leaves_no_worker_process():
    verifier = get_verifier("math", timeout_s=1.0, n_workers=2)
    verifier.verify_batch([SLOW_PAIR[0], r"\boxed{x+x}"], [SLOW_PAIR[1], "2x"])
    pids = _worker_pids(verifier)
    assert len(pids) == 2
    verifier.close()
    verifier.close()  # idempotent
    assert all(not _alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_start_runs_the_workers_before_the_first_batch():
    from trl_grpo_ext.verifiers import get_verifier

    verifier = get_verifier("math", n_workers=1)
    try:
        verifier.start(wait=False)  # returns at once; the worker warms up in the background
        pool = verifier._pool
        assert pool is not None and len(pool.worker_pids()) == 1
        verifier.start()  # waits for it; the same pool serves the batch
        assert verifier._pool is pool
        assert verifier.verify(r"\boxed{\frac{x+2}{2}}", r"\frac{x}{2}+1").score == 1.0
    finally:
        verifier.close()


def test_start_is_a_no_op_for_a_verifier_without_workers():
    from trl_grpo_ext.verifiers import register_verifier

    @register_verifier("always_one_for_start_test", override=True)
    def always_one(completion, reference):
        return 1.0

    from trl_grpo_ext.verifiers import get_verifier

    verifier = get_verifier("always_one_for_start_test")
    verifier.start()
    assert verifier.verify("x", "y").score == 1.0


# Pairs the fast path cannot decide, so they go to a worker.
UNDECIDED = (r"\boxed{x+1}", "1+x")


@pytest.fixture
def light_workers(monkeypatch):
    """Workers that skip the sympy warm-up, so that a verifier whose comparison is replaced starts in a moment."""
    import pool_helpers

    from trl_grpo_ext.verifiers.math import verifier as math_verifier

    monkeypatch.setattr(math_verifier, "warm_up", pool_helpers.do_nothing)
    return math_verifier


@pytest.mark.parametrize(
    "compare, score, reason",
    [
        ("compare_segfaulting", None, "internal_error: crashed: the worker process died (signal 11 (SIGSEGV))"),
        ("compare_raising_on_answers_only", 0.0, "comparison_error: TypeError"),
        ("compare_raising_type_error", None, "internal_error: raises_on_the_reference: TypeError: a bug in the"),
        ("compare_raising_recursion_error", None, "internal_error: raises_on_the_reference: RecursionError: max"),
        ("compare_raising_memory_error", 0.0, "too_large: MemoryError: "),
    ],
)
def test_failures_of_the_comparison_are_told_apart(light_workers, monkeypatch, compare, score, reason):
    """A crash (after one retry) is the verifier's failure (None); an exception while comparing this answer, where
    the reference compared with itself raises nothing, is a bug the answer triggers (0, so that crashing the verifier
    is no escape, with a reason of its own); one the reference meets too is the verifier's failure (None: no answer
    could be paid); running out of memory on an input is the input's (0, like a timeout)."""
    import pool_helpers

    monkeypatch.setattr(light_workers, "compare_task", getattr(pool_helpers, compare))
    verifier = get_verifier("math", n_workers=1)
    try:
        result = verifier.verify(*UNDECIDED)
        assert result.score == score and result.reason.startswith(reason)
        if reason.startswith("comparison_error"):
            assert result.reason == reason and result.details["error"].startswith(reason.split(": ")[1] + ": ")
            assert result.extracted == "x+1" and result.details["reference"] == "1+x"
    finally:
        verifier.close()


def test_workers_that_cannot_start_give_none_for_the_batch(light_workers, monkeypatch):
    import pool_helpers

    monkeypatch.setattr(light_workers, "warm_up", pool_helpers.fail_to_start)
    verifier = get_verifier("math", n_workers=1)
    try:
        results = verifier.verify_batch([UNDECIDED[0], r"\boxed{2x}", r"\boxed{3}"], [UNDECIDED[1], "x+x", "3"])
        assert [r.score for r in results[:2]] == [None, None]
        assert all(r.reason.startswith("internal_error: unavailable: the worker pool failed") for r in results[:2])
        assert (results[2].score, results[2].reason) == (1.0, "correct")  # decided without a worker
    finally:
        verifier.close()


def test_a_bug_in_extraction_is_a_comparison_error_not_a_wrong_answer(math_verifier, monkeypatch):
    """A bug that this answer triggers and the reference's own answer does not: 0, told apart from wrong."""
    import trl_grpo_ext.verifiers.math.verifier as module

    extract_answer = module.extract_answer

    def broken_extraction(completion, *args, **kwargs):
        if "3" in completion:
            raise KeyError("a bug in extraction")
        return extract_answer(completion, *args, **kwargs)

    monkeypatch.setattr(module, "extract_answer", broken_extraction)
    broken, ok, right = math_verifier.verify_batch([r"\boxed{3}", 123, r"\boxed{2}"], ["2", "2", "2"])
    assert (broken.score, broken.reason) == (0.0, "comparison_error: KeyError")
    assert (
        broken.details["error"] == "KeyError: 'a bug in extraction'"
        and "broken_extraction" in broken.details["traceback"]
    )
    assert (ok.score, ok.reason) == (0.0, "bad_completion: expected str, got int")
    assert (right.score, right.reason) == (1.0, "correct")


def test_a_bug_that_the_references_own_answer_meets_is_the_verifiers_failure(math_verifier, monkeypatch):
    """Extraction broken for every text: 0 would read as "every answer is wrong" and train on it; it is None."""
    import trl_grpo_ext.verifiers.math.verifier as module

    def broken_extraction(*args, **kwargs):
        raise KeyError("a bug in extraction")

    monkeypatch.setattr(module, "extract_answer", broken_extraction)
    broken = math_verifier.verify(r"\boxed{41}", "41")  # a text the shared verifier has not remembered
    assert broken.score is None and broken.is_internal_error
    assert broken.reason == "internal_error: raises_on_the_reference: KeyError: 'a bug in extraction'"
    assert "broken_extraction" in broken.details["traceback"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (r"\begin{pmatrix}1&2\end{pmatrix}+1", "comparison_error: TypeError"),  # sympy raises building matrix + scalar
        (r"x +* 2", "unparseable: cannot parse 'x +* 2'"),  # the parser's own "not valid LaTeX"
    ],
)
def test_only_invalid_latex_is_unparseable(math_verifier, answer, reason):
    """Before, any exception of the parser or of sympy read as `unparseable`: a bug looked like a bad answer."""
    result = math_verifier.verify(rf"\boxed{{{answer}}}", "x+2")
    assert result.score == 0.0 and result.reason.startswith(reason)
    if reason.startswith("comparison_error"):
        assert result.details["error"] == "TypeError: Mix of Matrix and Scalar symbols"
