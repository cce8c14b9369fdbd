"""The Python tool as TRL takes it: a stateless `python(code)` function, and `PythonSession` for `environment_factory`.

Both run each call in the code verifier's sandbox (`interpreter.py`), never raise into TRL's tool loop (whatever goes
wrong becomes the text the model sees), and count their calls, errors and time (`metrics.py`). A failure of the tool's
own machinery is retried once on a fresh sandbox, then reported to the model as a tool error and counted; after
`max_failed_calls` such calls in a row it raises `PythonToolFailure`, which TRL's loop does not catch.
"""

from __future__ import annotations

import logging
import threading
import time

from .config import PythonToolConfig
from .interpreter import MAX_CODE_CHARS, QUOTED_ERROR_CHARS, Interpreter, MachineryError
from .metrics import TOOL_STATS

logger = logging.getLogger("trl_grpo_ext.tools")

TOOL_ERROR_PREFIX = "PythonToolError: "
IS_PYTHON_TOOL = "_trl_grpo_ext_python_tool"  # marks the stateless functions, for the trainer's metrics


class PythonToolFailure(BaseException):
    """The tool's machinery failed on `max_failed_calls` calls in a row.

    A BaseException, not an Exception: TRL's tool loop turns every Exception into a tool message for the model, and
    training would then go on with a tool that can never answer (the code verifier raises in the same situation)."""


def render(result: dict, config: PythonToolConfig) -> str:
    """What the model sees of one cell, in at most about `max_output_chars` characters: its output (stdout and stderr),
    then the final expression's value or the exception's last line, which is kept whole where it fits. What is cut is
    replaced by a marker saying how much was left out."""
    limit = config.max_output_chars
    if "ended" in result:
        tail = f"Error: {result['ended']}; the session was restarted (variables and files are lost)."
        output, output_bytes, tail_chars = "", 0, len(tail)
    else:
        tail, output, output_bytes = result["error"] or result["value"] or "", result["output"], result["output_bytes"]
        tail_chars = len(tail) if result["error"] else max(len(tail), result["value_chars"])
    if tail_chars > limit:
        return tail[:limit] + _marker(f"{tail_chars - limit} more characters")
    kept = output[: max(0, limit - len(tail) - 1)]
    left_out = max(output_bytes, len(output.encode())) - len(kept.encode())
    text = kept + _marker(f"{left_out} more bytes of output") if left_out > 0 else kept
    return text + ("\n" if text and tail and not text.endswith("\n") else "") + tail


def _marker(what: str) -> str:
    return f"\n[... truncated: {what}]\n"


class FailureWatch:
    """Counts the calls in a row on which the machinery failed; raises PythonToolFailure at the limit."""

    def __init__(self):
        self.streak = 0
        self.lock = threading.Lock()

    def record(self, failed: bool, limit: int, why: str = "") -> None:
        with self.lock:
            self.streak = self.streak + 1 if failed else 0
            if self.streak < limit:
                return
            self.streak = 0
        raise PythonToolFailure(
            f"python tool: its sandbox failed on {limit} calls in a row (max_failed_calls={limit}), so the model "
            f"would train against a tool that cannot answer. Last failure: {why}"
        )


FAILURES = FailureWatch()


def call(interpreter: Interpreter, code, config: PythonToolConfig) -> str:
    """One tool call through `interpreter`: the text for the model; never raises but PythonToolFailure."""
    start = time.monotonic()
    failed, why = False, ""
    try:
        if not isinstance(code, str):
            text = f"{TOOL_ERROR_PREFIX}`code` must be a string of Python code, got {type(code).__name__}."
        elif len(code) > MAX_CODE_CHARS:
            text = f"{TOOL_ERROR_PREFIX}the code is longer than {MAX_CODE_CHARS} characters."
        else:
            text = _run_with_retry(interpreter, code, config)
    except MachineryError as exc:
        failed, why = True, str(exc)
        logger.warning("python tool: the sandbox failed twice on one call: %s", exc)
        text = f"{TOOL_ERROR_PREFIX}the tool failed to run the code (not the code's fault): {str(exc)[:QUOTED_ERROR_CHARS]}"
    except Exception as exc:  # a bug of the tool itself: counted, shown as a tool error, never raised into TRL
        failed, why = True, f"{type(exc).__name__}: {exc}"
        logger.exception("python tool: unexpected failure")
        interpreter.close()  # its state is unknown: the next call starts afresh
        text = f"{TOOL_ERROR_PREFIX}the tool failed to run the code (not the code's fault): {type(exc).__name__}"
    TOOL_STATS.record(time.monotonic() - start, machinery_error=failed)
    FAILURES.record(failed, config.max_failed_calls, why)
    return text


def _run_with_retry(interpreter: Interpreter, code: str, config: PythonToolConfig) -> str:
    try:
        return render(interpreter.run(code), config)
    except MachineryError as exc:
        logger.warning("python tool: %s; retrying on a fresh sandbox", exc)
    interpreter.close()
    return render(interpreter.run(code), config)


def stateless_call(code, config: PythonToolConfig) -> str:
    """One call in a fresh interpreter. An isolation this machine cannot give (no bubblewrap, and `rlimits` not asked
    for by name) raises PythonToolFailure: the tool fails closed, and TRL's loop must not turn that into a message."""
    try:
        interpreter = Interpreter(config)
    except RuntimeError as exc:
        raise PythonToolFailure(str(exc)) from exc
    try:
        return call(interpreter, code, config)
    finally:
        interpreter.close()


def make_python_tool(config: PythonToolConfig | None = None):
    """A stateless `python(code)` tool with these settings (each call a fresh interpreter). The isolation is checked
    here, failing closed: without bubblewrap this raises unless `isolation="rlimits"` was asked for by name."""
    config = config or PythonToolConfig()
    Interpreter(config)  # makes the runtime: checks the isolation now, not at the first call
    return _stateless_tool(config)


def _stateless_tool(config: PythonToolConfig):
    def python(code: str) -> str:
        """Run Python code in a fresh sandboxed interpreter (standard library only, no network, no files kept).

        Args:
            code: Python source code. Print what you want to see; the value of a final expression is shown too.

        Returns:
            The printed output, then the final expression's value or the error's last line.
        """
        return stateless_call(code, config)

    setattr(python, IS_PYTHON_TOOL, True)
    return python


# The default settings; importing checks nothing: the isolation is checked at the first call (failing closed, with
# PythonToolFailure). `make_python_tool()` checks it at once.
python = _stateless_tool(PythonToolConfig())


class PythonSession:
    """A Python interpreter per rollout, for `GRPOTrainer(environment_factory=PythonSession)`.

    TRL makes one instance per concurrent rollout and calls `reset()` at the start of each; `reset` ends the previous
    rollout's interpreter, so nothing persists across rollouts. Within a rollout, variables, imports and /tmp files
    persist from call to call, as in a notebook. The interpreter starts at the first call. `GRPOExtTrainer` ends every
    session once generation is over; with stock TRL a session ends at the next `reset` or when the instance is
    collected. Settings: subclass and set `config`, or `functools.partial(PythonSession, config=...)`.
    """

    config = PythonToolConfig()

    def __init__(self, config: PythonToolConfig | None = None):
        self.config = config or type(self).config
        self._interpreter = Interpreter(self.config)  # checks the isolation now, failing closed

    def reset(self, **kwargs) -> None:
        """Start a new rollout: end the previous interpreter session."""
        self._interpreter.close()

    def python(self, code: str) -> str:
        """Run Python code in this conversation's sandboxed interpreter; variables persist between calls.

        Args:
            code: Python source code. Print what you want to see; the value of a final expression is shown too.

        Returns:
            The printed output, then the final expression's value or the error's last line.
        """
        return call(self._interpreter, code, self.config)

    def _end_session(self) -> None:
        self._interpreter.close()

    def __del__(self):
        interpreter = getattr(self, "_interpreter", None)
        try:
            if interpreter is not None:
                interpreter.close()
        except Exception:  # at interpreter shutdown the sandbox machinery may be gone; its fork server ends anyway
            pass
