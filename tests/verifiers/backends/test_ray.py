"""`backend="ray"`: a batch split across Ray actors gives the local backend's verdicts and reasons; a dead actor's
items are retried once, then scored None; an unreachable cluster fails at construction.

The cluster is real: the module starts a Ray instance on this machine, bound to the loopback interface (no mock).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest
from ci_skips import IN_CI, cannot_run_here

from trl_grpo_ext.verifiers import as_reward_function, get_verifier, register_verifier

# The public labelled pairs, outside the repository (as benchmarks/math_verifier.py reads them).
MATH_PAIRS = Path(
    os.environ.get(
        "MATH_EQUIVALENCE_DIR", Path(__file__).resolve().parents[4] / "shared" / "data" / "math_equivalence"
    )
)


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A 2-CPU Ray instance on 127.0.0.1, shut down after the module."""
    saved = {k: os.environ.get(k) for k in ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE")}
    # Ray's nodes bind their ports to the loopback address only with this setting (read when ray is imported), and
    # a loopback cluster needs no token (Ray would otherwise write one to ~/.ray).
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray = pytest.importorskip("ray")
    # Functions registered in this module reach the actors by value (the test module is not importable there).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def outcomes(results):
    return [(r.score, r.reason, r.extracted) for r in results]


def compare_backends(name, completions, references, **options):
    local = get_verifier(name, **options)
    remote = get_verifier(name, backend="ray", ray_actors=2, **options)
    try:
        assert len(set(remote.locations)) == 2
        return local.verify_batch(completions, references), remote.verify_batch(completions, references)
    finally:
        local.close()
        remote.close()


# -- results identical to the local backend ----------------------------------------------------------------------------


@pytest.mark.slow  # 7 s here; the module's other tests take about 20 s
def test_public_math_pairs_get_the_local_verdicts(ray_cluster):
    if not MATH_PAIRS.is_dir():
        cannot_run_here(f"the public math pairs (../shared) are not at {MATH_PAIRS}")
    cases = [
        json.loads(line)
        for f in sorted(MATH_PAIRS.glob("*.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]
    assert len(cases) > 500
    local, remote = compare_backends("math", [c["pred"] for c in cases], [c["gold"] for c in cases], n_workers=1)
    assert outcomes(remote) == outcomes(local)
    assert {r.reason for r in local} >= {"correct", "wrong"}


def test_written_math_set_gets_the_local_verdicts(ray_cluster):
    pairs = [
        (r"so \boxed{\frac{1}{2}}", "0.5"),
        (r"\boxed{x^2 - 1}", "(x-1)(x+1)"),
        (r"\boxed{\sqrt{x^2}}", "x"),
        ("The answer is 42.", "42"),
        ("no answer here", "7"),
        (r"\boxed{[1, 3)}", "[1, 3]"),
        (r"\boxed{1/2004!}", r"\frac{1}{2006!}"),
        (r"\boxed{3}", None),
        (r"\boxed{B}", "(B)"),
        (r"\boxed{2^{100000000}}", "1"),
        (r"\boxed{\frac{1}{2}", "1/2"),
    ]
    local, remote = compare_backends("math", [c for c, _ in pairs], [r for _, r in pairs], n_workers=1)
    assert outcomes(remote) == outcomes(local)
    assert [r.score for r in local][:5] == [1.0, 1.0, 0.0, 1.0, 0.0]


def code_options() -> dict:
    """The local default isolation, or rlimits by name where bubblewrap is missing (as the code suites do)."""
    try:
        get_verifier("code", timeout_s=2, workers=1).close()
        return {"timeout_s": 2, "workers": 1}
    except RuntimeError as exc:
        if "needs bubblewrap" not in str(exc) or IN_CI:
            cannot_run_here(str(exc))
        return {"timeout_s": 2, "workers": 1, "isolation": "rlimits"}


@pytest.mark.slow  # 5 s (a timeout each way)
def test_code_tests_get_the_local_verdicts(ray_cluster):
    add = "```python\ndef add(a, b):\n    return a + b\n```"
    cases = [
        (add, "assert add(1, 2) == 3"),
        ("def add(a, b):\n    return a - b", "assert add(1, 2) == 3"),
        (add, {"test": "def check(candidate):\n    assert candidate(2, 2) == 4", "entry_point": "add"}),
        ("print(sum(map(int, input().split())))", [{"input": "1 2\n", "output": "3\n"}]),
        ("print(input())", [{"input": "x\n", "output": "y\n"}]),
        ("def f():\n    while True: pass", "assert f() == 1"),
        ("", "assert add(1, 2) == 3"),
        (add, 42),
    ]
    local, remote = compare_backends("code", [c for c, _ in cases], [r for _, r in cases], **code_options())
    assert outcomes(remote) == outcomes(local)
    assert [r.details.get("isolation") for r in remote] == [r.details.get("isolation") for r in local]
    assert [r.score for r in local][:5] == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert [r.reason for r in local][5:7] == ["timeout", "no_code"] and local[7].score is None


def test_reward_function_on_ray_gives_the_local_rewards(ray_cluster):
    completions, answers = [r"\boxed{2}", r"\boxed{3}", "none", r"\boxed{x+x}"], ["2", "2", "1", "2x"]
    local = as_reward_function("math", n_workers=1)
    remote = as_reward_function("math", backend="ray", ray_actors=2, n_workers=1)
    try:
        assert remote(completions=completions, answer=answers) == local(completions=completions, answer=answers)
        assert remote.collect(remote.submit(completions=completions, answer=answers)) == [1.0, 0.0, 0.0, 1.0]
    finally:
        local.verifier.close()
        remote.verifier.close()


def test_batch_stats_are_the_local_ones_summed_over_the_slices(ray_cluster):
    # Two slices of four (ray_actors=2); every repeat is inside its own slice, as a GRPO group is.
    completions = [r"\boxed{2}", r"\boxed{2}", r"\boxed{3}", r"\boxed{2}"]
    completions += [r"\boxed{x+x}", "none", r"\boxed{2x}", r"\boxed{x+x}"]
    references = ["2"] * 4 + ["2x"] * 4
    local = get_verifier("math", n_workers=1)
    remote = get_verifier("math", backend="ray", ray_actors=2, n_workers=1)
    try:
        local_results, local_stats = local.verify_batch_with_stats(completions, references)
        remote_results, remote_stats = remote.verify_batch_with_stats(completions, references)
    finally:
        local.close()
        remote.close()
    assert outcomes(remote_results) == outcomes(local_results)
    assert (remote_stats.items, remote_stats.duplicates) == (local_stats.items, local_stats.duplicates) == (8, 3)
    assert len(remote_stats.item_seconds) == 8 and all(s >= 0 for s in remote_stats.item_seconds)


def test_a_verifier_without_stats_gives_none_on_ray(ray_cluster):
    verifier = get_verifier("dies_for_ray_tests", backend="ray", ray_actors=2)
    try:
        results, stats = verifier.verify_batch_with_stats(["a", "b"], ["a", "x"])
    finally:
        verifier.close()
    assert [r.score for r in results] == [1.0, 0.0] and stats is None


def test_merged_stats_sum_counts_and_keep_the_item_order():
    from trl_grpo_ext.verifiers.backends.ray import merged_stats
    from trl_grpo_ext.verifiers.core.cache import BatchStats

    first = BatchStats(items=2, duplicates=1, cache_lookups=1, cache_hits=0, item_seconds=[0.1, 0.2])
    second = BatchStats(items=3, duplicates=0, cache_lookups=2, cache_hits=2, item_seconds=[0.3, 0.4, 0.5])
    merged = merged_stats([first, second])
    assert (merged.items, merged.duplicates, merged.cache_lookups, merged.cache_hits) == (5, 1, 3, 2)
    assert merged.item_seconds == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert merged.dedup_rate == 0.2 and merged.cache_hit_rate == 2 / 3
    assert merged_stats([]) is None


# -- actors that die ---------------------------------------------------------------------------------------------------


@register_verifier("dies_for_ray_tests")
def dies(completion, reference):
    """Ends its process on "die"; on "die once", only when the marker file `reference` does not exist yet."""
    if completion == "die" or (completion == "die once" and not os.path.exists(reference)):
        if completion == "die once":
            Path(reference).touch()
        os._exit(1)
    return float(completion == reference)


def test_an_actor_that_dies_is_retried_once_then_its_items_score_none(ray_cluster, tmp_path):
    verifier = get_verifier("dies_for_ray_tests", backend="ray", ray_actors=2)
    try:
        marker = str(tmp_path / "died")
        results = verifier.verify_batch(["a", "die once", "b", "c"], ["a", marker, "x", "c"])
        assert outcomes(results) == [
            (1.0, "scored", None),
            (0.0, "scored", None),
            (0.0, "scored", None),
            (1.0, "scored", None),
        ]
        assert os.path.exists(marker)  # it did die, and the retry verified the slice

        results = verifier.verify_batch(["a", "b", "die", "c"], ["a", "a", "x", "c"])
        assert [r.score for r in results[:2]] == [1.0, 0.0]
        assert all(r.score is None and r.reason.startswith("internal_error: ray actor died") for r in results[2:])

        assert [r.score for r in verifier.verify_batch(["a", "b", "c"], ["a", "b", "x"])] == [1.0, 1.0, 0.0]
    finally:
        verifier.close()


# -- construction ------------------------------------------------------------------------------------------------------


def test_an_unreachable_cluster_fails_at_construction_with_advice():
    pytest.importorskip("ray")
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(
        ConnectionError, match=rf"cannot reach the Ray cluster at '127.0.0.1:{port}'.*ray start --head"
    ):
        get_verifier("math", backend="ray", ray_address=f"127.0.0.1:{port}")


def test_a_bad_option_fails_at_construction(ray_cluster):
    with pytest.raises(ValueError, match="timeout_s=-1"):
        get_verifier("math", backend="ray", ray_actors=1, timeout_s=-1)
    with pytest.raises(ValueError, match="accepted options"):
        get_verifier("math", backend="ray", no_such_option=1)


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install trl-grpo-ext\[ray\]"):
        get_verifier("math", backend="ray")
    with pytest.raises(ImportError, match=r"pip install trl-grpo-ext\[ray\]"):
        as_reward_function("math", backend="ray")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"backend": "spark"}, "backend='spark' is not valid. Valid choices: local, ray"),
        ({"ray_address": "10.0.0.1:6379"}, "apply to backend='ray' only"),
        ({"backend": "ray", "ray_actors": 0}, "ray_actors=0 must be a positive integer"),
    ],
)
def test_backend_options_are_checked(options, message):
    if options.get("backend") == "ray":
        pytest.importorskip("ray")
    with pytest.raises(ValueError, match=message):
        get_verifier("math", **options)


@register_verifier("reports_sharing_for_ray_tests")
def reports_sharing(completion, reference):
    """Reason: the LOCAL_WORLD_SIZE the actor sees, which sizes a verifier's default pool (test helper)."""
    from trl_grpo_ext.verifiers import VerificationResult

    return VerificationResult(1.0, f"LOCAL_WORLD_SIZE={os.environ.get('LOCAL_WORLD_SIZE')}")


def test_training_processes_share_each_node_s_cores(ray_cluster, monkeypatch):
    """3 training processes with 2 actors each on this one node: each actor's default pool gets 1/6 of the cores."""
    monkeypatch.setenv("WORLD_SIZE", "3")
    verifier = get_verifier("reports_sharing_for_ray_tests", backend="ray", ray_actors=2)
    try:
        assert {r.reason for r in verifier.verify_batch(["a", "b"], ["a", "b"])} == {"LOCAL_WORLD_SIZE=6"}
    finally:
        verifier.close()


def test_a_closed_ray_verifier_says_so(ray_cluster):
    verifier = get_verifier("dies_for_ray_tests", backend="ray", ray_actors=1)
    assert [r.score for r in verifier.verify_batch(["a"], ["a"])] == [1.0]
    verifier.close()
    verifier.close()  # safe twice
    with pytest.raises(RuntimeError, match="is closed"):
        verifier.verify_batch(["a"], ["a"])
