"""In CI (`CI=true`) no test skips: a skip there would hide a missing sandbox, root or ../shared behind a green run.

Loaded by tests/conftest.py. Outside CI a test may skip where this machine lacks what it needs (bubblewrap, root,
the public data in ../shared), and the end of the run says how many did and why. In CI each such skip, including a
module skipped at import, is turned into a failure that names its reason. `.ci/run` sets TRL_GRPO_EXT_SKIP_LOG to a
file where each session appends its skips, and prints their number and reasons when the whole run ends.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}
SKIP_LOG_VARIABLE = "TRL_GRPO_EXT_SKIP_LOG"

_skips: list[tuple[str, str]] = []  # (test id, reason) of each skip of this session, failed in CI or not


def cannot_run_here(reason: str) -> NoReturn:
    """Skip a test that this machine cannot run (reason: what is missing); in CI, fail it."""
    if IN_CI:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
        _skips.append((test, reason))
        pytest.fail(f"CI must run this test, but {reason}", pytrace=False)
    pytest.skip(reason)


def skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _record(report) -> bool:
    """Record a skip; whether the report is one."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return False
    _skips.append((report.nodeid, skip_reason(report)))
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if _record(report) and IN_CI:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every test must run (CI=true): {skip_reason(report)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # A module skipped at import stays a skip here (a failed collection would stop the whole run); in CI the
    # session then fails at its end (pytest_sessionfinish).
    _record((yield).get_result())


def pytest_sessionfinish(session, exitstatus):
    if IN_CI and _skips and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    reasons = Counter(reason for _, reason in _skips)
    verdict = " (failed: CI allows none)" if IN_CI and _skips else ""
    terminalreporter.write_sep("-", f"{len(_skips)} skipped tests{verdict}")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count} x {reason}")
    log = os.environ.get(SKIP_LOG_VARIABLE)
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.writelines(f"{nodeid}\t{' '.join(reason.split())}\n" for nodeid, reason in _skips)
