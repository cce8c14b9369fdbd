"""Build the `code` verifier for tests, skipping where this machine cannot run untrusted code safely."""

from __future__ import annotations

import os

from ci_skips import IN_CI, cannot_run_here

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.sandbox.uids import UIDS


def make_code_verifier(timeout_s: float, **options):
    """The verifier at its default isolation (bubblewrap, a cgroup per candidate). Where bubblewrap is missing, the
    default refuses to start: the suite then asks for isolation="rlimits" by name, as a user would, and the checks that
    only bubblewrap passes skip themselves; where cgroups are missing, it asks for cgroup=False by name. Skips where
    even that cannot run safely (root without a world-readable interpreter). In CI (`CI=true`) all of these fail
    instead: CI tests the full sandbox."""
    options = {"timeout_s": timeout_s, "workers": 2, **options}
    try:
        return get_verifier("code", **options)
    except RuntimeError as exc:
        if "cgroup=False" in str(exc) and "cgroup" not in options and not IN_CI:  # no cgroups: per-process limits
            return make_code_verifier(timeout_s, **options, cgroup=False)
        if options.get("isolation", "auto") != "auto" or "needs bubblewrap" not in str(exc) or IN_CI:
            cannot_run_here(str(exc))  # in CI the sandbox must be bubblewrap: a fallback would test less
    try:
        return get_verifier("code", **{**options, "isolation": "rlimits"})
    except RuntimeError as exc:
        cannot_run_here(str(exc))


# Reasons of a 0 that is not a verdict on the candidate (docs/verifiers.md): an attack or a wrong answer that scores 0
# for one of these has not been caught by the tests, it merely kept the verifier from finishing.
NOT_A_VERDICT = ("timeout", "judge_error", "internal_error", "comparison_error", "unusable_reference")


def assert_wrong_answer(result, expected_reason: str | None = None) -> None:
    """A 0 for the right reason: `expected_reason` (a prefix) when given, else any verdict on the candidate."""
    assert result.score == 0.0, (result.reason, result.details)
    if expected_reason is not None:
        assert result.reason.startswith(expected_reason), (result.reason, result.details)
    else:
        assert not result.reason.startswith(NOT_A_VERDICT), (result.reason, result.details)


def sandbox_uid_processes() -> list[int]:
    """Live processes running as a sandbox uid this process holds: candidates (warm sandboxes still run as root until
    they get a job). Other processes on the machine hold other uids, and their candidates are not ours to count.
    Zombies are left out: they run no code and only wait for the kernel to reap them, which lags under load."""
    ours = UIDS.held()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = open(f"/proc/{pid}/status").read()
            uid = int(status.split("Uid:")[1].split()[0])
            state = status.split("State:")[1].split()[0]
        except (OSError, IndexError, ValueError):
            continue
        if uid in ours and state != "Z":
            found.append(int(pid))
    return found


def assert_correct(verifier, code: str, reference) -> None:
    """`code` scores 1.0 with reason `correct`."""
    result = verifier.verify(code, reference)
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details.get("failures"))


def assert_wrong(verifier, code: str, reference, reason: str = "wrong", failure: str | None = None) -> None:
    """`code` scores 0 with a reason that starts with `reason` and, when given, `failure` in its first failure."""
    result = verifier.verify(code, reference)
    failures = result.details.get("failures")
    assert result.score == 0.0 and result.reason.startswith(reason), (result.reason, failures)
    if failure is not None:
        assert failures and failure in str(failures[0].get("error")), failures
