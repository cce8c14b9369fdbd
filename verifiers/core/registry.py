"""The registry of verifiers: `register_verifier`, the entry-point group, `get_verifier` and `list_verifiers`.

`get_verifier` chooses where the verifier runs; the backends (`../backends/`) depend on the contract only, so the
dependency runs one way: registry -> backends -> contract.

The built-in verifiers register themselves when their module is imported, and each module pulls in its own machinery
(the sandbox and the judge for `code`): the registry imports one by name (`BUILTIN_MODULES`) only when that name is
registered, asked for or listed, as it loads the entry points of third-party verifiers, so that importing the
package loads neither and a process that verifies math never loads the code verifier.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from ..backends.local import build_verifier
from ..backends.ray import RayVerifier
from .contract import Verifier, check_options
from .plugins import Registry, first_doc_line

logger = logging.getLogger("trl_grpo_ext.verifiers")

ENTRY_POINT_GROUP = "trl_grpo_ext.verifiers"

_VERIFIERS = Registry("verifier")
_entry_points_loaded = False
# The built-in verifiers, by name: the module whose import registers each (relative to the verifiers' package).
BUILTIN_MODULES = {"math": ".math.verifier", "code": ".code.verifier"}
_builtins_loading: set[str] = set()


def _load_builtins(*names: str) -> None:
    """Import the modules of the built-in verifiers among `names` (all of them with none), once each, before anything
    reads or writes those names: a user's `register_verifier("math", override=True)` then replaces the built-in, as
    it did when importing the package registered both."""
    package = __package__.rpartition(".")[0]
    for name in names or tuple(BUILTIN_MODULES):
        if name in BUILTIN_MODULES and name not in _builtins_loading:
            _builtins_loading.add(name)  # the module's own registration comes back here: nothing more to load
            try:
                importlib.import_module(BUILTIN_MODULES[name], package)
            except BaseException:
                _builtins_loading.discard(name)  # a later call tries again, and fails the same way, loudly
                raise


def register_verifier(name: str, *, override: bool = False) -> Callable[[Any], Any]:
    """Register a `Verifier` subclass or a plain scoring function under `name`.

    ```python
    @register_verifier("exact")
    def exact(completion, reference):
        "Exact string match after stripping whitespace."
        return float(completion.strip() == str(reference).strip())
    ```
    """
    if isinstance(name, str):
        _load_builtins(name)
    return _VERIFIERS.register(name, override=override)


def _load_entry_points() -> None:
    """Import third-party verifiers declared under the `trl_grpo_ext.verifiers` entry-point group."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _VERIFIERS or ep.name in BUILTIN_MODULES:  # the built-ins keep their names
            continue
        try:
            _VERIFIERS.register(ep.name)(ep.load())
        except Exception as exc:
            logger.warning("could not load verifier entry point %r (%s): %s", ep.name, ep.value, exc)


BACKENDS = ("local", "ray")


def get_verifier(
    name: str, backend: str = "local", ray_address: str | None = None, ray_actors: int | None = None, **options: Any
) -> Verifier:
    """Build the verifier registered as `name`, with its options as keyword arguments.

    An option the verifier does not accept fails here with a ValueError that names the accepted ones.

    `backend="local"` (the default) verifies in this process and its worker processes. `backend="ray"` splits each
    batch across Ray actors, each running this same verifier with the same options (its own worker pools and
    isolation, on its own node): `ray_address` is the cluster to join (None: the one this process already uses,
    else `RAY_ADDRESS`, else a new local one), `ray_actors` the number of actors (None: one per node with CPUs).
    See `backends/ray.py`.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not valid. Valid choices: {', '.join(BACKENDS)}.")
    if backend == "local" and (ray_address is not None or ray_actors is not None):
        raise ValueError("ray_address and ray_actors apply to backend='ray' only; pass backend='ray' to use them.")
    _load_builtins(*([name] if name in BUILTIN_MODULES else []))  # an unknown name: every choice, for the error
    _load_entry_points()
    obj = _VERIFIERS.get(name)
    if backend == "ray":
        if not isinstance(obj, type):
            check_options(obj, name, options, leading=2)
        else:
            check_options(obj, name, options)
        return RayVerifier(name, obj, options, address=ray_address, actors=ray_actors)
    return build_verifier(name, obj, options)


def list_verifiers() -> dict[str, str]:
    """Registered verifier names with a one-line description each."""
    _load_builtins()
    _load_entry_points()
    return {name: first_doc_line(obj) for name, obj in ((n, _VERIFIERS.get(n)) for n in _VERIFIERS.names())}
