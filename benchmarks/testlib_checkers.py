"""testlib's own checkers as rows' checkers: the verifier's verdicts against the same checkers run on the host.

    git clone https://github.com/MikeMirzayanov/testlib /path/to/testlib
    python benchmarks/testlib_checkers.py --testlib /path/to/testlib

testlib (Codeforces' and Polygon's checker library) is not on PyPI, so this takes a clone of its repository. Each of
its standard checkers (`checkers/*.cpp`: wcmp, ncmp, rcmp4, yesno, ...) is a row's checker, compiled by the verifier
in its sandbox with `checker_headers=[testlib.h]`; the candidate is a Python program that prints a given output. The
reference verdict is the same checker compiled on the host with the same g++ and flags, run as
`checker input.txt output.txt answer.txt`: exit 0 accepts (`correct`), 1 or 2 rejects (`wrong`), anything else is
the checker's own failure (None). The script prints, per checker, how many (answer, output) pairs agree, and the
disagreements.
"""

from __future__ import annotations

import argparse
import collections
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.code.native import DEFAULT_CPP_FLAGS

INPUT = "3\n"
# (expected answer, candidate output): tokens, spacing, numbers, reals, words, lines, yes/no, empty.
PAIRS = [
    ("1 2 3\n", "1 2 3\n"),
    ("1 2 3\n", "1  2\n3"),
    ("1 2 3\n", "1 2 4\n"),
    ("1 2 3\n", "1 2\n"),
    ("1 2 3\n", "1 2 3 4\n"),
    ("1 2 3\n", ""),
    ("1 2 3\n", "01 2 3\n"),
    ("1 2 3\n", "1.0 2 3\n"),
    ("0.333333333\n", "0.3333333\n"),
    ("0.333333333\n", "0.33334\n"),
    ("0.333333333\n", "0.34\n"),
    ("0.333333333\n", "abc\n"),
    ("YES\n", "YES\n"),
    ("YES\n", "yes\n"),
    ("YES\n", "NO\n"),
    ("hello world\n", "hello world\n"),
    ("hello world\n", "Hello World\n"),
    ("hello world\n", "hello  world\n"),
    ("a\nb\n", "a\nb\n"),
    ("a\nb\n", "a b\n"),
    ("-7\n", "-7\n"),
    ("-7\n", "7\n"),
    ("123456789012345678901234567890\n", "123456789012345678901234567890\n"),
]


def host_verdict(checker: Path, folder: Path, answer: str, output: str) -> str | None:
    files = [folder / "input.txt", folder / "output.txt", folder / "answer.txt"]
    for path, text in zip(files, (INPUT, output, answer)):
        path.write_text(text)
    status = subprocess.run([checker, *files], capture_output=True, timeout=30).returncode
    return "correct" if status == 0 else "wrong" if status in (1, 2) else None


def candidate(output: str) -> str:
    return f"```python\nimport sys\nsys.stdout.write({output!r})\n```"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testlib", type=Path, required=True, help="a clone of github.com/MikeMirzayanov/testlib")
    args = parser.parse_args()
    header = args.testlib / "testlib.h"
    sources = sorted((args.testlib / "checkers").glob("*.cpp"))
    if not header.is_file() or not sources:
        parser.error(f"--testlib {args.testlib}: no testlib.h and checkers/*.cpp there")
    logging.getLogger("trl_grpo_ext.verifiers").setLevel(logging.ERROR)  # a checker's _fail is logged: counted here
    verifier = get_verifier("code", timeout_s=5, checker_headers=[header])
    agreed = total = 0
    verdicts = collections.Counter()
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "testlib.h").write_bytes(header.read_bytes())
            for source in sources:
                checker = folder / source.stem
                subprocess.run(
                    ["g++", *DEFAULT_CPP_FLAGS, "-o", checker, "-x", "c++", "-"],
                    input=source.read_bytes(), cwd=folder, check=True, capture_output=True,
                )  # fmt: skip
                text = source.read_text()
                wrong = []
                for answer, output in PAIRS:
                    expected = host_verdict(checker, folder, answer, output)
                    verdicts[expected or "None (the checker's failure)"] += 1
                    row = {"tests": [{"input": INPUT, "output": answer}], "checker": text}
                    result = verifier.verify(candidate(output), row)
                    got = result.reason if result.score is not None else None
                    if got != expected:
                        wrong.append(f"answer {answer!r} output {output!r}: host {expected}, verifier {result.reason}")
                agreed += len(PAIRS) - len(wrong)
                total += len(PAIRS)
                print(f"{source.stem:10s} {len(PAIRS) - len(wrong)}/{len(PAIRS)} agree", *wrong, sep="\n  ")
    finally:
        verifier.close()
    print(f"\n{agreed}/{total} verdicts agree, {len(sources)} checkers, {time.monotonic() - started:.0f} s")
    print("host verdicts:", ", ".join(f"{verdict} {count}" for verdict, count in verdicts.most_common()))
    return 0 if agreed == total else 1


if __name__ == "__main__":
    sys.exit(main())
