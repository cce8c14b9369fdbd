"""The client of a zygote: a long-lived process that forks one child per job, reached over a control socket.

The judge (`code/runner.py`) and the sandbox fork server (`sandbox/fork.py`) are both zygotes: started on first use,
restarted when they have ended, and handed each job as one message with its descriptors. A send that fails is retried
once on a fresh zygote; closing the control socket tells a zygote to exit.
"""

from __future__ import annotations

import socket
import subprocess
import threading


class ZygoteClient:
    """Starts, reaches and stops one zygote; subclasses say how to launch it and what to raise when it fails."""

    what = "zygote"  # named in error messages
    error: type[Exception] = RuntimeError

    def __init__(self):
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.control: socket.socket | None = None

    def launch(self) -> tuple[subprocess.Popen, socket.socket]:
        """Start the zygote: its process and the control socket to it, or `self.error` if it cannot start."""
        raise NotImplementedError

    def send(self, message: bytes, fds: list[int]) -> None:
        """Hand one job's message and descriptors to the zygote (started or restarted as needed)."""
        with self.lock:
            for attempt in range(2):
                if self.proc is None or self.proc.poll() is not None:
                    self._stop()
                    self.proc, self.control = self.launch()
                try:
                    socket.send_fds(self.control, [message], fds)
                    return
                except OSError as exc:
                    if attempt:
                        raise self.error(f"cannot reach the {self.what}: {exc}") from exc
                    self._stop()

    def _stop(self) -> None:
        if self.control is not None:
            self.control.close()  # the zygote exits at end of file
            self.control = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def close(self) -> None:
        """Stop the zygote. Safe to call more than once."""
        with self.lock:
            self._stop()
