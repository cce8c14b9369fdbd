"""The trainer's memory under the attacks that aim at it: compiled programs are kept on disk, bounded in bytes, and
outputs are compared in bounded memory (benchmarks/code_memory.py measures it; these tests bound it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trl_grpo_ext.verifiers.code import programs
from trl_grpo_ext.verifiers.code.programs import Compiled, ProgramCache

BENCHMARK = Path(__file__).parents[3] / "benchmarks" / "code_memory.py"


def fake_compile(sizes: dict):
    def compile_in_sandbox(pool, source, flags, path, headers=None):
        Path(path).write_bytes(b"OK\n" + b"p" * sizes[source])
        return Compiled(program=path, size=sizes[source] + 3)

    return compile_in_sandbox


def test_the_cache_is_bounded_in_bytes_on_disk(monkeypatch):
    sizes = {"a": 97, "b": 97, "c": 97, "huge": 1000}
    monkeypatch.setattr(programs, "compile_in_sandbox", fake_compile(sizes))
    cache = ProgramCache(size=10, max_bytes=250)
    try:
        a, b = cache.get(None, "a", ()), cache.get(None, "b", ())
        c = cache.get(None, "c", ())  # 300 bytes: the oldest goes, file and all
        assert not os.path.exists(a.program) and os.path.exists(b.program) and os.path.exists(c.program)
        assert (cache.bytes, cache.compiles) == (200, 3)
        assert cache.get(None, "b", ()) == b and cache.compiles == 3  # kept: not compiled again
        huge = cache.get(None, "huge", ())  # larger than the bound: kept alone, the newest
        assert list(cache.entries.values()) == [huge] and cache.bytes == 1003
        assert not os.path.exists(b.program) and not os.path.exists(c.program)
        folder = cache.folder
    finally:
        cache.close()
    assert not os.path.exists(folder)


def test_the_cache_is_bounded_in_entries_too(monkeypatch):
    sizes = {str(n): 1 for n in range(5)}
    monkeypatch.setattr(programs, "compile_in_sandbox", fake_compile(sizes))
    cache = ProgramCache(size=3)
    try:
        for source in sizes:
            cache.get(None, source, ())
        assert len(cache.entries) == 3 and len(os.listdir(cache.folder)) == 3
    finally:
        cache.close()


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)")
def test_the_trainers_memory_under_big_programs_and_output_floods():
    """Two programs of 63 MB (each judged on 2 cases) add less than 32 MiB to the trainer's peak; an 8 MiB output of
    two-character tokens, compared by tokens or lines, less than 64 MiB (as lists of tokens: about 400 MiB)."""
    code = f"import json, sys; sys.path.insert(0, {str(BENCHMARK.parent)!r}); import code_memory; "
    code += "print(json.dumps(code_memory.run(2)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results["big_programs"]["verdicts"] == ["correct", "correct"], results
    assert results["big_programs"]["peak_added_mib"] < 32, results
    assert results["programs_on_disk_mib"] > 100, results  # the programs are big: on disk, not in memory
    for flood in ("token_flood_cpp", "token_flood_python", "line_flood_python"):
        assert results[flood]["verdicts"] == ["correct"], results
        assert results[flood]["peak_added_mib"] < 64, (flood, results)
