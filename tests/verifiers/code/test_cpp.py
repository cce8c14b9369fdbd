"""C++ in the code verifier: the language of a completion, compile once, verdicts, row limits, checkers,
and the fidelity corpus (tests/support/cpp_corpus.py) judged as a plain compile-and-run with the same limits judges it.

The plain harness here compiles with the same g++ and flags on the host (a test's own reference, never the verifier's
path) and runs each case with the same rlimits (CPU time, address space, no stack limit but the address space), comparing
the output with the same rule (`outputs_match`) or running the same checker.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from code_verifier_helpers import make_code_verifier, sandbox_uid_processes
from cpp_corpus import PAIR_CHECKER, PROBLEMS, PROGRAMS, reference

from trl_grpo_ext.verifiers.code.native import DEFAULT_CPP_FLAGS
from trl_grpo_ext.verifiers.code.runner import outputs_match
from trl_grpo_ext.verifiers.code.verifier import extract_program

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)")

TIMEOUT_S = 2.0
A_PLUS_B = "#include <iostream>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n"
CASES = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}]


def fenced(source: str, tag: str = "cpp") -> str:
    return f"Here is my solution.\n```{tag}\n{source}```\n"


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(TIMEOUT_S)
    yield v
    v.close()


# The language of a completion: no sandbox.


@pytest.mark.parametrize(
    ("completion", "language"),
    [
        (fenced("int main(){}", "cpp"), "cpp"),
        (fenced("int main(){}", "c++"), "cpp"),
        (fenced("int main(){}", "cc"), "cpp"),
        (fenced("print(1)", "python"), "python"),
        (fenced("print(1)", "python") + fenced("int main(){}", "cpp"), "cpp"),  # the last tagged block decides
        (fenced("int main(){}", "cpp") + fenced("print(1)", "python"), "python"),
        (fenced("print(1)", ""), "python"),  # untagged: Python, as before
        (fenced("#include <cstdio>\nint main(){}", ""), "cpp"),  # untagged, but a C++ program
        ('#include <cstdio>\nint main() { puts("3"); }', "cpp"),
        ("def f(): return 1", "python"),
    ],
)
def test_the_language_is_the_last_tagged_blocks(completion, language):
    assert extract_program(completion)[0] == language


def test_a_forced_language_takes_its_block():
    both = fenced("print(1)\n", "python") + fenced("int main(){}\n", "cpp")
    assert extract_program(both, "python") == ("python", "print(1)\n")
    assert extract_program(fenced("print(1)\n", "python") + "tail", "cpp") == ("cpp", "print(1)\n")
    assert extract_program(both, "cpp") == ("cpp", "int main(){}\n")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"language": "java"}, "'auto', 'python', 'cpp'"),
        ({"cpp_flags": "-O2"}, "list of g++ options"),
        ({"compile_timeout_s": 0}, "compile_timeout_s"),
        ({"compile_memory_mb": -1}, "compile_memory_mb"),
    ],
)
def test_options_are_validated(options, words):
    from trl_grpo_ext.verifiers import get_verifier

    with pytest.raises(ValueError, match=words.replace("+", r"\+").replace("(", r"\(")):
        get_verifier("code", **options)


# Verdicts.


def test_verdicts_of_compile_run_and_compare(verifier):
    correct = verifier.verify(fenced(A_PLUS_B), CASES)
    assert (correct.score, correct.reason) == (1.0, "correct"), correct.reason
    wrong = verifier.verify(fenced(A_PLUS_B.replace("a + b", "a - b")), CASES)
    assert (wrong.score, wrong.reason) == (0.0, "wrong"), wrong.reason
    assert wrong.details["failures"][0]["output"] == "-1\n"
    broken = verifier.verify(fenced("int main() { return x; }\n"), CASES)
    assert broken.score == 0.0 and broken.reason.startswith("compile_error: main.cpp"), broken.reason
    assert "not declared" in broken.reason and len(broken.reason) < 700
    crash = verifier.verify(fenced("#include <cstdlib>\nint main() { abort(); }\n"), CASES)
    assert (crash.score, crash.reason) == (0.0, "runtime_error: exit status -6"), crash.reason
    status = verifier.verify(fenced("int main() { return 3; }\n"), CASES)
    assert (status.score, status.reason) == (0.0, "runtime_error: exit status 3"), status.reason
    assert sandbox_uid_processes() == []


def test_a_cpp_program_for_python_tests_is_the_candidates_fault_or_the_rows(verifier):
    result = verifier.verify(fenced(A_PLUS_B), "assert add(1, 2) == 3")
    assert result.score == 0.0 and result.reason.startswith("wrong_language: C++ programs are judged on stdin"), result
    forced = make_code_verifier(TIMEOUT_S, language="cpp")
    try:
        result = forced.verify(A_PLUS_B, {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]})
        assert result.score is None and result.reason.startswith("unusable_reference: C++ programs"), result.reason
        assert forced.verify(A_PLUS_B, CASES).score == 1.0  # raw code, no fences: the forced language
    finally:
        forced.close()


def test_each_distinct_program_compiles_once(verifier):
    source = A_PLUS_B.replace("'\\n'", '"\\n"')  # a program no other test compiles
    before = verifier.programs.compiles
    completions = [fenced(source), fenced(source), "Try this:\n" + fenced(source, "c++"), fenced(source)]
    results = verifier.verify_batch(completions, [CASES] * 4)
    assert [r.score for r in results] == [1.0] * 4
    assert verifier.verify(fenced(source), [{"input": "2 2\n", "output": "4\n"}]).score == 1.0  # another row
    assert verifier.programs.compiles - before == 1


def test_the_rows_time_limit_and_memory_limit(verifier):
    spin = '#include <cstdio>\nint main() { volatile long i = 0; for (;; i++); puts("3"); }\n'
    row = {"tests": [{"input": "", "output": "3\n"}], "time_limit": 0.2}
    start = time.monotonic()
    result = verifier.verify(fenced(spin), row)
    assert (result.score, result.reason) == (0.0, "timeout"), result.reason
    assert time.monotonic() - start < 20
    # 100 MiB, not more: first touch of memory the host has not backed costs up to 10 s of system time per GiB here.
    hungry = (
        "#include <cstdio>\n#include <vector>\n"
        'int main() { std::vector<char> v(100 << 20, 1); printf("%d\\n", v[12345] + 2); }\n'
    )
    assert verifier.verify(fenced(hungry), {"tests": [{"input": "", "output": "3\n"}]}).score == 1.0
    low = verifier.verify(fenced(hungry), {"tests": [{"input": "", "output": "3\n"}], "memory_limit": 64})
    assert low.score == 0.0 and low.reason.startswith("runtime_error"), low.reason


def test_a_rows_time_limit_above_timeout_s_is_bounded_by_it(verifier):
    # As its memory_limit is by memory_mb: the row's 1e6 s are the verifier's TIMEOUT_S, which its clock enforces.
    spin = '#include <cstdio>\nint main() { volatile long i = 0; for (;; i++); puts("3"); }\n'
    start = time.monotonic()
    result = verifier.verify(fenced(spin), {"tests": [{"input": "", "output": "3\n"}], "time_limit": 1e6})
    assert (result.score, result.reason) == (0.0, "timeout"), result.reason
    assert time.monotonic() - start < 20


# Four children of 40 MiB at once: each is under a 64 MiB address space, the four are not under a 64 MiB candidate.
SPREAD_OVER_CHILDREN = r"""
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
int main() {
    for (int i = 0; i < 4; i++)
        if (fork() == 0) { char* p = (char*)malloc(40 << 20); memset(p, 1, 40 << 20); usleep(300000); _exit(p[7] - 1); }
    int all = 1, status;
    while (wait(&status) > 0) all &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    puts(all ? "3" : "a child was killed");
}
"""


def test_the_rows_memory_limit_bounds_the_whole_candidate(verifier):
    if verifier.isolation.cgroup is None:
        pytest.skip("no cgroup per candidate here (cgroup=False): the row's memory bounds each process only")
    row = {"tests": [{"input": "", "output": "3\n"}], "time_limit": 3}
    assert verifier.verify(fenced(SPREAD_OVER_CHILDREN), {**row, "memory_limit": 512}).score == 1.0
    bounded = verifier.verify(fenced(SPREAD_OVER_CHILDREN), {**row, "memory_limit": 64})
    assert bounded.score == 0.0 and bounded.reason.startswith(("wrong", "runtime_error")), bounded.reason
    # The pool's bound is back for the next candidate, whichever group it gets.
    for _ in range(verifier.workers + 1):
        assert verifier.verify(fenced(SPREAD_OVER_CHILDREN), {**row, "memory_limit": 512}).score == 1.0


def test_partial_credit_and_float_tolerance():
    v = make_code_verifier(TIMEOUT_S, partial_credit=True, float_tolerance=1e-6)
    try:
        third = '#include <cstdio>\nint main() { double x; scanf("%lf", &x); printf("%.9f\\n", x / 3); }\n'
        cases = [
            {"input": "1\n", "output": "0.3333333\n"},
            {"input": "3\n", "output": "1\n"},
            {"input": "2\n", "output": "0.5\n"},
        ]
        result = v.verify(fenced(third), cases)
        assert result.score == pytest.approx(2 / 3), result.reason
    finally:
        v.close()


# Checkers.

ANY_PAIR = reference("any_pair")


def test_a_checker_accepts_any_valid_answer_and_rejects_a_wrong_one(verifier):
    for name in ("any_pair/first_pair", "any_pair/last_pair", "any_pair/always_1_2"):
        _, source, verdict = PROGRAMS[name]
        result = verifier.verify(fenced(source), ANY_PAIR)
        assert result.reason == verdict, (name, result.reason)


@pytest.mark.parametrize(
    ("checker", "why"),
    [
        ("int main() { return 3; }\n", "checker: exit status 3"),
        ("#include <cstdlib>\nint main() { abort(); }\n", "checker: exit status -6"),
        ("int main() { for (;;); }\n", "checker: timeout"),
        ("int main() { return x; }\n", "checker: does not compile: main.cpp"),
    ],
)
def test_a_checker_that_fails_gives_no_verdict(checker, why):
    v = make_code_verifier(TIMEOUT_S, checker_timeout_s=1)
    try:
        _, source, _ = PROGRAMS["any_pair/first_pair"]
        result = v.verify(fenced(source), {**ANY_PAIR, "checker": checker})
        assert result.score is None and result.reason.startswith(f"unusable_reference: {why}"), result.reason
        assert sandbox_uid_processes() == []
    finally:
        v.close()


def test_a_checker_includes_the_headers_it_is_given(tmp_path):
    """As testlib checkers include testlib.h: the header is the user's file, beside the checker's source only."""
    header = tmp_path / "pair_rules.h"
    header.write_text(PAIR_CHECKER.replace("int main(int argc", "static int check(int argc"))
    row = {
        **ANY_PAIR,
        "checker": '#include "pair_rules.h"\nint main(int argc, char** argv) { return check(argc, argv); }\n',
    }
    without, with_header = make_code_verifier(TIMEOUT_S), make_code_verifier(TIMEOUT_S, checker_headers=[str(header)])
    try:
        _, source, _ = PROGRAMS["any_pair/first_pair"]
        missing = without.verify(fenced(source), row)
        assert missing.score is None and "pair_rules.h: No such file" in missing.reason, missing.reason
        for name in ("any_pair/first_pair", "any_pair/last_pair", "any_pair/always_1_2"):
            _, source, verdict = PROGRAMS[name]
            assert with_header.verify(fenced(source), row).reason == verdict, name
        # The candidate's own compile does not see it.
        candidate = '#include "pair_rules.h"\nint main() {}\n'
        assert with_header.verify(fenced(candidate), ANY_PAIR).reason.startswith("compile_error: main.cpp:1:10:")
    finally:
        without.close()
        with_header.close()


def test_checker_options_are_validated(tmp_path):
    from trl_grpo_ext.verifiers import get_verifier

    for options, words in (
        ({"checker_timeout_s": 0}, "checker_timeout_s=0"),
        ({"checker_memory_mb": True}, "checker_memory_mb=True"),
        ({"checker_headers": [str(tmp_path / "testlib.h")]}, "checker_headers: .*testlib.h.* not a readable"),
        ({"checker_headers": [str(tmp_path)]}, "checker_headers: .* not a readable"),
    ):
        with pytest.raises(ValueError, match=words):
            get_verifier("code", **options)
    (tmp_path / "a").mkdir()
    for folder in (tmp_path, tmp_path / "a"):
        (folder / "testlib.h").write_text("// a header\n")
    with pytest.raises(ValueError, match="two headers are named 'testlib.h'"):
        get_verifier("code", checker_headers=[tmp_path / "testlib.h", tmp_path / "a" / "testlib.h"])


# Fidelity: the corpus against a plain compile-and-run with the same limits.


def plain_verdict(source: str, problem: dict) -> str:
    """Compile with g++ and run each case with the verifier's rlimits, no sandbox: the judge's verdict."""
    memory_mb = problem.get("memory_limit", 1024)
    with tempfile.TemporaryDirectory() as folder:
        main, program = Path(folder, "main.cpp"), Path(folder, "prog")
        main.write_text(source)
        done = subprocess.run(["g++", *DEFAULT_CPP_FLAGS, "-o", program, main], capture_output=True, timeout=120)
        if done.returncode != 0:
            return "compile_error"
        checker = None
        if "checker" in problem:
            Path(folder, "checker.cpp").write_text(problem["checker"])
            checker = Path(folder, "checker")
            subprocess.run(["g++", *DEFAULT_CPP_FLAGS, "-o", checker, Path(folder, "checker.cpp")], check=True)
        limit = problem["time_limit"]

        def limits():
            memory = memory_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            resource.setrlimit(resource.RLIMIT_CPU, (int(limit) + 1, int(limit) + 2))

        for case in problem["cases"]:
            Path(folder, "stdin").write_text(case["input"])
            with open(Path(folder, "stdin"), "rb") as stdin, open(Path(folder, "stdout"), "wb") as stdout:
                proc = subprocess.Popen(
                    [program], stdin=stdin, stdout=stdout, stderr=subprocess.DEVNULL, preexec_fn=limits
                )
            _, wait_status, usage = os.wait4(proc.pid, 0)
            proc.returncode = status = os.waitstatus_to_exitcode(wait_status)
            output = Path(folder, "stdout").read_bytes()
            if status in (-24, -9) or usage.ru_utime + usage.ru_stime > limit:  # SIGXCPU, or more CPU than allowed
                return "timeout"
            if status != 0:
                return "runtime_error"
            if checker is not None:
                files = [Path(folder, name) for name in ("input.txt", "output.txt", "answer.txt")]
                for path, text in zip(files, (case["input"], output.decode(), case["output"])):
                    path.write_text(text)
                if subprocess.run([checker, *files]).returncode != 0:
                    return "wrong"
            elif not outputs_match(output.decode(), case["output"], tokens=True):
                return "wrong"
        return "correct"


def verifier_verdict(result) -> str:
    return result.reason.split(":")[0] if result.score == 0.0 else result.reason


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_corpus_is_judged_as_plain_compile_and_run_judges_it(verifier, name):
    problem, source, verdict = PROGRAMS[name]
    assert plain_verdict(source, PROBLEMS[problem]) == verdict, "the corpus's own verdict is wrong"
    result = verifier.verify(fenced(source), reference(problem))
    assert verifier_verdict(result) == verdict, (name, result.reason, result.details.get("failures"))
    assert sandbox_uid_processes() == []


def test_stdio_rows_with_their_rules_are_parsed():
    from trl_grpo_ext.verifiers.code.formats import parse_reference

    kind, cases = parse_reference({"input": ["1 2\n", "3 4\n"], "output": ["3\n", "7\n"]})  # CodeContests
    assert (kind, cases, cases.options) == ("stdio", [("1 2\n", "3\n"), ("3 4\n", "7\n")], {"tokens": True})
    row = {"tests": CASES, "time_limit": 2, "memory_limit": 256.0, "checker": "int main() {}"}
    kind, cases = parse_reference(row)
    assert cases.options == {"tokens": True, "time_limit": 2.0, "memory_limit": 256.0, "checker": "int main() {}"}
    assert parse_reference({**row, "checker": None, "time_limit": None})[1].options == {
        "tokens": True, "memory_limit": 256.0,
    }  # fmt: skip
    for bad in ({"time_limit": -1}, {"memory_limit": "256"}, {"checker": 5}, {"time_limit": True}):
        with pytest.raises(ValueError, match="time_limit|memory_limit|checker"):
            parse_reference({"tests": CASES, **bad})


def test_a_checker_judges_python_programs_too(verifier):
    last_pair = (
        "n, t = map(int, input().split())\na = list(map(int, input().split()))\n"
        "pairs = [(i + 1, j + 1) for i in range(n) for j in range(n) if i != j and a[i] + a[j] == t]\n"
        "print(*pairs[-1]) if pairs else print(-1)\n"
    )
    assert verifier.verify(fenced(last_pair, "python"), ANY_PAIR).reason == "correct"  # not the expected pair
    assert verifier.verify(fenced("print(1, 2)\n", "python"), ANY_PAIR).reason == "wrong"


def test_a_cpp_output_is_compared_token_by_token_as_codeforces_compares_it(verifier):
    """testlib's default checker (wcmp): whitespace-separated tokens, line breaks and spacing ignored."""
    rows = '#include <cstdio>\nint main() { printf("1 2\\n3"); }\n'
    row = [{"input": "", "output": "1\n2\n3\n"}]
    assert verifier.verify(fenced(rows), row).reason == "correct"
    assert verifier.verify(fenced(rows.replace("3", "4")), row).score == 0.0
    assert verifier.verify(fenced(rows.replace(" 2", " 2 3")), row).score == 0.0  # an extra token
    assert verifier.verify(fenced('print("1 2\\n3")\n', "python"), row).score == 0.0  # Python's rows: line by line


def test_outputs_match_by_tokens_keeps_the_float_rule():
    assert outputs_match("1 2\n3", "1\n2\n3", tokens=True) and not outputs_match("1 2\n3", "1\n2\n3")
    assert not outputs_match("12 3", "1 23", tokens=True) and not outputs_match("", "0", tokens=True)
    assert outputs_match("0.3333333 1", "0.333333\n1", float_tolerance=1e-6, tokens=True)
    assert not outputs_match("0.34 1", "0.333333\n1", float_tolerance=1e-6, tokens=True)
    assert not outputs_match("1000001", "1000000", float_tolerance=1e-3, tokens=True)  # integers stay exact
