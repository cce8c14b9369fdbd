"""Judge side of unittest TestCases: run through the judge's own unittest machinery, reported per test method.

The loader, `setUp`/`tearDown`, `setUpClass`, `subTest`, `skip` and `expectedFailure` are unittest's; only the result
object is ours, and it turns unittest's events into units of the tally (formats_units.py). Nothing here comes
from the candidate's process: its `unittest`, patched or not, is never used.

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import unittest

from formats_units import UnitTally


def run_test_case(cls: type, tally: UnitTally, broken=None) -> None:
    """A unittest.TestCase through unittest's own machinery (setUp, setUpClass, subTest, skips), reported per method.
    `broken`: the module's set-up that failed (formats_runner.SetupFailed), which fails every method, as unittest
    does after a failed `setUpModule`."""
    loader = unittest.TestLoader()
    units = [f"{cls.__name__}.{name}" for name in loader.getTestCaseNames(cls)]
    for unit in units:
        tally.expect(unit)
    if broken is not None:
        for unit in units:
            tally.failed(unit, broken.exc)
        return
    loader.loadTestsFromTestCase(cls).run(_TallyResult(tally, units))


class _TallyResult(unittest.TestResult):
    """A test method passes when it succeeded and none of its subtests failed; skipped and expected failures are not
    counted; an unexpected success fails, as `unittest` reports it. Errors of setUpClass fail the class's methods, a
    SkipTest there skips them."""

    def __init__(self, tally: UnitTally, units: list[str]):
        super().__init__()
        self.tally = tally
        self.units = units
        self.reported: set[str] = set()

    @staticmethod
    def _unit(test) -> str | None:
        if isinstance(test, unittest.TestCase):
            return f"{type(test).__name__}.{test._testMethodName}"
        return None

    def _error(self, test, err) -> None:
        unit = self._unit(test)
        exc = err[1] if err[1] is not None else err[0]()
        self.tally.failed(unit, exc) if unit else self.tally.note(str(test), exc)
        if self.tally.unusable:
            self.stop()

    addError = addFailure = _error

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._error(test, err)

    def addSuccess(self, test):
        self.tally.passed(self._unit(test))

    def addSkip(self, test, reason):
        unit = self._unit(test)
        for skipped in [unit] if unit else [u for u in self.units if u not in self.reported]:
            self.tally.skipped(skipped)

    def startTest(self, test):
        super().startTest(test)
        self.reported.add(self._unit(test))

    def addExpectedFailure(self, test, err):
        self.tally.skipped(self._unit(test))

    def addUnexpectedSuccess(self, test):
        self.tally.failed(self._unit(test), AssertionError("unexpected success of a test marked expectedFailure"))
