"""C++ sources compiled in the sandbox, and the compiled programs kept on disk, bounded in bytes.

The compile runs in a sandbox of the compile pool (the harness's mode "compile", code/standalone/harness.py), whose
stdout (`OK\\n` and the program, or `CE\\n` and the compiler's messages) goes straight to a file of a private folder
(`ProgramCache.folder`), never into the trainer's memory: a program of 63 MB with a large initialised array costs the
trainer a few MiB of buffers, however many are kept. Each case then streams the file into its sandbox's request
(code/runner.py, `write_with_program`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

from ..sandbox.pool import SandboxPool
from .runner import PROGRAM_HEADER_BYTES, Outcome, run_in_sandbox

COMPILER = "g++"
# Always there: the source and program names the harness uses, no colours, no temporary files (-pipe), C++ whatever
# the flags say.
FIXED_COMPILE_ARGS = ("-pipe", "-fdiagnostics-color=never", "-o", "prog", "-x", "c++", "main.cpp")
COMPILE_ERROR_LINES = 5  # how many of the compiler's lines a `compile_error` reason quotes
COMPILE_ERROR_CHARS = 600
COMPILE_ERROR_READ = 1 << 16  # how much of the compiler's messages is read to find those lines
MAX_PROGRAM_BYTES = 64 << 20  # a program with large initialised arrays; its pool's output bound
CACHED_PROGRAMS = 512
CACHED_PROGRAM_BYTES = 1 << 30  # on disk; the newest program is kept whatever its size


@dataclass(frozen=True)
class Compiled:
    """A compile's result: the program's file (the compile's stdout: `OK\\n`, then the program), or the compiler's
    first lines (`error`), or the limit it reached."""

    program: str | None = None
    error: str | None = None
    size: int = 0  # bytes on disk


def first_lines(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()][:COMPILE_ERROR_LINES]
    return " | ".join(lines)[:COMPILE_ERROR_CHARS]


def compile_in_sandbox(
    pool: SandboxPool, source: str, flags: tuple[str, ...], path: str, headers: dict[str, str] | None = None
) -> Compiled | Outcome:
    """Compile `source` in a sandbox of `pool` (the compile limits: its clock is the compile's CPU time), `headers`
    ({file name: text}, e.g. testlib.h for checkers) beside it for its `#include "..."`, the program to the file
    `path` (removed unless the compile succeeded). An Outcome only when the machine stalled it (no verdict);
    SandboxError when the sandbox failed."""
    compiler = [COMPILER, *flags, *FIXED_COMPILE_ARGS]
    message = {"mode": "compile", "source": source, "compiler": compiler, "headers": headers or {}}
    try:
        with open(path, "wb") as sink:
            run = run_in_sandbox(pool, message, sink=sink)
        with open(path, "rb") as written:
            header, errors = written.read(PROGRAM_HEADER_BYTES), written.read(COMPILE_ERROR_READ)
        if run.stopped is None and run.status == 0 and header == b"OK\n":
            return Compiled(program=path, size=os.path.getsize(path))
    except BaseException:
        _remove(path)
        raise
    _remove(path)
    limits = pool.limits
    if run.stopped == "stalled":
        return Outcome(stalled=run.clock.describe())
    if run.stopped == "timeout":
        return Compiled(error=f"time limit: more than {limits.time_s:g} s of CPU time")
    if run.stopped == "output_limit":
        return Compiled(error=f"the program is larger than {limits.output_bytes >> 20} MiB")
    if run.status == 0 and header == b"CE\n":
        return Compiled(error=first_lines(errors.decode("utf-8", errors="replace")))
    return Compiled(error=f"the compiler was killed (exit status {run.status}; memory limit {limits.memory_mb} MiB)")


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class ProgramCache:
    """Compiled programs by the hash of their source, flags and headers, on disk: the newest kept, at most `size`
    of them and `max_bytes` in all; a source compiles once however many threads ask for it at the same time. Compile
    errors are kept too (the compile is deterministic and its limits are CPU time and memory, not the machine's
    load); a stalled compile is not. The folder is made with the first compile and removed by `close` (or at exit).

    A program evicted while a case is about to stream it is gone: that case's run fails as the machinery's
    (OSError, retried once, when it compiles again)."""

    def __init__(self, size: int = CACHED_PROGRAMS, max_bytes: int = CACHED_PROGRAM_BYTES):
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0  # on disk now
        self.entries: OrderedDict[str, Compiled] = OrderedDict()
        self.lock = threading.Lock()
        self.compiling: dict[str, threading.Lock] = {}
        self.compiles = 0  # sources actually compiled (the tests and the benchmark read it)
        self.folder: str | None = None
        self._cleanup: weakref.finalize | None = None

    @staticmethod
    def key(source: str, flags: tuple[str, ...], headers: dict[str, str] | None = None) -> str:
        parts = (*flags, source, *(part for name in sorted(headers or {}) for part in (name, headers[name])))
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def get(
        self, pool: SandboxPool, source: str, flags: tuple[str, ...], headers: dict[str, str] | None = None
    ) -> Compiled | Outcome:
        key = self.key(source, flags, headers)
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
            own = self.compiling.setdefault(key, threading.Lock())
            if self.folder is None:
                self.folder = tempfile.mkdtemp(prefix="trl_grpo_ext-programs-")
                self._cleanup = weakref.finalize(self, shutil.rmtree, self.folder, True)
            path = os.path.join(self.folder, key)
        with own:
            with self.lock:
                if key in self.entries:
                    return self.entries[key]
            result = compile_in_sandbox(pool, source, flags, path, headers)
            with self.lock:
                self.compiles += 1
                self.compiling.pop(key, None)
                if isinstance(result, Compiled):
                    self._keep(key, result)
            return result

    def _keep(self, key: str, compiled: Compiled) -> None:
        """Add `compiled`, then evict the oldest entries (and their files) beyond the bounds (under the lock)."""
        self.entries[key] = compiled
        self.bytes += compiled.size
        while len(self.entries) > 1 and (len(self.entries) > self.size or self.bytes > self.max_bytes):
            _, evicted = self.entries.popitem(last=False)
            self.bytes -= evicted.size
            if evicted.program is not None:
                _remove(evicted.program)

    def close(self) -> None:
        """Remove the programs' folder; a later compile makes a new one."""
        with self.lock:
            if self._cleanup is not None:
                self._cleanup()
            self.entries.clear()
            self.folder, self._cleanup, self.bytes = None, None, 0
