"""The code verifier's token comparison against testlib's own `wcmp`, on the host, pair by pair.

    git clone https://github.com/MikeMirzayanov/testlib /path/to/testlib
    python benchmarks/code_wcmp.py --testlib /path/to/testlib

`outputs_match(output, answer, tokens=True)` (code/outputs.py) is how the verifier compares a C++ program's output,
and a Python program's on a Codeforces row, with the expected answer: as testlib's default checker `wcmp` does. This
compiles `checkers/wcmp.cpp` on the host with g++ and runs it as `wcmp input.txt output.txt answer.txt` on each
(answer, output) pair: exit 0 accepts, 1 or 2 rejects. The pairs: spacing and line breaks, each byte from 0x00 to
0x20 and 0x7F between two tokens, Unicode spaces, and random outputs of tokens and separators (fixed seed). Prints
the pairs that disagree and the count that agree.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from trl_grpo_ext.verifiers.code.native import DEFAULT_CPP_FLAGS
from trl_grpo_ext.verifiers.code.outputs import outputs_match

FIXED_PAIRS = [
    ("1 2 3\n", "1 2 3"),
    ("1 2 3\n", "1\n2\n3\n"),
    ("1 2 3\n", "  1\t2\r\n3  \n\n"),
    ("1 2 3\n", "1 2"),
    ("1 2 3\n", "1 2 3 4"),
    ("1 2 3\n", ""),
    ("", "\n\n"),
    ("", "x"),
    ("a\n", "A\n"),
    ("1 2\n", "1\u30002\n"),
    ("1 2\n", "1\u00a02\n"),
    ("1 2\n", "1\u20032\n"),
    ("1 2\n", "1\u20282\n"),
    ("1 2\n", "1\x852\n".encode("latin-1").decode("utf-8", "replace")),
]


def separator_pairs() -> list[tuple[str, str]]:
    return [("1 2\n", f"1{chr(code)}2\n") for code in (*range(0x01, 0x21), 0x7F)]


def random_pairs(count: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pieces = ["1", "22", "ab", " ", "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "\x1c", "\u3000"]
    pairs = []
    for _ in range(count):
        answer = "".join(rng.choice(pieces[:7]) for _ in range(rng.randrange(10)))
        output = "".join(rng.choice(pieces) for _ in range(rng.randrange(10)))
        if rng.random() < 0.4:
            output = rng.choice([" ", "\n", "\t"]).join(answer.split())
        pairs.append((answer, output))
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testlib", type=Path, required=True, help="a clone of github.com/MikeMirzayanov/testlib")
    parser.add_argument("--random", type=int, default=500, help="random pairs besides the fixed ones")
    args = parser.parse_args()
    source = args.testlib / "checkers" / "wcmp.cpp"
    if not (args.testlib / "testlib.h").is_file() or not source.is_file():
        parser.error(f"--testlib {args.testlib}: no testlib.h and checkers/wcmp.cpp there")
    pairs = FIXED_PAIRS + separator_pairs() + random_pairs(args.random)
    disagreements, accepted = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        folder, wcmp = Path(tmp), Path(tmp) / "wcmp"
        (folder / "testlib.h").write_bytes((args.testlib / "testlib.h").read_bytes())
        subprocess.run(
            ["g++", *DEFAULT_CPP_FLAGS, "-o", wcmp, "-x", "c++", "-"], input=source.read_bytes(), cwd=folder,
            check=True, capture_output=True,
        )  # fmt: skip
        for answer, output in pairs:
            files = [folder / "input.txt", folder / "output.txt", folder / "answer.txt"]
            for path, text in zip(files, ("\n", output, answer)):
                path.write_bytes(text.encode())
            status = subprocess.run([wcmp, *files], capture_output=True, timeout=30).returncode
            if status not in (0, 1, 2):
                disagreements.append(f"answer {answer!r} output {output!r}: wcmp failed (exit {status})")
                continue
            ours = outputs_match(output, answer, tokens=True)
            accepted += status == 0
            if ours != (status == 0):
                disagreements.append(f"answer {answer!r} output {output!r}: wcmp exit {status}, ours {ours}")
    print(*disagreements, sep="\n")
    agreed = len(pairs) - len(disagreements)
    print(f"{agreed}/{len(pairs)} verdicts agree with testlib's wcmp ({accepted} accepted by it)")
    return 0 if not disagreements else 1


if __name__ == "__main__":
    sys.exit(main())
