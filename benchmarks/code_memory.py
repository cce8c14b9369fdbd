"""The trainer's memory under the attacks that aim at it, through the `code` verifier, one attack at a time.

    python benchmarks/code_memory.py                 # 6 programs of 60 MB, 8 MiB outputs of two-character tokens
    python benchmarks/code_memory.py --programs 3

Each attack runs in this process, which plays the trainer: before it, the process's peak resident memory (VmHWM) is
reset (`/proc/self/clear_refs`), so the figures are what the attack added to the trainer at its peak and what it
left (VmRSS after, less before). Attacks:

- big_programs: `--programs` C++ sources, each with an initialised array of 60 MB (a 63 MB program), each judged on
  two cases: the compiled programs are kept (on disk) and streamed to each case's sandbox;
- token_flood_cpp, token_flood_python: a program that prints 8 MiB of two-character tokens on a Codeforces row
  whose expected output is the same text, so the comparison reads all of it;
- line_flood_python: the same as lines, on an APPS row.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from trl_grpo_ext.verifiers import get_verifier

BIG_PROGRAM = """#include <cstdio>
int table[15000000] = {{{n}, 1, 2, 3}};  // 60 MB of initialised data, in the program's file
int main() {{ int a, b; if (scanf("%d %d", &a, &b) != 2) return 1; printf("%d\\n", a + b + table[a % 4] - table[a % 4]); }}
"""
FLOOD = "ab\n" * ((8 << 20) // 3 - 1)
LINES = len(FLOOD) // 3
FLOOD_CPP = f'#include <cstdio>\nint main() {{ for (int i = 0; i < {LINES}; i++) fputs("ab\\n", stdout); }}\n'
FLOOD_PYTHON = f"import sys\nsys.stdout.write('ab\\n' * {LINES})\n"
A_PLUS_B = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}]


def memory_kib() -> dict[str, int]:
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return {key: int(fields[key].split()[0]) for key in ("VmRSS", "VmHWM")}


def measured(attack) -> dict:
    """What `attack()` added to this process's peak resident memory and what it left, in MiB, and its verdicts."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # VmHWM := VmRSS
    before = memory_kib()
    started = time.monotonic()
    verdicts = attack()
    after = memory_kib()
    return {
        "peak_added_mib": round((after["VmHWM"] - before["VmRSS"]) / 1024, 1),
        "kept_mib": round((after["VmRSS"] - before["VmRSS"]) / 1024, 1),
        "seconds": round(time.monotonic() - started, 1),
        "verdicts": verdicts,
    }


def attacks(verifier, programs: int) -> dict:
    def big_programs():
        return [verifier.verify(f"```cpp\n{BIG_PROGRAM.format(n=n)}```", A_PLUS_B).reason for n in range(programs)]

    flood_row = {"tests": [{"input": "", "output": FLOOD}]}
    return {
        "big_programs": big_programs,
        "token_flood_cpp": lambda: [verifier.verify(f"```cpp\n{FLOOD_CPP}```", flood_row).reason],
        "token_flood_python": lambda: [verifier.verify(FLOOD_PYTHON, flood_row).reason],
        "line_flood_python": lambda: [verifier.verify(FLOOD_PYTHON, [{"input": "", "output": FLOOD}]).reason],
    }


def run(programs: int, timeout_s: float = 10.0) -> dict:
    verifier = get_verifier("code", timeout_s=timeout_s, workers=2)
    try:
        verifier.verify("```cpp\nint main() {}\n```", [{"input": "", "output": ""}])  # pools, judge: started
        verifier.verify("print(3)", A_PLUS_B[:1])
        results = {name: measured(attack) for name, attack in attacks(verifier, programs).items()}
        results["programs_on_disk_mib"] = round(getattr(verifier.programs, "bytes", 0) / (1 << 20), 1)
        return results
    finally:
        verifier.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=6)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    print(json.dumps(run(args.programs), indent=2))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
