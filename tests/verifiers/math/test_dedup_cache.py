"""The `math` verifier decides each question of a batch once and keeps worker verdicts in a bounded cache: same
verdicts and reasons item for item, stats per call, failures never cached."""

import json
import random
import threading
from pathlib import Path

import pytest

from trl_grpo_ext.verifiers import as_reward_function, get_verifier
from trl_grpo_ext.verifiers.core.cache import ENTRY_OVERHEAD_BYTES, estimate_bytes
from trl_grpo_ext.verifiers.core.deadline_pool import TaskOutcome
from trl_grpo_ext.verifiers.math import verifier as verifier_module
from trl_grpo_ext.verifiers.math.remembered import Remembered

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "math_equivalence"
REFERENCE = "x^2+2x+1"
# 8 completions, 3 distinct answers: two need a worker ((x+1)^2, x^2), one is decided in-process (the same string).
GROUP = [r"\boxed{(x+1)^2}"] * 4 + [r"\boxed{x^2+2x+1}"] * 2 + [r"\boxed{x^2}", r"The answer is $\boxed{x^2}$."]


def fake_workers(outcome: TaskOutcome, asked: list | None = None):
    """A stand-in for the verifier's `_compare_in_workers`: every question gets `outcome`; `asked` records how many
    questions each batch that had any sent."""

    def compare(pair_lists):
        pair_lists = list(pair_lists)  # a generator: the batch's items are prepared as it is consumed
        if pair_lists and asked is not None:
            asked.append(len(pair_lists))
        return [outcome] * len(pair_lists)

    return compare


@pytest.fixture(scope="module")
def verifier():
    verifier = get_verifier("math", timeout_s=5.0, n_workers=1)
    yield verifier
    verifier.close()


def test_a_group_of_8_with_3_distinct_answers(verifier):
    verifier.clear_cache()
    results, stats = verifier.verify_batch_with_stats(GROUP, [REFERENCE] * 8)
    assert [r.score for r in results] == [1.0] * 6 + [0.0] * 2
    assert stats.items == 8 and stats.duplicates == 5 and stats.dedup_rate == 5 / 8
    assert (stats.cache_lookups, stats.cache_hits) == (2, 0)  # two distinct worker questions, a cold cache
    assert len(stats.item_seconds) == 8 and all(s >= 0 for s in stats.item_seconds)
    again, stats = verifier.verify_batch_with_stats(GROUP, [REFERENCE] * 8)
    assert again == results
    assert (stats.cache_lookups, stats.cache_hits) == (2, 2)


def test_answers_that_normalise_alike_are_one_question(verifier):
    completions = [r"\boxed{\dfrac{x}{3}}", r"\boxed{\frac{x}{3}}", r"So $\boxed{\tfrac{x}{3}}$.", r"\frac{x}{4}"]
    results, stats = verifier.verify_batch_with_stats(completions, ["x/3"] * 4)
    assert stats.duplicates == 2  # three texts of one question, and another question
    assert [r.score for r in results] == [1.0, 1.0, 1.0, 0.0]
    assert [r.extracted for r in results] == [r"\dfrac{x}{3}", r"\frac{x}{3}", r"\tfrac{x}{3}", r"\frac{x}{4}"]
    assert [r.details["how"] for r in results] == ["boxed", "boxed", "boxed", "bare"]


def test_the_reward_function_logs_the_batch_metrics():
    reward = as_reward_function("math", n_workers=1, start_workers=False)
    try:
        metrics = {}
        reward(completions=GROUP, answer=[REFERENCE] * 8, log_metric=metrics.__setitem__)
        assert metrics["math/dedup_rate"] == 5 / 8 and metrics["math/cache_hit_rate"] == 0.0
        assert metrics["math/verify_time_s_max"] <= metrics["math/verify_time_s"]
        assert (
            metrics["math/verify_time_s_p50"] <= metrics["math/verify_time_s_p95"] <= metrics["math/verify_time_s_max"]
        )
        reward(completions=GROUP, answer=[REFERENCE] * 8, log_metric=metrics.__setitem__)
        assert metrics["math/cache_hit_rate"] == 1.0
    finally:
        reward.verifier.close()


def test_stats_of_concurrent_calls_do_not_mix(verifier):
    """Two threads verify different batches at once, many times: each call's stats describe its own batch."""
    batches = {
        "group": (GROUP, [REFERENCE] * 8, 8, 5),
        "unique": ([rf"\boxed{{{i}}}" for i in range(5)], [str(i) for i in range(5)], 5, 0),
    }
    barrier, failures = threading.Barrier(2), []

    def run(name: str) -> None:
        completions, references, items, duplicates = batches[name]
        barrier.wait()
        for _ in range(20):
            results, stats = verifier.verify_batch_with_stats(completions, references)
            if (stats.items, stats.duplicates, len(stats.item_seconds), len(results)) != (
                items,
                duplicates,
                items,
                items,
            ):
                failures.append((name, stats))

    threads = [threading.Thread(target=run, args=(name,)) for name in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize("status", ["timeout", "crashed", "stalled", "unavailable", "error"])
def test_failures_and_timeouts_are_never_cached(monkeypatch, status):
    verifier = get_verifier("math", n_workers=1)
    asked = []
    outcome = TaskOutcome(status, error="boom", error_type="RecursionError")
    monkeypatch.setattr(verifier, "_compare_in_workers", fake_workers(outcome, asked))
    first = verifier.verify_batch([r"\boxed{(x+1)^2}"], [REFERENCE])
    second, stats = verifier.verify_batch_with_stats([r"\boxed{(x+1)^2}"], [REFERENCE])
    # each batch asks the question; where it raised, the reference against itself as well (whose failure it is)
    assert asked == ([1, 1] * 2 if status == "error" else [1, 1]) and (stats.cache_lookups, stats.cache_hits) == (1, 0)
    assert first == second and first[0].score in (0.0, None)


def test_a_decision_is_cached_and_cache_mb_0_turns_it_off(monkeypatch):
    for cache_mb, expected_asks in ((64, [1]), (0, [1, 1])):
        verifier = get_verifier("math", n_workers=1, cache_mb=cache_mb)
        asked = []
        monkeypatch.setattr(
            verifier, "_compare_in_workers", fake_workers(TaskOutcome("ok", value=(True, "symbolic")), asked)
        )
        first = verifier.verify_batch([r"\boxed{(x+1)^2}"], [REFERENCE])
        second, stats = verifier.verify_batch_with_stats([r"\boxed{(x+1)^2}"], [REFERENCE])
        assert asked == expected_asks and first == second and first[0].score == 1.0
        assert stats.cache_hit_rate == (1.0 if cache_mb else None)


def test_a_result_is_remembered_whole_across_batches(monkeypatch):
    """A (completion, reference) pair decided in an earlier batch is neither extracted nor judged again; with the cache
    off it is; results and stats are the same either way."""
    extracted = []
    extract = verifier_module.extract_answer
    monkeypatch.setattr(verifier_module, "extract_answer", lambda *a: extracted.append(a[0]) or extract(*a))
    runs = {}
    for cache_mb in (64, 0):
        verifier = get_verifier("math", n_workers=1, cache_mb=cache_mb)
        monkeypatch.setattr(verifier, "_compare_in_workers", fake_workers(TaskOutcome("ok", value=(True, "symbolic"))))
        extracted.clear()
        first = verifier.verify_batch_with_stats(GROUP, [REFERENCE] * 8)
        after_first = len(extracted)
        second = verifier.verify_batch_with_stats(GROUP + [r"\boxed{x}"], [REFERENCE] * 9)
        runs[cache_mb] = (first, second, after_first, len(extracted))
    (first, second, after_first, total), (first_off, second_off, _, total_off) = runs[64], runs[0]
    assert after_first == 4 and total == 5 and total_off == 9  # 4 distinct texts; then only the new one
    assert first[0] == first_off[0] and second[0] == second_off[0] and second[0][:8] == first[0]
    assert (second[1].items, second[1].duplicates) == (second_off[1].items, second_off[1].duplicates) == (9, 5)
    assert (second[1].cache_lookups, second[1].cache_hits) == (3, 2)  # two worker questions answered again, a new one


def test_references_that_are_not_text_are_verified_every_time(verifier):
    # Only two texts key a remembered result: a list, a number or None as reference is judged afresh (an unhashable
    # reference reached the cache's key before, and raised out of verify_batch).
    completions = ["0", r"\boxed{1}", r"\boxed{2}", "0"]
    references = [[], [1], 2, None]
    first = verifier.verify_batch(completions, references)
    assert first == verifier.verify_batch(completions, references)
    assert first[3].score is None and first[3].reason.startswith("unusable_reference")


def test_an_exception_on_an_answer_is_not_remembered(monkeypatch):
    verifier = get_verifier("math", n_workers=1)
    calls = []

    extract_answer = verifier_module.extract_answer

    def broken(completion, *args):
        if completion == r"\boxed{7}":
            calls.append(completion)
            raise RuntimeError("a bug this answer triggers")
        return extract_answer(completion, *args)

    monkeypatch.setattr(verifier_module, "extract_answer", broken)
    for _ in range(2):
        assert verifier.verify(r"\boxed{7}", "1").reason == "comparison_error: RuntimeError"
    assert len(calls) == 2


def test_a_bad_cache_mb_names_the_option():
    with pytest.raises(ValueError, match=r"cache_mb=-5 is not valid.*>= 0"):
        get_verifier("math", cache_mb=-5)


def test_the_cache_is_bounded_by_bytes(monkeypatch):
    verifier = get_verifier("math", n_workers=1, cache_mb=0.002)  # about 2 kB: a handful of verdicts
    monkeypatch.setattr(verifier, "_compare_in_workers", fake_workers(TaskOutcome("ok", value=(False, "different"))))
    verifier.verify_batch([rf"\boxed{{x^{{{i}}}}}" for i in range(3, 60)], [REFERENCE] * 57)
    assert 0 < len(verifier._verdicts) < 57 and verifier._verdicts.bytes <= 0.002 * 2**20


def public_pairs() -> list[dict]:
    if not DATA.is_dir():
        pytest.skip(f"the public math pairs are not at {DATA}")
    return [json.loads(line) for path in sorted(DATA.glob("*.jsonl")) for line in path.open() if line.strip()]


def test_public_pairs_get_the_same_results_with_and_without_dedup_and_cache():
    """Every item's full result (score, reason, extracted answer, details) is the same when verified alone with the
    cache off, in one batch (cold cache), again (warm cache), and inside a shuffled GRPO-shaped batch of repeats."""
    cases = public_pairs()
    preds, golds = [c["pred"] for c in cases], [c["gold"] for c in cases]
    alone_verifier = get_verifier("math", timeout_s=5.0, n_workers=2, cache_mb=0)
    batch_verifier = get_verifier("math", timeout_s=5.0, n_workers=2)
    try:
        alone = [alone_verifier.verify_batch([p], [g])[0] for p, g in zip(preds, golds)]
        cold = batch_verifier.verify_batch(preds, golds)
        warm, warm_stats = batch_verifier.verify_batch_with_stats(preds, golds)
        order = [i for i in range(len(cases)) for _ in range(3)]
        random.Random(0).shuffle(order)
        grpo, grpo_stats = batch_verifier.verify_batch_with_stats([preds[i] for i in order], [golds[i] for i in order])
        remembered = [
            (key, entry, size)
            for key, (entry, size) in batch_verifier._verdicts._entries.items()
            if isinstance(entry, Remembered)
        ]
    finally:
        alone_verifier.close()
        batch_verifier.close()
    # every result is remembered whole, and its cheap size errs high against `estimate_bytes`
    assert len(remembered) == len(set(zip(preds, golds))) - sum(r.reason.startswith("comparison_error") for r in cold)
    assert all(
        size >= estimate_bytes(key) + estimate_bytes(entry) + ENTRY_OVERHEAD_BYTES for key, entry, size in remembered
    )

    def comparable(result):  # a traceback's text names the frames it went through, which differ by call path
        return (
            result.score,
            result.reason,
            result.extracted,
            {k: v for k, v in result.details.items() if k != "traceback"},
        )

    assert [comparable(r) for r in cold] == [comparable(r) for r in alone]
    assert [comparable(r) for r in warm] == [comparable(r) for r in alone]
    assert [comparable(r) for r in grpo] == [comparable(alone[i]) for i in order]
    assert warm_stats.cache_hits == warm_stats.cache_lookups > 100
    assert grpo_stats.duplicates >= 2 * len(cases)
    agreed = sum((r.score == 1.0) == c["expected"] for r, c in zip(cold, cases))
    # The closed-form rule refuses three pairs labelled equal (`(9+1)` for 10, `\\sqrt[3]{8}` and `\\sqrt[4]{16}` for 2);
    # the final-answer model agrees on `17\\text{ any text}` and on a prose answer that stops mid-sentence. `\\$` reads
    # as a currency sign, but an equation chain without variables states its last number, which pays
    # `\\frac{1}{2} \\$ = \\frac{10}{9}` for 10/9.
    assert agreed == 492 and len(cases) == 518
