"""The TRL and transformers versions the trainer's hooks are tested against, checked when a trainer is built.

`GRPOExtTrainer` overrides private methods of TRL's `GRPOTrainer` and of transformers' `Trainer`
(docs/trl_hooks.md): another version may rename them, change their arguments or what they return, and a run would
then train on wrong numbers without an error. `tests/trl_grpo_ext/test_trl_contract.py` checks every name and
signature the hooks rely on against the installed versions; these ranges are the ones that passed, and the same as
the dependencies of `pyproject.toml` (a test keeps them equal).
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

logger = logging.getLogger(__name__)

SUPPORTED_VERSIONS = {
    "trl": ">=1.16.0,<1.17",
    "transformers": ">=5.23,<5.26",
}
# Set to 1 to build a trainer with versions outside SUPPORTED_VERSIONS (a warning says which).
ALLOW_UNTESTED_VARIABLE = "TRL_GRPO_EXT_ALLOW_UNTESTED_VERSIONS"


def installed_versions() -> dict[str, str]:
    return {package: importlib.metadata.version(package) for package in SUPPORTED_VERSIONS}


def unsupported_versions(versions: dict[str, str]) -> list[str]:
    """One sentence for each package whose version is outside its supported range (pre-releases of a supported
    version count as that version)."""
    problems = []
    for package, specifier in SUPPORTED_VERSIONS.items():
        try:
            version = Version(versions[package])
        except InvalidVersion:
            problems.append(f"{package} {versions[package]} (not a version number; supported: {specifier})")
            continue
        if not SpecifierSet(specifier).contains(version, prereleases=True):
            problems.append(f"{package} {version} is installed, the supported range is {package}{specifier}")
    return problems


def check_supported_versions(versions: dict[str, str] | None = None) -> None:
    """Raise RuntimeError naming the supported ranges when TRL or transformers is outside them, unless the
    environment variable TRL_GRPO_EXT_ALLOW_UNTESTED_VERSIONS=1 allows it (then warn)."""
    problems = unsupported_versions(installed_versions() if versions is None else versions)
    if not problems:
        return
    message = (
        "GRPOExtTrainer overrides private methods of TRL's GRPOTrainer and transformers' Trainer, tested only with "
        f"{', '.join(p + s for p, s in SUPPORTED_VERSIONS.items())}: {'; '.join(problems)}."
    )
    if os.environ.get(ALLOW_UNTESTED_VARIABLE) == "1":
        logger.warning(
            "%s %s=1 is set, so the trainer is built anyway: run tests/trl_grpo_ext/test_trl_contract.py against "
            "these versions before trusting its numbers.",
            message,
            ALLOW_UNTESTED_VARIABLE,
        )
        return
    raise RuntimeError(
        f"{message} Install a supported version (pip install 'trl{SUPPORTED_VERSIONS['trl']}' "
        f"'transformers{SUPPORTED_VERSIONS['transformers']}'), or set {ALLOW_UNTESTED_VARIABLE}=1 to build the "
        "trainer anyway, after running tests/trl_grpo_ext/test_trl_contract.py against these versions."
    )


# transformers 5 renamed `gradient_checkpointing_enable`, `_disable` and `is_gradient_checkpointing` to their
# `activation_checkpointing` names; TRL 1.16 still calls the old names around every generation, which warns once per
# process and call site. Harmless (they forward to the new ones) and nothing a user can act on, so the trainer silences
# exactly these while its own `train` and `evaluate` run.
KNOWN_DEPRECATIONS = (
    r"`(gradient_checkpointing_enable|gradient_checkpointing_disable|is_gradient_checkpointing)` is deprecated",
)


@contextmanager
def known_deprecations_silenced() -> Iterator[None]:
    """While active, the KNOWN_DEPRECATIONS are not shown; on exit the process's warning filters are as they were.

    Entered once per `train` or `evaluate` call rather than around each generation: every change of the filters makes
    Python forget which warnings it has already shown once, so a narrower scope would repeat the user's own warnings
    at every step."""
    with warnings.catch_warnings():
        for message in KNOWN_DEPRECATIONS:
            warnings.filterwarnings("ignore", message=message, category=FutureWarning, module=r"transformers\.")
        yield


_ABSENT = object()


@contextmanager
def replaced_attribute(owner: object, name: str, value: object) -> Iterator[None]:
    """While active, `owner.name` is `value`; on exit the previous value is restored (or the attribute removed if
    there was none), whatever happened inside.

    How the trainer swaps a name of TRL's where TRL's code looks it up (a module-level function that `GRPOTrainer`
    calls): plain `setattr`, so product code needs no test tooling (`unittest.mock`). Not thread-safe: the
    replacement is seen by every thread while it lasts.
    """
    previous = owner.__dict__.get(name, _ABSENT) if hasattr(owner, "__dict__") else getattr(owner, name, _ABSENT)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if previous is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, previous)
