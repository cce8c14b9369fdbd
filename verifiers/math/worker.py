"""The math worker's entry points: what `MathVerifier` sends to its `DeadlinePool` workers, by reference.

A worker process starts from `core/deadline_pool_worker.py` and imports this module when it unpickles `warm_up` (its
initializer) and `compare_task` (each item): it is the worker's own entry into the package, so that the worker loads
the math it runs (sympy, latex2sympy2 and `compare.py` with its pieces) and nothing of the trainer's side (the
verifier, the registry, the reward adapter, the sandbox). Each function imports its side on first call, so that the
trainer's process, which imports this module with `verifier.py`, never loads sympy.
"""

from __future__ import annotations


def compare_task(groups: list[list[tuple[str, str]]], rel_tol: float, abs_tol: float) -> tuple[bool | None, str]:
    """Every group of pairs must be equal (one group per candidate answer): (verdict or None, how)."""
    from .compare import compare_all_task

    return compare_all_task(groups, rel_tol, abs_tol)


def warm_up() -> None:
    """Each worker's initializer: import sympy and warm its parser before the first batch (`warmup.py`)."""
    from .warmup import warm_up as warm

    warm()


def math_verify_task(completion: str, reference: str) -> bool:
    """math-verify's verdict on a completion (`verify(parse(reference), parse(completion))`), for the live audit's
    second opinion; a bare reference is read as inline math when plain parsing finds nothing in it. Its own
    timeouts (signals: a worker runs items on its main thread) and the pool's CPU deadline both hold."""
    from math_verify import parse, verify

    return bool(verify(parse(reference) or parse(f"${reference}$"), parse(completion)))
