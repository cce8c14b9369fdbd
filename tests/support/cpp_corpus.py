"""C++ solutions to classic problems, correct and wrong, with their stdio cases: the C++ fidelity corpus.

Each program's verdict under the sandboxed verifier must be the verdict of a plain compile-and-run with the same
limits (tests/verifiers/code/test_cpp.py). `PROBLEMS` holds each problem's cases (and checker), `PROGRAMS` each
program: (problem, source, the verdict a judge gives it), the verdict being one of "correct", "wrong",
"compile_error", "runtime_error", "timeout".
"""

from __future__ import annotations

import random

_rng = random.Random(36)  # fixed: the corpus is the same on every run


def _sorting_cases() -> list[dict]:
    cases = []
    for n in (1, 5, 1000):
        xs = [_rng.randint(-(10**9), 10**9) for _ in range(n)]
        cases.append({"input": f"{n}\n{' '.join(map(str, xs))}\n", "output": " ".join(map(str, sorted(xs))) + "\n"})
    return cases


def _prefix_cases() -> list[dict]:
    cases = []
    for n, q in ((3, 2), (2000, 500)):
        xs = [_rng.randint(0, 10**9) for _ in range(n)]
        queries = [sorted((_rng.randint(1, n), _rng.randint(1, n))) for _ in range(q)]
        answers = [sum(xs[left - 1 : right]) for left, right in queries]
        text = f"{n} {q}\n{' '.join(map(str, xs))}\n" + "".join(f"{left} {right}\n" for left, right in queries)
        cases.append({"input": text, "output": "\n".join(map(str, answers)) + "\n"})
    return cases


def _grid_bfs(grid: list[str]) -> int:
    rows, cols = len(grid), len(grid[0])
    dist = {(0, 0): 0}
    frontier = [(0, 0)]
    while frontier:
        nxt = []
        for r, c in frontier:
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                p = (r + dr, c + dc)
                if 0 <= p[0] < rows and 0 <= p[1] < cols and grid[p[0]][p[1]] == "." and p not in dist:
                    dist[p] = dist[(r, c)] + 1
                    nxt.append(p)
        frontier = nxt
    return dist.get((rows - 1, cols - 1), -1)


def _bfs_cases() -> list[dict]:
    grids = [["..", ".."], [".#.", ".#.", "..."], [".#", "#."]]
    for size in (30, 60):
        grid = [["." if _rng.random() < 0.7 else "#" for _ in range(size)] for _ in range(size)]
        grid[0][0] = grid[-1][-1] = "."
        grids.append(["".join(row) for row in grid])
    return [{"input": f"{len(g)} {len(g[0])}\n" + "\n".join(g) + "\n", "output": f"{_grid_bfs(g)}\n"} for g in grids]


def _knapsack_cases() -> list[dict]:
    fixed = [
        ((10, [(5, 10), (4, 40), (6, 30), (3, 50)]), 90),
        ((5, [(6, 100)]), 0),
        ((10, [(6, 66), (5, 50), (5, 50)]), 100),
    ]
    cases = [
        {"input": f"{len(items)} {w}\n" + "".join(f"{a} {b}\n" for a, b in items), "output": f"{best}\n"}
        for (w, items), best in fixed
    ]
    items = [(_rng.randint(1, 100), _rng.randint(1, 1000)) for _ in range(100)]
    best = [0] * 1001
    for weight, value in items:
        for cap in range(1000, weight - 1, -1):
            best[cap] = max(best[cap], best[cap - weight] + value)
    cases.append({"input": "100 1000\n" + "".join(f"{a} {b}\n" for a, b in items), "output": f"{best[1000]}\n"})
    return cases


def _pair_cases() -> list[dict]:
    """Two indices whose values sum to t, any pair (several valid answers): the expected output is one of them."""
    rows = [((5, 9), [2, 7, 4, 5, 1]), ((4, 100), [1, 2, 3, 4]), ((6, 10), [5, 5, 3, 7, 2, 8])]
    cases = []
    for (n, t), xs in rows:
        pair = next(((i + 1, j + 1) for i in range(n) for j in range(i + 1, n) if xs[i] + xs[j] == t), None)
        cases.append(
            {
                "input": f"{n} {t}\n{' '.join(map(str, xs))}\n",
                "output": "-1\n" if pair is None else f"{pair[0]} {pair[1]}\n",
            }
        )
    return cases


PAIR_CHECKER = r"""
#include <cstdio>
#include <vector>
// testlib's contract: checker input output answer; 0 accepts, 1 rejects, 3 is the checker's own failure.
int main(int argc, char** argv) {
    if (argc < 4) return 3;
    FILE* in = fopen(argv[1], "r"); FILE* out = fopen(argv[2], "r"); FILE* ans = fopen(argv[3], "r");
    if (!in || !out || !ans) return 3;
    int n; long long t;
    if (fscanf(in, "%d %lld", &n, &t) != 2) return 3;
    std::vector<long long> a(n + 1);
    for (int i = 1; i <= n; i++) if (fscanf(in, "%lld", &a[i]) != 1) return 3;
    long long jury;
    if (fscanf(ans, "%lld", &jury) != 1) return 3;
    long long i, j;
    if (fscanf(out, "%lld", &i) != 1) return 1;
    if (jury == -1) return i == -1 ? 0 : 1;
    if (i == -1 || fscanf(out, "%lld", &j) != 1) return 1;
    if (i < 1 || i > n || j < 1 || j > n || i == j) return 1;
    return a[i] + a[j] == t ? 0 : 1;
}
"""

PROBLEMS = {
    "a_plus_b": {
        "cases": [
            {"input": "1 2\n", "output": "3\n"},
            {"input": "-5 5\n", "output": "0\n"},
            {"input": "1000000000000000000 1000000000000000000\n", "output": "2000000000000000000\n"},
        ],
        "time_limit": 1.0,
    },
    "sorting": {"cases": _sorting_cases(), "time_limit": 1.0},
    "prefix_sums": {"cases": _prefix_cases(), "time_limit": 1.0},
    "grid_bfs": {"cases": _bfs_cases(), "time_limit": 1.0},
    "knapsack": {"cases": _knapsack_cases(), "time_limit": 1.0},
    "any_pair": {"cases": _pair_cases(), "time_limit": 1.0, "checker": PAIR_CHECKER},
    # 64 MiB: the correct recursion needs about 12 MiB of stack (more than the usual 8 MiB stack limit), and the
    # unbounded one fails there rather than at the verifier's 1 GiB: on a virtual machine, memory the host has not
    # backed yet can cost seconds of system time per GiB on first touch, which made the overflow a timeout.
    "deep_recursion": {
        "cases": [{"input": "1000000\n", "output": "500000500000\n"}],
        "time_limit": 2.0,
        "memory_limit": 64,
    },
}

A_PLUS_B = "#include <iostream>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a %s b << '\\n'; }\n"
SORTING = r"""
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>
int main() {
    int n; scanf("%d", &n);
    std::vector<long long> v(n);
    for (auto& x : v) scanf("%lld", &x);
    std::sort(v.begin(), v.end()COMPARE);
    for (int i = 0; i < n; i++) printf("%lld%c", v[i], i + 1 < n ? ' ' : '\n');
}
"""
PREFIX = r"""
#include <cstdio>
#include <vector>
int main() {
    int n, q; scanf("%d %d", &n, &q);
    std::vector<TYPE> s(n + 1, 0);
    for (int i = 1; i <= n; i++) { long long x; scanf("%lld", &x); s[i] = s[i - 1] + x; }
    while (q--) { int l, r; scanf("%d %d", &l, &r); printf("%lld\n", (long long)(s[r] - s[l - 1])); }
}
"""
BFS = r"""
#include <iostream>
#include <queue>
#include <string>
#include <vector>
int main() {
    int n, m; std::cin >> n >> m;
    std::vector<std::string> g(n);
    for (auto& row : g) std::cin >> row;
    std::vector<std::vector<int>> d(n, std::vector<int>(m, -1));
    std::queue<std::pair<int, int>> q; q.push({0, 0}); d[0][0] = 0;
    int dr[] = {1, -1, 0, 0}, dc[] = {0, 0, 1, -1};
    while (!q.empty()) {
        auto [r, c] = q.front(); q.pop();
        for (int k = 0; k < DIRECTIONS; k++) {
            int nr = r + dr[k], nc = c + dc[k];
            if (nr >= 0 && nr < n && nc >= 0 && nc < m && g[nr][nc] == '.' && d[nr][nc] < 0) {
                d[nr][nc] = d[r][c] + 1; q.push({nr, nc});
            }
        }
    }
    std::cout << d[n - 1][m - 1] << "\n";
}
"""
KNAPSACK_DP = r"""
#include <algorithm>
#include <iostream>
#include <vector>
int main() {
    int n, w; std::cin >> n >> w;
    std::vector<long long> best(w + 1, 0);
    for (int i = 0; i < n; i++) {
        int a; long long b; std::cin >> a >> b;
        for (int c = w; c >= a; c--) best[c] = std::max(best[c], best[c - a] + b);
    }
    std::cout << best[w] << "\n";
}
"""
KNAPSACK_GREEDY = r"""
#include <algorithm>
#include <iostream>
#include <vector>
int main() {  // by value per weight: not optimal
    int n, w; std::cin >> n >> w;
    std::vector<std::pair<double, std::pair<int, long long>>> items;
    for (int i = 0; i < n; i++) { int a; long long b; std::cin >> a >> b; items.push_back({-(double)b / a, {a, b}}); }
    std::sort(items.begin(), items.end());
    long long total = 0;
    for (auto& it : items) if (it.second.first <= w) { w -= it.second.first; total += it.second.second; }
    std::cout << total << "\n";
}
"""
PAIR = r"""
#include <cstdio>
#include <vector>
int main() {
    int n; long long t; scanf("%d %lld", &n, &t);
    std::vector<long long> a(n);
    for (auto& x : a) scanf("%lld", &x);
    for (int i = ORDER) for (int j = 0; j < n; j++)
        if (i != j && a[i] + a[j] == t) { printf("%d %d\n", i + 1, j + 1); return 0; }
    printf("-1\n");
}
"""
PAIR_WRONG = r"""
#include <cstdio>
int main() { int n; long long t; scanf("%d %lld", &n, &t); printf("1 2\n"); }
"""
RECURSION = r"""
#include <cstdio>
volatile long long one = 1;
long long sum(long long n) { return n == 0 ? 0 : n + sum(n - 1) * VOLATILE_ONE; }
int main() { long long n; scanf("%lld", &n); printf("%lld\n", sum(n)); }
"""

PROGRAMS = {
    "a_plus_b/correct": ("a_plus_b", A_PLUS_B % "+", "correct"),
    "a_plus_b/minus": ("a_plus_b", A_PLUS_B % "-", "wrong"),
    "a_plus_b/int_overflow": ("a_plus_b", A_PLUS_B.replace("long long a, b", "int a, b") % "+", "wrong"),
    "a_plus_b/no_semicolon": ("a_plus_b", A_PLUS_B.replace("b;", "b") % "+", "compile_error"),
    "a_plus_b/exit_status": ("a_plus_b", A_PLUS_B.replace("'\\n'; }", "'\\n'; return 1; }") % "+", "runtime_error"),
    "sorting/correct": ("sorting", SORTING.replace("COMPARE", ""), "correct"),
    "sorting/descending": ("sorting", SORTING.replace("COMPARE", ", std::greater<long long>()"), "wrong"),
    "sorting/quadratic_forever": (
        "sorting",
        SORTING.replace("std::sort(v.begin(), v.end()COMPARE);", "for (;;) std::sort(v.begin(), v.end());"),
        "timeout",
    ),
    "prefix_sums/correct": ("prefix_sums", PREFIX.replace("TYPE", "long long"), "correct"),
    "prefix_sums/int_overflow": ("prefix_sums", PREFIX.replace("TYPE", "int"), "wrong"),
    "prefix_sums/out_of_bounds": (
        "prefix_sums",
        PREFIX.replace("TYPE", "long long").replace(
            "std::vector<long long> s(n + 1, 0);", "std::vector<long long> s(n + 1, 0); s.at(n + 1) = 0;"
        ),
        "runtime_error",
    ),
    "grid_bfs/correct": ("grid_bfs", BFS.replace("DIRECTIONS", "4"), "correct"),
    "grid_bfs/two_directions": ("grid_bfs", BFS.replace("DIRECTIONS", "2"), "wrong"),
    "knapsack/dp": ("knapsack", KNAPSACK_DP, "correct"),
    "knapsack/greedy": ("knapsack", KNAPSACK_GREEDY, "wrong"),
    "any_pair/first_pair": ("any_pair", PAIR.replace("ORDER", "0; i < n; i++"), "correct"),
    "any_pair/last_pair": ("any_pair", PAIR.replace("ORDER", "n - 1; i >= 0; i--"), "correct"),
    "any_pair/always_1_2": ("any_pair", PAIR_WRONG, "wrong"),
    "deep_recursion/correct": ("deep_recursion", RECURSION.replace("VOLATILE_ONE", "one"), "correct"),
    "deep_recursion/unbounded": (
        "deep_recursion",
        RECURSION.replace("n == 0 ? 0 :", "").replace("VOLATILE_ONE", "one"),
        "runtime_error",
    ),
}


def reference(problem: str) -> dict:
    """The problem as a dataset row: {"tests": [...], "time_limit": ..., "checker": ...}."""
    row = dict(PROBLEMS[problem])
    row["tests"] = row.pop("cases")
    return row
