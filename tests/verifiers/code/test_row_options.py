"""Correct programs that plain judges accept: a row's C++ standard, a row's output limit, C++ recognised untagged."""

from __future__ import annotations

import shutil

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code import formats
from trl_grpo_ext.verifiers.code.verifier import extract_program

needs_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)")

CPP20 = """```cpp
#include <compare>
#include <concepts>
#include <cstdio>
#include <ranges>
#include <vector>
template <std::integral T> T twice(T x) { return 2 * x; }
int main() {
  std::vector<int> v{3, 1, 2};
  auto odd = v | std::views::filter([](int x) { return x % 2; });
  int sum = 0;
  for (int x : odd) sum += x;
  printf("%d %d\\n", twice(sum), (1 <=> 2) < 0);
}
```"""
CPP23 = """```cpp
#include <cstdio>
static_assert(__cplusplus > 202002L);
int main() { int x = 3; auto y = auto(x); printf("%d %d\\n", 2 * y + 2, 1); }
```"""
ROW = {"tests": [{"input": "", "output": "8 1\n"}]}


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(5.0)
    yield v
    v.close()


@needs_gpp
@pytest.mark.parametrize("program, standard", [(CPP20, "c++20"), (CPP23, "c++23"), (CPP20, "GNU++20")])
def test_a_row_names_its_cpp_standard(verifier, program, standard):
    assert verifier.verify(program, {**ROW, "cpp_standard": standard}).reason == "correct"
    result = verifier.verify(program, ROW)  # the control: the default -std=c++17 refuses it
    assert result.score == 0.0 and result.reason.startswith("compile_error: "), result.reason


@needs_gpp
def test_a_standard_this_gpp_lacks_is_the_rows_fault(verifier, monkeypatch):
    monkeypatch.setattr(formats, "CPP_STANDARDS", (*formats.CPP_STANDARDS, "c++99"))
    result = verifier.verify(CPP20, {**ROW, "cpp_standard": "c++99"})
    assert result.score is None and result.reason.startswith("unusable_reference: cpp_standard 'c++99'"), result


@pytest.mark.parametrize(
    "row, field",
    [
        ({"cpp_standard": "c++2x"}, "cpp_standard must be one of c\\+\\+11, .*gnu\\+\\+23"),
        ({"cpp_standard": 20}, "cpp_standard"),
        ({"output_limit": 65}, "output_limit must be a positive number \\(at most 64\\)"),
        ({"output_limit": 0}, "output_limit"),
        ({"output_limit": True}, "output_limit"),
    ],
)
def test_row_options_are_checked(row, field):
    with pytest.raises(ValueError, match=field):
        formats.parse_reference({**ROW, **row})


# 11 MB of output: over the default 8 MiB, within a row's 16.
PYTHON_FLOOD = "import sys\nsys.stdout.write('7\\n' * 5_500_000)\n"
CPP_FLOOD = '```cpp\n#include <cstdio>\nint main() { for (int i = 0; i < 5500000; i++) fputs("7\\n", stdout); }\n```'
FLOOD_ROW = {"tests": [{"input": "", "output": "7\n" * 5_500_000}]}


@pytest.mark.parametrize("program", [PYTHON_FLOOD, pytest.param(CPP_FLOOD, marks=needs_gpp)], ids=["python", "cpp"])
def test_a_row_gives_its_output_limit(verifier, program):
    assert verifier.verify(program, {**FLOOD_ROW, "output_limit": 16}).reason == "correct"
    assert verifier.verify(program, FLOOD_ROW).reason == "output_limit"  # the control: the verifier's 8 MiB
    assert verifier.verify(program, {**FLOOD_ROW, "output_limit": 4}).reason == "output_limit"


@pytest.mark.parametrize(
    "code, language",
    [
        ('#include <cstdio>\nint\nmain (void)\n{\n  puts("3");\n  return 0;\n}\n', "cpp"),
        ('#include <cstdio>\nint main(){puts("3");}\n', "cpp"),
        ("using namespace std;\nint main () { return 0; }\n", "cpp"),
        ("#include <bits/stdc++.h>\nsigned\tmain\n(\n)\n{}\n", "cpp"),
        ("def main ():\n    print(3)\nmain ()\n", "python"),  # Python's own main
        ("# include the sum\ndef main():\n    print(3)\nmain()\n", "python"),
        ("print('int main(void)')\n", "python"),
    ],
)
def test_untagged_cpp_is_recognised_by_more_than_main(code, language):
    assert extract_program(code) == (language, code)


@needs_gpp
def test_an_untagged_cpp_answer_written_otherwise_runs_as_cpp(verifier):
    code = '#include <cstdio>\nint\nmain (void)\n{\n  int a, b;\n  scanf("%d %d", &a, &b);\n  printf("%d\\n", a + b);\n}\n'
    assert verifier.verify(code, [{"input": "1 2\n", "output": "3\n"}]).reason == "correct"
