"""The local backend: the verifier built in this process; its worker processes, if any, are its own."""

from __future__ import annotations

import inspect
from typing import Any

from ..core.contract import FunctionVerifier, Verifier, accepted_options, check_options


def build_verifier(name: str, obj: Any, options: dict[str, Any]) -> Verifier:
    """The verifier `obj` (a registered class or function) registered as `name`, built in this process."""
    if not isinstance(obj, type):
        return FunctionVerifier(obj, name, **options)
    check_options(obj, name, options)
    try:
        verifier = obj(**options)
    except TypeError as exc:  # e.g. an option of the wrong type, checked inside __init__
        try:
            accepted = ", ".join(accepted_options(inspect.signature(obj))) or "none"
        except (TypeError, ValueError):
            accepted = "see its docstring"
        raise ValueError(
            f"verifier {name!r} rejected the options {options}: {exc}; accepted options: {accepted}."
        ) from exc
    verifier.name = verifier.name or name
    return verifier
