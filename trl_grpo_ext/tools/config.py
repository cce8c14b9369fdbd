"""Settings of the sandboxed Python tool, checked when they are made."""

from __future__ import annotations

from dataclasses import dataclass

from ..verifiers.sandbox.isolation import ISOLATION_CHOICES
from ..verifiers.sandbox.process import Limits


@dataclass(frozen=True)
class PythonToolConfig:
    """What each call of the Python tool may use and return.

    isolation: "auto"/"bwrap" (bubblewrap, or refuse to start) or "rlimits" (weak isolation, only by name), as the
        code verifier's `isolation`.
    cgroup: True (a cgroup per interpreter bounds its memory, /tmp included, and its processes as a whole, or refuse
        to start), or False, by name, for per-process rlimits only: as the code verifier's `cgroup`.
    timeout_s: wall clock per call, kept by the host; a call past it is stopped and its session restarted.
    cpu_s: CPU seconds per call (soft RLIMIT_CPU: the cell gets a TimeoutError, the session survives).
    session_cpu_s: CPU seconds of one session in all (hard RLIMIT_CPU: the interpreter is killed, the session restarted).
    memory_mb, processes, tmp_mb, file_mb, open_files: the sandbox's limits (address space, RLIMIT_NPROC on its own
        uid, its private /tmp, file size, descriptors).
    max_output_chars: what the model sees of a call, at most; longer output is cut with a marker saying how much.
    warm: interpreters kept started ahead per process.
    max_failed_calls: calls in a row on which the tool's own machinery failed before it raises PythonToolFailure.
    """

    isolation: str = "auto"
    cgroup: bool = True
    timeout_s: float = 10.0
    cpu_s: int = 5
    session_cpu_s: int = 60
    memory_mb: int = 1024
    processes: int = 64
    tmp_mb: int = 64
    file_mb: int = 16
    open_files: int = 256
    max_output_chars: int = 2000
    warm: int = 2
    max_failed_calls: int = 3

    def __post_init__(self):
        if self.isolation not in ISOLATION_CHOICES:
            raise ValueError(
                f"PythonToolConfig.isolation={self.isolation!r} is not supported. Valid choices: "
                f"{', '.join(ISOLATION_CHOICES)} ('rlimits' is weak isolation, accepted only by name)."
            )
        if not isinstance(self.cgroup, bool):
            raise ValueError(
                f"PythonToolConfig.cgroup={self.cgroup!r} must be True (a cgroup per interpreter; the default) or "
                "False (per-process rlimits only, asked for by name)."
            )
        if not (isinstance(self.timeout_s, int | float) and self.timeout_s > 0):
            raise ValueError(f"PythonToolConfig.timeout_s={self.timeout_s!r} must be a positive number of seconds.")
        for name in ("cpu_s", "session_cpu_s", "memory_mb", "processes", "tmp_mb", "file_mb", "open_files"):
            self._check_int(name, 1)
        self._check_int("max_output_chars", 64)
        self._check_int("warm", 0)
        self._check_int("max_failed_calls", 1)
        if self.session_cpu_s < self.cpu_s:
            raise ValueError(
                f"PythonToolConfig.session_cpu_s={self.session_cpu_s} is below cpu_s={self.cpu_s}: a session must "
                "allow at least one call's CPU time."
            )

    def _check_int(self, name: str, least: int) -> None:
        value = getattr(self, name)
        if type(value) is not int or value < least:
            raise ValueError(f"PythonToolConfig.{name}={value!r} must be an integer >= {least}.")

    def limits(self) -> Limits:
        return Limits(
            time_s=float(self.timeout_s), cpu_s=self.session_cpu_s, memory_mb=self.memory_mb,
            processes=self.processes, file_mb=self.file_mb, tmp_mb=self.tmp_mb, open_files=self.open_files,
        )  # fmt: skip
