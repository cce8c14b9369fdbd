"""One registry pattern for advantage estimators, KL estimators and verifiers.

Each kind of plug-in has a `Registry`; its module exposes `register_x(name)`, `get_x(name)` and `list_x()` built on it.
Pure Python, standard library only. It lives here, in the lowest layer, because the verifiers import nothing of
`trl_grpo_ext` outside themselves; the estimator registries, the datasets and the commands import it from here.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Any


def first_doc_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def suggest(name: object, choices: list[str]) -> str:
    """ " Did you mean 'x'?" for the closest of `choices` to a mistyped `name`, or "" when none is close."""
    close = difflib.get_close_matches(name, choices, n=1) if isinstance(name, str) else []
    return f" Did you mean {close[0]!r}?" if close else ""


def invalid_choice(field: str, value: object, choices: list[str] | tuple[str, ...], what: str = "valid") -> str:
    """The error message for a config `field` set to a `value` outside `choices`: field, value, closest, choices."""
    return f"{field}={value!r} is not {what}.{suggest(value, list(choices))} Valid choices: {', '.join(choices)}."


class Registry:
    """A name -> object table whose errors name the kind, the bad name and the valid choices."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Any] = {}

    def register(self, name: str, *, override: bool = False) -> Callable[[Any], Any]:
        if not isinstance(name, str) or not name:
            raise ValueError(f"A {self.kind} name must be a non-empty string, got {name!r}.")

        def decorator(obj: Any) -> Any:
            if name in self._entries and not override and self._entries[name] is not obj:
                raise ValueError(
                    f"A {self.kind} named {name!r} is already registered; pass override=True to replace it, "
                    f"or choose another name."
                )
            self._entries[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> Any:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise ValueError(
                f"Unknown {self.kind} {name!r}.{suggest(name, self.names())} Valid choices: {', '.join(self.names())}."
            ) from None

    def validate(self, field: str, name: str) -> None:
        """Raise if `name` is not registered, naming the config `field` it came from."""
        if name not in self._entries:
            raise ValueError(invalid_choice(field, name, self.names(), what=f"a registered {self.kind}"))

    def names(self) -> list[str]:
        return list(self._entries)

    def describe(self) -> dict[str, str]:
        """Name -> first line of the docstring, in registration order."""
        return {name: first_doc_line(obj) for name, obj in self._entries.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._entries
