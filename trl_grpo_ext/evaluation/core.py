"""The evaluation core: sample n completions per prompt, score them with registered verifiers, reduce per prompt.

`evaluate_prompts` takes a sampler (`sampling.TransformersSampler`, or any callable with its signature), the rows,
and the verifiers; `summarize` reduces the per-prompt results to means with bootstrap intervals over prompts.

A sample is correct when every verifier gives it full marks (score >= 1; partial credit is not a pass). A sample a
verifier could not score (None: an unusable reference or the verifier's own failure) is not correct and is counted
in `unscored`, so a broken verifier lowers the figures visibly instead of raising them. The first verifier's
extracted answers are the votes of maj@k, or the normalised completions where it extracted none (`votes`,
`estimators`, `equivalence`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from trl_grpo_ext.verifiers import VerificationResult

from .equivalence import is_full_marks
from .estimators import check_k, maj_at_k, pass_at_k, vote
from .intervals import bootstrap_mean_ci
from .votes import EXTRACTED, UNAVAILABLE, UNAVAILABLE_REASON, VOTE_SOURCES, normalise_completion, vote_classes

# sampler(row index, prompt, n, greedy) -> n completion texts; the index seeds the prompt's draws.
Sampler = Callable[[int, Any, int, bool], list[str]]


@dataclass(frozen=True)
class EvalVerifier:
    """A verifier (`get_verifier(name, **options)`) and the dataset column holding its references."""

    name: str
    verifier: Any
    reference_column: str


@dataclass
class PromptResult:
    """One prompt's figures. `pass_at` / `maj_at`: k -> estimate; `greedy_correct`: None unless asked."""

    index: int
    n: int
    correct: int
    unscored: int
    pass_at: dict[int, float]
    maj_at: dict[int, float | None]  # None: unavailable (`votes`)
    majority_answer: str | None
    majority_correct: float | None
    greedy_correct: bool | None = None
    answers: list[str | None] = field(default_factory=list)
    ungrouped: int = 0  # pairs of distinct answers maj@k's grouping got no verdict on (equivalence.answer_classes)
    votes: str = EXTRACTED  # what the samples voted with in maj@k (`votes.VOTE_SOURCES`)
    samples: list[dict] | None = None  # with keep_completions: each completion with its verdicts (`sample_records`)

    def to_json(self) -> dict:
        row = asdict(self)
        del row["samples"]  # written to a file of their own (`runner.write_results`)
        row["pass_at"] = {f"pass@{k}": v for k, v in self.pass_at.items()}
        row["maj_at"] = {f"maj@{k}": v for k, v in self.maj_at.items()}
        return {**{k: v for k, v in row.items() if k not in ("pass_at", "maj_at")}, **row["pass_at"], **row["maj_at"]}


def check_settings(num_samples: int, ks: Sequence[int]) -> None:
    """ValueError for a sample count below 1 or a k outside 1..num_samples."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples={num_samples!r} must be an integer >= 1.")
    if not ks:
        raise ValueError("k: give at least one k, e.g. 1.")
    for k in ks:
        check_k(k, num_samples)


def verdicts(completions: list[str], row: dict, verifiers: Sequence[EvalVerifier]) -> list[list[Any]]:
    """Per verifier, the VerificationResult of each completion against the row's reference."""
    out = []
    for spec in verifiers:
        if spec.reference_column not in row:
            raise KeyError(f"verifier {spec.name!r} needs the column {spec.reference_column!r}; row has {list(row)}.")
        references = [row[spec.reference_column]] * len(completions)
        try:
            results = list(spec.verifier.verify_batch(completions, references))
            if len(results) != len(completions):
                raise TypeError(f"verify_batch returned {len(results)} results for {len(completions)} completions")
        except Exception as exc:  # the verifier's own failure: no verdict for these samples, never a crash or a 0
            results = [VerificationResult(None, f"internal_error: {type(exc).__name__}: {exc}")] * len(completions)
        out.append(results)
    return out


def sample_is_correct(results_per_verifier: list[list[Any]], i: int) -> bool:
    return all(is_full_marks(results[i].score) for results in results_per_verifier)


def score_prompt(
    index: int,
    completions: list[str],
    row: dict,
    verifiers: Sequence[EvalVerifier],
    ks: Sequence[int],
    greedy_completion: str | None = None,
    keep_completions: bool = False,
) -> PromptResult:
    """Score one prompt's samples (and its greedy completion, when given) and reduce them to its figures; with
    `keep_completions`, keep each completion with its verdicts in `samples`."""
    results = verdicts(completions + ([greedy_completion] if greedy_completion is not None else []), row, verifiers)
    n = len(completions)
    correct = [sample_is_correct(results, i) for i in range(n)]
    unscored = sum(any(r[i].score is None for r in results) for i in range(n))
    extracted = [r.extracted for r in results[0][:n]]
    figures = sample_figures(completions, extracted, correct, verifiers[0].verifier, ks)
    return PromptResult(
        index=index,
        n=n,
        correct=sum(correct),
        unscored=unscored,
        **figures,
        greedy_correct=None if greedy_completion is None else sample_is_correct(results, n),
        answers=extracted,
        samples=sample_records(completions, greedy_completion, results, verifiers) if keep_completions else None,
    )


def sample_records(
    completions: list[str], greedy_completion: str | None, results: list[list[Any]], verifiers: Sequence[EvalVerifier]
) -> list[dict]:
    """One record per completion (the greedy one last, `"sample": "greedy"`): its text, whether it is correct, and
    each verifier's score, reason and extracted answer."""
    texts = completions + ([greedy_completion] if greedy_completion is not None else [])
    return [
        {
            "sample": i if i < len(completions) else "greedy",
            "completion": text,
            "correct": sample_is_correct(results, i),
            "verdicts": [
                {"verifier": spec.name, "score": r[i].score, "reason": r[i].reason, "extracted": r[i].extracted}
                for spec, r in zip(verifiers, results)
            ],
        }
        for i, text in enumerate(texts)
    ]


def sample_figures(
    completions: Sequence[str],
    extracted: Sequence[str | None],
    correct: Sequence[bool],
    verifier: Any,
    ks: Sequence[int],
) -> dict[str, Any]:
    """pass@k and maj@k of one prompt's samples, its majority answer with the vote's credit, and what the samples
    voted with (`votes`: maj@k None when unavailable)."""
    n = len(completions)
    source, classes, ungrouped = vote_classes(completions, extracted, correct, verifier)
    figures = {"pass_at": {k: pass_at_k(n, sum(correct), k) for k in ks}, "ungrouped": ungrouped, "votes": source}
    if source == UNAVAILABLE:
        return {**figures, "maj_at": dict.fromkeys(ks), "majority_answer": None, "majority_correct": None}
    correct_classes = {c for c, ok in zip(classes, correct) if c is not None and ok}
    winner, credit = vote(classes, correct_classes)
    first = None if winner is None else classes.index(winner)
    shown = extracted if source == EXTRACTED else [normalise_completion(c) for c in completions]
    return {
        **figures,
        "maj_at": {k: maj_at_k(classes, correct_classes, k) for k in ks},
        "majority_answer": None if first is None else shown[first],
        "majority_correct": credit,
    }


def evaluate_prompts(
    rows: Sequence[dict],
    indices: Sequence[int],
    sampler: Sampler,
    verifiers: Sequence[EvalVerifier],
    num_samples: int,
    ks: Sequence[int],
    greedy: bool = False,
    prompt_column: str = "prompt",
    progress: Callable[[int], Any] | None = None,
    prompts_per_call: int = 1,
    keep_completions: bool = False,
) -> list[PromptResult]:
    """The figures of `rows[i]` for each i of `indices` (the rows this process evaluates); `progress(1)` per prompt.
    `prompts_per_call` consecutive indices are sampled together (`draw`); `keep_completions`: see `score_prompt`."""
    check_settings(num_samples, ks)
    if prompts_per_call < 1:
        raise ValueError(f"prompts_per_call={prompts_per_call} must be >= 1.")
    if not verifiers:
        raise ValueError("evaluation needs at least one verifier.")
    out = []
    for start in range(0, len(indices), prompts_per_call):
        chunk = list(indices[start : start + prompts_per_call])
        samples = draw(sampler, [(i, rows[i][prompt_column]) for i in chunk], num_samples, False)
        greedy_samples = draw(sampler, [(i, rows[i][prompt_column]) for i in chunk], 1, True) if greedy else None
        for position, index in enumerate(chunk):
            greedy_completion = greedy_samples[position][0] if greedy_samples else None
            completions = list(samples[position])
            out.append(
                score_prompt(index, completions, rows[index], verifiers, ks, greedy_completion, keep_completions)
            )
            if progress is not None:
                progress(1)
    return out


def draw(sampler: Sampler, items: list[tuple[int, Any]], n: int, greedy: bool) -> list[list[str]]:
    """n completions of each (row index, prompt): in one call where the sampler has `sample_many`, else one call a
    prompt."""
    if len(items) > 1 and hasattr(sampler, "sample_many"):
        return sampler.sample_many(items, n, greedy)
    return [sampler(index, prompt, n, greedy) for index, prompt in items]


def summarize(results: Sequence[PromptResult], ks: Sequence[int], seed: int = 0) -> dict:
    """{"pass@k": {"mean", "ci95", "n"}, "maj@k": {...}, ["greedy": {...}], "n_prompts", "n_samples", ...}."""
    summary: dict[str, Any] = {}
    for k in ks:
        summary[f"pass@{k}"] = bootstrap_mean_ci([r.pass_at[k] for r in results], seed)
    summary.update(maj_summary(results, ks, seed))
    if results and results[0].greedy_correct is not None:
        summary["greedy"] = bootstrap_mean_ci([float(r.greedy_correct) for r in results], seed)
    summary["n_prompts"] = len(results)
    summary["n_samples"] = results[0].n if results else 0
    summary["unscored_samples"] = sum(r.unscored for r in results)
    summary["ungrouped_answer_pairs"] = sum(r.ungrouped for r in results)
    summary["interval"] = f"95% percentile bootstrap over prompts, seed {seed}"
    return summary


def maj_summary(results: Sequence[PromptResult], ks: Sequence[int], seed: int) -> dict[str, Any]:
    """{"maj@k": {"mean", "ci95", "n"} for each k, "maj_votes": {vote source: prompts}}; each maj@k is
    {"mean": None, "ci95": None, "n": P, "unavailable": reason} when any prompt's is unavailable."""
    counts = {source: sum(r.votes == source for r in results) for source in VOTE_SOURCES}
    out: dict[str, Any] = {}
    for k in ks:
        if counts[UNAVAILABLE]:
            reason = f"{counts[UNAVAILABLE]} of {len(results)} prompts: {UNAVAILABLE_REASON}"
            out[f"maj@{k}"] = {"mean": None, "ci95": None, "n": len(results), "unavailable": reason}
        else:
            out[f"maj@{k}"] = bootstrap_mean_ci([r.maj_at[k] for r in results], seed)
    return {**out, "maj_votes": counts}


def grouped_figures(
    correct: Sequence[bool],
    completions: Sequence[str],
    extracted: Sequence[str | None],
    group_size: int,
    ks: Sequence[int],
    verifier: Any,
) -> dict[str, list[float]]:
    """{"pass@k": [one value per group], ..., "maj@k": [...], "maj_ungrouped": [...]} for samples laid out as
    consecutive groups of `group_size` completions of one prompt (GRPOTrainer's layout); `maj_ungrouped` is the number
    of answer pairs of the group the verifier gave no verdict on (`equivalence.answer_classes`). Where maj@k is
    unavailable for a group (`votes`), the batch gives no maj@k values, with a warning."""
    if len(correct) % group_size:
        raise ValueError(f"{len(correct)} samples do not split into groups of {group_size}.")
    out: dict[str, list[float]] = {f"{kind}@{k}": [] for kind in ("pass", "maj") for k in ks}
    out["maj_ungrouped"] = []
    for start in range(0, len(correct), group_size):
        group = slice(start, start + group_size)
        figures = sample_figures(completions[group], extracted[group], correct[group], verifier, ks)
        for k in ks:
            out[f"pass@{k}"].append(figures["pass_at"][k])
            out[f"maj@{k}"].append(figures["maj_at"][k])
        out["maj_ungrouped"].append(float(figures["ungrouped"]))
    if any(value is None for k in ks for value in out[f"maj@{k}"]):
        warnings.warn(f"eval maj@k is not logged for this batch: {UNAVAILABLE_REASON}.", stacklevel=2)
        out.update({f"maj@{k}": [] for k in ks})
    return out
