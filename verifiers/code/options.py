"""What each option of the `code` verifier means: the one description, which `CodeVerifier`'s docstring points to and
the examples' `--help` is built from (`examples/grpo_code.py`). The defaults are `CodeVerifier.__init__`'s own.
Standard library only, so that a script can build its flags without loading the verifier."""

from __future__ import annotations

OPTION_HELP = {
    "timeout_s": (
        "The candidate's own time per sandbox run, in seconds: the CPU time of all its processes plus the time it "
        "chooses to sleep, not wall-clock time (a busy machine does not spend it). A completion's "
        "function, module and call-based tests share one run; each stdin/stdout case is one. It also bounds a row's "
        "time_limit."
    ),
    "memory_mb": (
        "MiB: the address space of each of the candidate's processes and, with its 64 MiB /tmp, the memory of the "
        "whole candidate under its cgroup, its /dev/shm included. It also bounds a row's memory_limit."
    ),
    "max_processes": "Processes the candidate may run at once.",
    "max_output_bytes": "Bytes a stdin/stdout case may print (a row's output_limit may lower it).",
    "partial_credit": "Reward the fraction of tests passed instead of 1 only when every test passes.",
    "float_tolerance": (
        "Stdin/stdout cases: None compares outputs exactly; a number such as 1e-6 compares them token by token and "
        "accepts a decimal token within that absolute-or-relative error, |got - want| <= tol x max(1, |want|), while "
        "an expected integer token stays exact: 1000000.0 and 1e6 equal 1000000, 1.234568e11 does not equal "
        "123456789012 nor 1e-7 equal 0; two integer tokens compare as text."
    ),
    "workers": (
        "Sandboxes run at once by each training process; default: the usable cores divided by LOCAL_WORLD_SIZE, at "
        "most 8."
    ),
    "isolation": (
        "Sandbox of the candidate programs: auto or bwrap (bubblewrap, or refuse to start), or rlimits (weak "
        "isolation, by name only: the candidate can read files and use the network)."
    ),
    "python": "The interpreter that runs Python candidates in the sandbox; default: the base interpreter of this one.",
    "site_packages": (
        "Let candidates import the sandbox interpreter's installed packages (read-only); default: standard library "
        "only."
    ),
    "solution_module": "The module that pytest- and unittest-style tests import the solution from.",
    "cgroup": (
        "True: a cgroup per candidate bounds its memory, processes and CPU as a whole (or the verifier refuses to "
        "start); False, by name: per-process rlimits only."
    ),
    "language": (
        "Language of the completions: auto (the last fenced block tagged python or cpp/c++/cc decides), python or "
        "cpp (compiled with g++ in the sandbox; stdin/stdout tests only)."
    ),
    "cpp_flags": "g++'s options for C++ programs; a row's cpp_standard replaces their -std=.",
    "compile_timeout_s": "Seconds of the compiler's CPU time (all its processes) per C++ program.",
    "compile_memory_mb": "MiB of address space per compiler process (its cgroup adds a 128 MiB /tmp).",
    "checker_timeout_s": "Seconds of CPU time a row's checker may use per case.",
    "checker_memory_mb": "MiB of address space of a row's checker.",
    "checker_headers": (
        "Paths of headers the rows' checkers include (e.g. testlib.h), written beside each checker's source."
    ),
}
