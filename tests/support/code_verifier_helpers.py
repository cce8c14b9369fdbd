"""Build the `code` verifier for tests, skipping where this machine cannot run untrusted code safely."""

from __future__ import annotations

import os

import pytest

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.sandbox.uids import UIDS


def make_code_verifier(timeout_s: float, **options):
    """The verifier at its default isolation (bubblewrap). Where bubblewrap is missing, the default refuses to start:
    the suite then asks for isolation="rlimits" by name, as a user would, and the checks that only bubblewrap passes
    skip themselves. Skips where even that cannot run safely (root without a world-readable interpreter)."""
    options = {"timeout_s": timeout_s, "workers": 2, **options}
    try:
        return get_verifier("code", **options)
    except RuntimeError as exc:
        if "cgroup=False" in str(exc) and "cgroup" not in options:  # no cgroups here: per-process limits, by name
            return make_code_verifier(timeout_s, **options, cgroup=False)
        if options.get("isolation", "auto") != "auto" or "needs bubblewrap" not in str(exc):
            pytest.skip(str(exc))
    try:
        return get_verifier("code", **{**options, "isolation": "rlimits"})
    except RuntimeError as exc:
        pytest.skip(str(exc))


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
