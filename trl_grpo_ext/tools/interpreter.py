"""One sandboxed interpreter session, driven from the trainer's process.

Each session is one sandbox of the code verifier's pool (`verifiers/sandbox/`): under bubblewrap as root, a child of
the fork server with its own PID, mount, IPC and network namespaces, a private /tmp, its own uid and rlimits; the
same fail-closed isolation check (`detect_isolation`). The sandbox runs the harness in its `functions` mode with
`cell.py` as the code, and the host calls `run_cell` once per tool call. The host alone keeps the wall-clock deadline
and bounds and truncates what comes back; the sandbox's replies are decoded as plain data.

A failure before the model's first cell runs in a session (no sandbox, no set-up report, the cell runner not ready) is
the tool's own: `MachineryError`. Anything after that (the interpreter killed, garbage on the pipe) is the model's
code at work, reported to the model, and the next call starts a fresh session.
"""

from __future__ import annotations

import os
import select
import threading
import time
from pathlib import Path

from ..verifiers.code.standalone.protocol import LineReader, ProtocolError, decode, dumps, encode
from ..verifiers.sandbox.cgroups import candidate_cgroups
from ..verifiers.sandbox.isolation import Isolation, detect_isolation
from ..verifiers.sandbox.pool import SandboxError, SandboxPool
from ..verifiers.sandbox.process import START_TIMEOUT_S, SandboxProcess
from .config import PythonToolConfig

# How much of an exception's message a tool result quotes (the model reads it: a hint, not a traceback).
QUOTED_ERROR_CHARS = 200

CELL_SOURCE = (Path(__file__).resolve().parent / "cell.py").read_text()
MAX_CODE_CHARS = 1 << 20  # a cell longer than this is refused (what a completion can hold, many times over)
REPLY_SLACK_BYTES = 1 << 16


class MachineryError(RuntimeError):
    """The tool could not give the model an interpreter: not the model's fault."""


class Runtime:
    """The isolation and the pool of warm sandboxes of one configuration in this process."""

    def __init__(self, config: PythonToolConfig):
        self.config = config
        try:
            self.isolation: Isolation = detect_isolation(config.isolation)
            self.cgroups = candidate_cgroups(config.cgroup)
        except RuntimeError as exc:  # the verifier's wording, with the tool's name
            raise RuntimeError(f"python tool: {exc}".replace("code verifier: ", "")) from exc
        self.pool = SandboxPool(self.isolation, config.limits(), config.warm, cgroups=self.cgroups)

    def close(self) -> None:
        self.pool.close()  # empties this pool's groups; the tree is the process's, shared with the code verifier


_RUNTIMES: dict[PythonToolConfig, Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime_for(config: PythonToolConfig) -> Runtime:
    """The process's runtime for `config`, made (and its isolation checked, failing closed) on first use."""
    with _RUNTIMES_LOCK:
        if config not in _RUNTIMES:
            _RUNTIMES[config] = Runtime(config)
        return _RUNTIMES[config]


class Interpreter:
    """A session: the model's variables and /tmp files persist from call to call until `close()`."""

    def __init__(self, config: PythonToolConfig):
        self.config = config
        self.runtime = runtime_for(config)
        self.sandbox: SandboxProcess | None = None
        self.reader: LineReader | None = None
        self.next_id = 0
        self.lock = threading.Lock()

    def run(self, code: str) -> dict:
        """One cell: {"output", "output_bytes", "value", "error"} as `cell.run_cell` gives them, or {"ended": why}
        when the interpreter was stopped or died (the session is then over). MachineryError if no session could be
        started."""
        with self.lock:
            if self.sandbox is None:
                self._start()
            self.next_id += 1
            request = {"id": self.next_id, "op": "call", "target": {"name": "run_cell"}, "kwargs": {}}
            request["args"] = [encode(code), self.config.cpu_s, self.config.max_output_chars]
            deadline = time.monotonic() + self.config.timeout_s
            try:
                if not self._send(dumps(request), deadline):
                    return self._end(f"the interpreter did not take the code within {self.config.timeout_s:g} s")
            except OSError:
                return self._end("the interpreter had ended")
            return self._reply(self.next_id, deadline)

    def _send(self, data: bytes, deadline: float) -> bool:
        """Write the request by pieces no larger than the pipe's atomic size, each once the pipe has room, so that
        an interpreter that stopped reading (the model's code can make it) cannot block the trainer. False at the
        deadline."""
        fd = self.sandbox.request_w
        while data:
            if not select.select([], [fd], [], max(0.0, deadline - time.monotonic()))[1]:
                return False
            data = data[os.write(fd, data[: select.PIPE_BUF]) :]
        return True

    def _start(self) -> None:
        try:
            sandbox = self.runtime.pool.acquire()
        except SandboxError as exc:
            raise MachineryError(f"no sandbox: {exc}") from exc
        reader = LineReader(sandbox.reply_r, 1 << 16)
        try:
            sandbox.send({"mode": "functions", "code": CELL_SOURCE})
            deadline = time.monotonic() + START_TIMEOUT_S
            setup = self._read(sandbox, reader, deadline)
            if not isinstance(setup, dict) or setup.get("setup") != "ok":
                raise MachineryError(f"the sandbox could not set its limits: {(setup or {}).get('error', setup)}")
            ready = self._read(sandbox, reader, deadline)
            if not isinstance(ready, dict) or ready.get("ready") is not True:
                raise MachineryError(f"the cell runner did not start: {(ready or {}).get('error', ready)}")
        except (OSError, ProtocolError, SandboxError) as exc:
            sandbox.finish()
            raise MachineryError(f"the sandbox failed at start: {exc}") from exc
        except BaseException:
            sandbox.finish()
            raise
        reader.max_bytes = 8 * self.config.max_output_chars + REPLY_SLACK_BYTES
        self.sandbox, self.reader = sandbox, reader

    @staticmethod
    def _read(sandbox: SandboxProcess, reader: LineReader, deadline: float):
        if (
            not reader.buffer
            and not select.select([sandbox.reply_r], [], [], max(0.0, deadline - time.monotonic()))[0]
        ):
            return None
        return reader.read_message()

    def _reply(self, request_id: int, deadline: float) -> dict:
        try:
            reply = self._read(self.sandbox, self.reader, deadline)
        except (OSError, ProtocolError) as exc:
            return self._end(f"the interpreter sent an unreadable reply ({str(exc)[:QUOTED_ERROR_CHARS]})")
        if reply is None:
            if time.monotonic() >= deadline:
                return self._end(f"the call took longer than {self.config.timeout_s:g} s and was stopped")
            return self._end(self._why_ended())
        value = reply.get("value") if reply.get("id") == request_id and reply.get("ok") is True else None
        try:
            result = decode(value)
        except (ProtocolError, RecursionError, ValueError, TypeError):
            result = None
        if type(result) is not dict or not _well_formed(result):
            return self._end("the interpreter sent a reply that is not the tool's")
        return result

    def _why_ended(self) -> str:
        try:
            status = self.sandbox.wait(time.monotonic() + 1.0)
        except SandboxError:
            status = None
        if status is not None and status < 0:
            return f"the interpreter was killed by signal {-status} (a limit: CPU time, memory or processes)"
        return "the interpreter exited" + (f" with status {status}" if status is not None else "")

    def _end(self, why: str) -> dict:
        self.close()
        return {"ended": why}

    def close(self) -> None:
        """End the session: its processes, files and variables are gone. Safe to call more than once."""
        sandbox, self.sandbox, self.reader = self.sandbox, None, None
        if sandbox is not None:
            sandbox.finish()


def _well_formed(result: dict) -> bool:
    return (
        type(result.get("output")) is str
        and type(result.get("output_bytes")) is int
        and type(result.get("value_chars")) is int
        and (result.get("value") is None or type(result.get("value")) is str)
        and (result.get("error") is None or type(result.get("error")) is str)
    )
