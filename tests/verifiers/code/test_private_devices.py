"""Concurrent candidates forked from one warm interpreter do not share a /dev/pts instance.

A candidate that opens a pseudo-terminal and makes it world-writable holds it while a neighbour of the same fork
server looks at /dev/pts for two seconds: the neighbour sees only its own `ptmx`, and the holder sees its terminal
(the control: a pseudo-terminal works inside a candidate).
"""

from __future__ import annotations

import pytest
from code_verifier_helpers import make_code_verifier

HOLDER = """import os, time
master, slave = os.openpty()
os.chmod(os.ttyname(slave), 0o666)
print(sorted(os.listdir('/dev/pts')), flush=True)
time.sleep(3)
"""
OBSERVER = """import os, time
seen, end = set(), time.monotonic() + 2
while time.monotonic() < end:
    seen.update(os.listdir('/dev/pts'))
    time.sleep(0.01)
print(sorted(seen))
"""


def test_a_neighbours_pseudo_terminal_is_not_visible():
    verifier = make_code_verifier(10.0, workers=2)
    try:
        if verifier.isolation.level != "bwrap":
            pytest.skip("namespaces per candidate need bubblewrap")
        holder, observer = verifier.verify_batch(
            [HOLDER, OBSERVER],
            [[{"input": "", "output": "['0', 'ptmx']\n"}], [{"input": "", "output": "['ptmx']\n"}]],
        )
    finally:
        verifier.close()
    assert holder.reason == "correct", (holder.reason, holder.details)
    assert observer.reason == "correct", (observer.reason, observer.details)
