"""`trl-grpo-ext compare`: variant parsing and validation, run planning, the statistics, the report files, resuming,
a `--config` task on a local model and dataset folder, and (slow) end-to-end runs where stock and the extension's
defaults log identical metrics, the group-size sweep and a two-process launch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trl_grpo_ext.cli import main
from trl_grpo_ext.compare import (
    RunSpec,
    Task,
    load_task_file,
    mean_ci,
    paired_difference,
    parse_variant,
    plan_group_sweep,
    plan_runs,
    replot,
    run_all,
    summarize,
    validate_plan,
)
from trl_grpo_ext.compare.plots import coinciding
from trl_grpo_ext.compare.stats import t_quantile_975

REPO = Path(__file__).resolve().parents[2]
# Metrics that measure the machine, not the training: they may differ between two identical runs.
MACHINE_METRICS = {"step_time", "peak_memory_mb"}


def timing(key: str) -> bool:
    """A verifier reward's own timings (`math/verify_time_s`, `math/verify_time_s_p95`, ...): the machine's."""
    return key.split("/")[-1].startswith("verify_time_s")


# --- variants and plans ---------------------------------------------------------------------------------------------


def test_parse_variant_reads_yaml_scalars():
    assert parse_variant("rloo:advantage_estimator=rloo,beta=0.04,kl_clamp=null,use_vllm=false") == (
        "rloo",
        {"advantage_estimator": "rloo", "beta": 0.04, "kl_clamp": None, "use_vllm": False},
    )
    assert parse_variant("plain") == ("plain", {})


@pytest.mark.parametrize("bad", ["stock", "stock2:beta=0", ":beta=0.1", "x:beta", "x:=1", "a=b", "a/b"])
def test_parse_variant_rejects_malformed_text_naming_it(bad):
    with pytest.raises(ValueError, match="--variant"):
        parse_variant(bad)


def test_unknown_variant_field_is_rejected_naming_the_valid_fields(tmp_path):
    runs = plan_runs([("k2", {"kl_estimater": "k2"})], {}, max_steps=2, prompts_per_step=2, seeds=[0])
    with pytest.raises(ValueError) as error:
        validate_plan(runs, tmp_path)
    message = str(error.value)
    assert "'kl_estimater' (did you mean kl_estimator?)" in message and "learning_rate" not in message
    runs = plan_runs([("k2", {"qqqq": 1})], {}, max_steps=2, prompts_per_step=2, seeds=[0])
    with pytest.raises(ValueError) as error:  # no close match: the extension's fields, then every field
        validate_plan(runs, tmp_path)
    message = str(error.value)
    assert "'qqqq'; fix the name" in message and "advantage_estimator, advantage_epsilon" in message
    assert "learning_rate" in message


def test_bad_variant_stops_the_command_before_anything_trains(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compare", "--variant", "x:advantage_estimater=rloo", "--output_dir", str(out)]) == 2
    assert "did you mean advantage_estimator" in capsys.readouterr().err
    assert not out.exists()
    # A contradiction the config itself refuses (KL settings with beta=0) is caught before training as well.
    assert main(["compare", "--set", "beta=0", "--variant", "x:kl_estimator=k2", "--output_dir", str(out)]) == 2
    assert "x (" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--variant", "x:max_steps=3"], "--variant x: max_steps is set by compare itself"),
        (["--set", "per_device_train_batch_size=8"], "use --prompts_per_step"),
        (["--variant", "a", "--variant", "a:beta=0"], "each NAME must be unique"),
        (["--seeds", "0"], "--seeds 0: must be >= 1"),
        (["--replot", "nowhere"], "nowhere has no manifest.json"),
    ],
)
def test_command_errors_name_the_fix(tmp_path, capsys, args, expected):
    assert main(["compare", *args, "--output_dir", str(tmp_path / "out")]) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_unknown_verifier_stops_the_command_before_anything_trains(tmp_path, capsys):
    (tmp_path / "task.yaml").write_text("dataset_name: d\nreward_verifiers: [math, first_digit]\nmax_steps: 2\n")
    out = tmp_path / "out"
    assert main(["compare", "--config", str(tmp_path / "task.yaml"), "--output_dir", str(out)]) == 2
    error = capsys.readouterr().err
    assert "unknown verifier(s) first_digit. Registered verifiers: " in error and "verifier_imports" in error
    assert not out.exists()


def test_stock_runs_accept_only_stock_fields(tmp_path):
    runs = plan_runs([], {"advantage_estimator": "rloo"}, max_steps=2, prompts_per_step=2, seeds=[0])
    with pytest.raises(ValueError, match="unknown GRPOConfig field"):
        validate_plan(runs, tmp_path)


def test_plan_runs_puts_stock_first_for_every_seed_and_common_settings_everywhere():
    runs = plan_runs([("k2", {"kl_estimator": "k2"})], {"beta": 0.04}, max_steps=7, prompts_per_step=4, seeds=[3, 4])
    assert [(r.run_id, r.trainer, r.overrides, r.baseline) for r in runs] == [
        ("stock-seed3", "stock", {}, "stock"),
        ("k2-seed3", "ext", {"kl_estimator": "k2"}, "stock"),
        ("stock-seed4", "stock", {}, "stock"),
        ("k2-seed4", "ext", {"kl_estimator": "k2"}, "stock"),
    ]
    assert runs[1].settings == {"beta": 0.04, "kl_estimator": "k2", "per_device_train_batch_size": 8 * 4}
    assert all(r.max_steps == 7 for r in runs)


def test_group_sweep_spends_the_same_rollout_budget_for_every_group_size():
    runs = plan_group_sweep([2, 4, 8, 16], [("ext", {})], {}, rollouts=1024, prompts_per_step=8, seeds=[0])
    assert [r.name for r in runs[:4]] == ["stock-G2", "ext-G2", "stock-G4", "ext-G4"]
    assert {r.baseline for r in runs if r.name.endswith("-G4")} == {"stock-G4"}
    for run in runs:
        group_size = run.settings["num_generations"]
        assert run.max_steps == 1024 // (group_size * 8)
        assert run.max_steps * run.settings["per_device_train_batch_size"] == 1024
    with pytest.raises(ValueError, match="group size 1"):
        plan_group_sweep([1], [], {}, rollouts=64, prompts_per_step=8, seeds=[0])


def test_task_file_rejects_unknown_keys_and_extension_settings(tmp_path):
    path = tmp_path / "task.yaml"
    path.write_text("model_name_or_path: m\nreward_verifier: [math]\n")
    with pytest.raises(ValueError, match="'reward_verifier' \\(did you mean reward_verifiers\\?\\); fix the name.$"):
        load_task_file(path)
    path.write_text("model_name_or_path: m\nqqqq: [math]\n")
    with pytest.raises(ValueError, match="'qqqq'; fix the name.*the file may set: .*reward_verifiers"):
        load_task_file(path)
    path.write_text("dataset_name: d\nadvantage_estimator: rloo\nkl_estimator: k3\n")
    with pytest.raises(ValueError, match="advantage_estimator='rloo'.*--variant mine:advantage_estimator=rloo"):
        load_task_file(path)
    path.write_text("dataset_name: d\nreward_verifiers: math\nadvantage_estimator: grpo\nbeta: 0.1\noutput_dir: x\n")
    task, settings = load_task_file(path)  # extension fields at their defaults are fine (the examples' files)
    assert (task.dataset_name, task.reward_verifiers, settings) == ("d", ["math"], {"beta": 0.1})


# --- statistics -----------------------------------------------------------------------------------------------------


def test_mean_ci_is_the_student_t_interval():
    # 1, 2, 3, 4: mean 2.5, s = sqrt(5/3) = 1.29099, t(0.975, 3) = 3.18245: half-width 3.18245 * 1.29099 / 2 = 2.05426
    stat = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert stat["n"] == 4 and stat["mean"] == 2.5
    assert stat["ci95"][0] == pytest.approx(0.44574, rel=1e-3) and stat["ci95"][1] == pytest.approx(4.55426, rel=1e-3)
    assert t_quantile_975(1) == pytest.approx(12.706, rel=1e-3) and t_quantile_975(30) == pytest.approx(
        2.042, rel=1e-3
    )


def test_mean_ci_with_one_seed_has_no_interval():
    assert mean_ci([0.7]) == {"mean": 0.7, "ci95": None, "n": 1}
    assert mean_ci([None]) == {"mean": None, "ci95": None, "n": 0}


def test_paired_difference_pairs_by_seed():
    stock = {0: 0.40, 1: 0.50, 2: 0.45, 9: 0.0}  # seed 9 has no partner: left out
    better = {0: 0.50, 1: 0.70, 2: 0.60}
    # differences 0.10, 0.20, 0.15: mean 0.15, s = 0.05, t(0.975, 2) = 4.30265: half-width 0.124207
    diff = paired_difference(better, stock)
    assert diff["n"] == 3 and diff["mean"] == pytest.approx(0.15)
    assert diff["ci95"] == pytest.approx([0.025793, 0.274207], rel=1e-3) and diff["significant"] is True
    # The same means unpaired would overlap; here the differences scatter around 0: not significant.
    noisy = paired_difference({0: 0.6, 1: 0.3, 2: 0.55}, stock)
    assert noisy["ci95"][0] < 0 < noisy["ci95"][1] and noisy["significant"] is False
    assert paired_difference({0: 0.5}, {0: 0.4})["significant"] is None


def test_two_way_bootstrap_matches_the_exact_bootstrap_distribution():
    import itertools

    import numpy as np

    from trl_grpo_ext.compare.stats import bootstrap_grid

    grid = [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    means = [
        np.mean([[grid[r][c] for c in cols] for r in rows_])
        for rows_ in itertools.product(range(3), repeat=3)
        for cols in itertools.product(range(3), repeat=3)
    ]
    stat = bootstrap_grid(grid)
    assert stat["mean"] == pytest.approx(6 / 9) and (stat["n"], stat["prompts"]) == (3, 3)
    assert stat["ci95"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])), abs=0.02)
    assert bootstrap_grid([[0.5]])["ci95"] is None


def test_verdicts_need_five_seeds():
    from trl_grpo_ext.compare.stats import paired_seed_difference, verdict

    four = paired_seed_difference({s: 0.5 for s in range(4)}, {s: 0.1 for s in range(4)})
    five = paired_seed_difference({s: 0.5 + 0.01 * s for s in range(5)}, {s: 0.1 for s in range(5)})
    assert four["significant"] is None and five["significant"] is True
    assert verdict(four, 4) == "too few seeds for a verdict (4 < 5)" and verdict(five, 5) == "higher"
    tied = paired_seed_difference({s: 0.1 * (s % 2) for s in range(6)}, {s: 0.05 for s in range(6)})
    assert tied["significant"] is False and verdict(tied, 6) == "no separable difference"


def test_a_budget_sets_each_runs_length_and_evaluation_points():
    from trl_grpo_ext.compare.plan import Budget

    runs = plan_runs(
        [("ds", {"dynamic_sampling": True})], {"num_generations": 8}, None, 4, [0], budget=Budget(100, 32)
    )
    assert [(r.name, r.max_steps, r.budget_completions, r.eval_points) for r in runs] == [
        ("stock", 4, 100, [32, 64, 96]),  # 32 completions a step: 4 steps reach 128 >= 100
        ("ds", 4, 100, [32, 64, 96]),
    ]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--eval_every_completions", "64"], "--eval_every_completions needs --budget_completions"),
        (["--budget_completions", "64", "--max_steps", "3"], "give it without --max_steps"),
        (["--budget_completions", "0"], "--budget_completions 0: must be >= 1."),
    ],
)
def test_budget_flags_are_checked(tmp_path, capsys, args, expected):
    assert main(["compare", *args, "--output_dir", str(tmp_path / "out")]) == 2
    assert expected in capsys.readouterr().err


def test_control_runs_are_named_and_set_reward_control():
    import argparse

    from trl_grpo_ext.commands.compare import add_arguments, plan

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    _, runs = plan(parser.parse_args(["--control", "shuffled", "--control", "random", "--budget_completions", "512"]))
    assert [(r.name, r.trainer, r.overrides) for r in runs] == [
        ("stock", "stock", {}),
        ("control:shuffled", "ext", {"reward_control": "shuffled"}),
        ("control:random", "ext", {"reward_control": "random"}),
    ]
    assert {r.max_steps for r in runs} == {2}  # the built-in task: 32 prompts x 8 completions a step


class FakeState:
    is_world_process_zero = True

    def __init__(self, step):
        self.global_step = step


class FakeControl:
    should_training_stop = False


def test_the_recorder_evaluates_at_each_point_and_stops_at_the_budget(tmp_path):
    from trl_grpo_ext.compare.worker import metrics_recorder

    run = RunSpec("ds", "ext", budget_completions=100, eval_points=[32, 64, 96])
    calls = []
    recorder = metrics_recorder(tmp_path / "log.jsonl", (32, 1), run, lambda *a: calls.append(a))
    control = FakeControl()
    args = type("Args", (), {"gradient_accumulation_steps": 1})()
    # dynamic sampling logs its own count: 40, then 90 (past two points at once), then 130 (past the budget)
    for step, generated in enumerate([40, 90, 130], start=1):
        recorder.on_log(args, FakeState(step), control, logs={"reward": 0.5, "num_completions_generated": generated})
        assert control.should_training_stop == (generated >= 100)
    recorder.close()
    assert calls == [(32, 40, 1), (64, 90, 2)]  # 96 is left to the end of training, which evaluates every run
    assert [json.loads(line)["rollouts"] for line in (tmp_path / "log.jsonl").read_text().splitlines()] == [
        40,
        90,
        130,
    ]


def test_held_out_report_reads_curves_and_pairs_by_seed(tmp_path):
    from trl_grpo_ext.compare.held_out_report import area_under_curve, held_out_results

    base = [0.0, 0.5]
    # pass@1 at 0 completions 0.0 -> 0.5 at 100 -> 1.0 at 200 for problem 0: area (25 + 75) / 200 = 0.5
    assert area_under_curve({100: [0.5, 0.5], 200: [1.0, 0.5]}, base, [100, 200]) == [0.5, 0.5]
    grids = {
        "stock": {s: {100: [0.5, 0.5], 200: [0.5, 0.5]} for s in range(5)},
        "rloo": {s: {100: [0.5, 0.5], 200: [1.0, 0.5 + 0.1 * s]} for s in range(5)},
    }
    payload = held_out_results(grids, {s: base for s in range(5)}, [100, 200])
    assert payload["base"]["end"]["mean"] == 0.25
    rloo = payload["rloo"]
    assert rloo["end"]["mean"] == pytest.approx((1.0 + 0.7) / 2)
    assert rloo["vs_stock"]["mean"] == pytest.approx(0.35) and rloo["vs_stock"]["verdict"] == "higher"
    assert rloo["vs_base"]["mean"] == pytest.approx(0.85 - 0.25)
    assert [point["completions"] for point in rloo["curve"]] == [100, 200]
    assert 0.0 <= rloo["end"]["ci95"][0] <= rloo["end"]["ci95"][1] <= 1.0


# --- the report, from files alone -----------------------------------------------------------------------------------


def rows(rewards, kl=None, step_times=None, memory=None):
    out = []
    for i, reward in enumerate(rewards):
        row = {"step": i + 1, "rollouts": (i + 1) * 32, "reward": reward, "entropy": 2.0 - 0.1 * i}
        row["num_tokens"] = 100 * (i + 1)
        row["step_time"] = step_times[i] if step_times else 0.5
        row["peak_memory_mb"] = memory[i] if memory else 100.0
        if kl is not None:
            row["kl"] = kl[i]
        out.append(row)
    return out


def test_summarize_uses_a_tenth_of_the_run_as_window():
    rewards = [0.0, 0.1, 0.2, 0.3, 0.4, 0.9, 0.6, 0.7, 0.8, 0.5, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    kl = [0.01 * i for i in range(20)]
    s = summarize(rows(rewards, kl=kl, step_times=[float(i) for i in range(20)], memory=[10.0] * 19 + [50.0]))
    # window = 20 // 10 = 2: final = mean of the last two values; best = highest mean of two consecutive values.
    assert math.isclose(s["final_reward"], (0.9 + 1.0) / 2)
    assert math.isclose(s["best_reward"], (0.9 + 1.0) / 2)
    assert math.isclose(s["kl"], (0.18 + 0.19) / 2)
    assert math.isclose(s["entropy"], ((2.0 - 1.8) + (2.0 - 1.9)) / 2)
    assert s["step_time_s"] == 10.0  # median of 0..19 (upper middle)
    assert math.isclose(s["tokens_per_s"], 2000 / sum(range(20)))
    assert (s["peak_memory_mb"], s["steps"], s["rollouts"]) == (50.0, 20, 640)


def test_summarize_best_reward_is_the_best_window_not_the_last():
    s = summarize(rows([0.1, 0.8, 0.9, 0.2, 0.1]), window=2)
    assert math.isclose(s["best_reward"], 0.85) and math.isclose(s["final_reward"], 0.15)
    assert s["kl"] is None


def write_results(directory: Path, runs: dict[tuple[str, int], tuple[str, dict, list[dict]]]) -> None:
    manifest = {"task": vars(Task()), "runs": []}
    for (name, seed), (trainer, overrides, logged) in runs.items():
        manifest["runs"].append(vars(RunSpec(name, trainer, overrides, overrides, len(logged), seed)))
        (directory / f"{name}-seed{seed}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in logged))
    (directory / "manifest.json").write_text(json.dumps(manifest))


def five_seeds(tmp_path):
    write_results(
        tmp_path,
        {
            **{("stock", s): ("stock", {}, rows([0.1 * s] * 10, kl=[0.0] * 10)) for s in range(5)},
            **{("same", s): ("ext", {}, rows([0.1 * s] * 10, kl=[0.0] * 10, step_times=[0.6] * 10)) for s in range(5)},
            **{("k2", s): ("ext", {"kl_estimator": "k2"}, rows([0.1 * s + 0.2 + 0.01 * s] * 10, kl=[0.5] * 10)) for s in range(5)},
        },
    )  # fmt: skip


def exact_bootstrap_interval(values: list[float]) -> list[float]:
    """The 2.5th and 97.5th percentiles of the exact bootstrap distribution of the mean (every resample enumerated)."""
    import itertools

    import numpy as np

    means = [sum(draw) / len(draw) for draw in itertools.product(values, repeat=len(values))]
    return list(np.percentile(means, [2.5, 97.5]))


def test_results_json_has_the_documented_shape_and_values(tmp_path):
    five_seeds(tmp_path)
    replot(tmp_path)
    payload = json.loads((tmp_path / "results.json").read_text())
    assert set(payload) == {"variants", "runs", "completion_budget", "held_out", "held_out_points"}
    assert payload["completion_budget"] == 320 and payload["held_out"] == {}  # no evaluation files
    assert list(payload["variants"]) == ["stock", "same", "k2"]
    for metrics in payload["variants"].values():
        assert {"final_reward", "kl", "entropy", "step_time_s"} <= set(metrics)
        assert all(set(stat) == {"mean", "ci95", "n"} and stat["n"] == 5 for stat in metrics.values())
    # stock's final rewards are 0.0 ... 0.4: the percentile bootstrap over seeds, within Monte Carlo error of the
    # exact bootstrap distribution (3,125 resamples), and inside the range of the values.
    stock = payload["variants"]["stock"]["final_reward"]
    assert stock["mean"] == pytest.approx(0.2)
    assert stock["ci95"] == pytest.approx(exact_bootstrap_interval([0.0, 0.1, 0.2, 0.3, 0.4]), abs=0.01)
    assert 0.0 <= stock["ci95"][0] < stock["ci95"][1] <= 0.4
    assert len(payload["runs"]) == 15 and set(payload["runs"][0]) == {"variant", "seed", "metrics"}
    k2_seed0 = next(r for r in payload["runs"] if (r["variant"], r["seed"]) == ("k2", 0))
    assert k2_seed0["metrics"]["final_reward"] == pytest.approx(0.2) and k2_seed0["metrics"]["kl"] == 0.5


def test_a_verifiers_timings_are_the_machines_and_its_other_metrics_the_trainings():
    from trl_grpo_ext.compare.report import same_training_logs

    stock = rows([0.1, 0.2])
    for row, seconds in zip(stock, (0.2, 0.3)):
        row.update({"math/verify_time_s": seconds, "math/verify_time_s_p95": seconds / 8, "math/dedup_rate": 0.5})
    faster = [dict(row, **{"math/verify_time_s": 0.1, "math/verify_time_s_p95": 0.01}) for row in stock]
    assert same_training_logs(stock, faster)
    deduplicated_more = [dict(row, **{"math/dedup_rate": 0.75}) for row in stock]
    assert not same_training_logs(stock, deduplicated_more)


def test_results_md_states_the_window_significance_and_identical_logs(tmp_path):
    five_seeds(tmp_path)
    table = replot(tmp_path)
    assert (tmp_path / "results.md").read_text() == table
    assert "last tenth of each run's steps (1 of 10 steps)" in table
    lines = {line.split(" | ")[0]: line for line in table.splitlines() if line.startswith("| ")}
    assert lines["| stock"].endswith("| (baseline) |")
    # Step time differs (0.6 s against 0.5 s on every seed): the machine's, not the training's, and said so.
    assert lines["| same"].endswith("| identical logs; step time (s) higher, tokens/s lower |")
    assert "`same` logged exactly what `stock` logged" in table
    # k2 - stock = 0.20, 0.21, ..., 0.24 on seeds 0..4: an interval inside [0.20, 0.24]; its KL is higher on every seed.
    assert "final reward higher" in lines["| k2"] and "KL higher" in lines["| k2"]
    k2_final = json.loads((tmp_path / "results.json").read_text())["variants"]["k2"]["final_reward"]
    assert k2_final["mean"] == pytest.approx(0.42)
    paired = next(line for line in table.splitlines() if line.startswith("| k2 vs stock | "))
    low, high = (float(x) for x in paired.split(" | ")[1].split("[")[1].split("]")[0].split(", "))
    assert paired.split(" | ")[1].startswith("+0.2200 [") and 0.2 <= low < high <= 0.24 and "] *" in paired
    for png in ("reward.png", "kl.png", "rollouts.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_seed_gives_values_without_intervals_and_no_verdict(tmp_path):
    write_results(tmp_path, {("stock", 0): ("stock", {}, rows([0.2, 0.3])), ("k2", 0): ("ext", {}, rows([0.2, 0.4]))})
    table = replot(tmp_path)
    assert "| too few seeds for a verdict (< 5) |" in table
    assert "| k2 vs stock | +0.1000 | n/a | +0.0000 |" in table  # final reward, KL, entropy: values, no interval
    assert json.loads((tmp_path / "results.json").read_text())["variants"]["k2"]["final_reward"]["ci95"] is None
    assert (tmp_path / "reward.png").exists() and not (tmp_path / "kl.png").exists()


def test_against_completions_the_reward_is_read_at_the_budget_every_run_reached(tmp_path):
    """A variant generating twice the completions per step (as dynamic sampling may) is compared with stock at the
    completions stock generated in all, not at its own last step."""
    doubled = [dict(row, rollouts=row["rollouts"] * 2) for row in rows([0.1 * i for i in range(10)])]
    write_results(
        tmp_path,
        {
            **{("stock", s): ("stock", {}, rows([0.05 * i for i in range(10)])) for s in range(2)},
            **{("ds", s): ("ext", {"dynamic_sampling": True}, doubled) for s in range(2)},
        },
    )
    table = replot(tmp_path, x_axis="completions")
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["completion_budget"] == 320  # stock: 10 steps of 32
    ds = payload["variants"]["ds"]
    assert ds["completions"]["mean"] == 640
    assert ds["reward_at_budget"]["mean"] == pytest.approx(0.4)  # step 5, the last within 320 completions
    assert payload["variants"]["stock"]["reward_at_budget"]["mean"] == pytest.approx(0.45)
    assert set(ds) == {"final_reward", "completions", "reward_at_budget"}
    assert "reward at the common budget" in table and "within 320 completions generated" in table
    assert (tmp_path / "rollouts.png").exists() and not (tmp_path / "reward.png").exists()


def test_against_steps_the_report_is_unchanged(tmp_path):
    five_seeds(tmp_path)
    table = replot(tmp_path, x_axis="steps")
    assert "completions generated" not in table and "common budget" not in table
    assert (tmp_path / "reward.png").exists() and not (tmp_path / "rollouts.png").exists()
    with pytest.raises(ValueError, match="x_axis='tokens' is not valid. Valid choices: steps, completions, both"):
        replot(tmp_path, x_axis="tokens")


def test_completions_generated_follow_trl_generation_schedule():
    from trl_grpo_ext.compare.worker import completions_generated

    # (completions per generation, micro-steps per generation)
    assert [completions_generated(s, 1, (32, 1)) for s in (1, 2, 3)] == [32, 64, 96]
    assert [completions_generated(s, 2, (64, 4)) for s in (1, 2, 3)] == [64, 64, 128]  # num_iterations=2
    assert [completions_generated(s, 4, (64, 2)) for s in (1, 2)] == [128, 256]  # two generations per step


def test_coinciding_curves_are_named():
    curves = {"stock": ([1, 2], [[0.1, 0.2]]), "ext": ([1, 2], [[0.1, 0.2]]), "k2": ([1, 2], [[0.1, 0.3]])}
    assert coinciding(curves) == {"ext": "stock"}


# --- running and resuming -------------------------------------------------------------------------------------------


class FakeProcess:
    returncode = 0

    def poll(self):
        return 0


def test_a_second_invocation_trains_nothing_and_a_changed_run_trains_again(tmp_path):
    launched = []

    def launcher(run, spec, log_path, env):  # writes what a run would log, without training
        launched.append(run.run_id)
        logged = rows([0.1 * i for i in range(run.max_steps)])
        Path(spec["output_dir"], f"{run.run_id}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in logged))
        return FakeProcess()

    task = Task(model_name_or_path="unused", dataset_name="unused")
    plan = plan_runs([("k2", {"kl_estimator": "k2"})], {}, max_steps=3, prompts_per_step=2, seeds=[0, 1])
    run_all(plan, task, tmp_path, launcher=launcher)
    assert launched == ["stock-seed0", "k2-seed0", "stock-seed1", "k2-seed1"]
    run_all(plan, task, tmp_path, launcher=launcher)
    assert len(launched) == 4  # all finished: nothing launched
    (tmp_path / "k2-seed1.done.json").unlink()  # as if interrupted during that run
    longer = plan_runs([("k2", {"kl_estimator": "k2"})], {}, max_steps=3, prompts_per_step=2, seeds=[0, 1, 2])
    longer[0].max_steps = 5
    run_all(longer, task, tmp_path, launcher=launcher)
    assert launched[4:] == ["stock-seed0", "k2-seed1", "stock-seed2", "k2-seed2"]


def run_compare(*args: str, launcher: tuple[str, ...] = (), timeout: int = 900) -> subprocess.CompletedProcess:
    command = [sys.executable, *launcher, "-m", "trl_grpo_ext.cli", "compare", *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


CUSTOM_VERIFIER = """
from trl_grpo_ext.verifiers import register_verifier


@register_verifier("any_digit_test")
def any_digit(completion, reference):
    return float(any(c.isdigit() for c in completion))
"""


def write_task(tmp_path, model_dir: str, verifier: str, verifier_source: str, settings: str) -> None:
    """`tmp_path/task.yaml`: the tiny local model, a dataset folder of 16 sums (`question`, `solution`), the math
    verifier and `verifier` registered by `tmp_path/verifiers_<verifier>.py`, then `settings` (YAML lines)."""
    from datasets import Dataset

    Dataset.from_list([{"question": f"{a}+{b}=", "solution": str(a + b)} for a in range(4) for b in range(4)]).save_to_disk(
        tmp_path / "data"
    )  # fmt: skip
    module = tmp_path / f"verifiers_{verifier}.py"
    module.write_text(verifier_source)
    (tmp_path / "task.yaml").write_text(
        f"model_name_or_path: {model_dir}\ndataset_name: {tmp_path / 'data'}\nprompt_column: question\n"
        f"reference_column: solution\nreward_verifiers: [math, {verifier}]\nverifier_imports: [{module}]\n{settings}"
    )


@pytest.mark.slow  # about 280 s on a loaded 2-core machine
def test_config_file_with_a_local_model_dataset_folder_and_custom_verifier(tmp_path, tiny_model_dir):
    write_task(
        tmp_path, tiny_model_dir, "any_digit_test", CUSTOM_VERIFIER,
        "system_prompt: Answer with a digit.\nmax_steps: 2\nnum_generations: 2\nper_device_train_batch_size: 4\n"
        "max_completion_length: 2\nbf16: false\n",
    )  # fmt: skip
    out = tmp_path / "out"
    first = run_compare("--config", str(tmp_path / "task.yaml"), "--variant", "rloo:advantage_estimator=rloo",
                        "--output_dir", str(out))  # fmt: skip
    assert "2 runs planned, 0 already finished" in first.stdout
    assert "[2/2] rloo seed 0: 2 steps" in first.stderr + first.stdout
    logged = read_jsonl(out / "stock-seed0.jsonl")
    assert [r["step"] for r in logged] == [1, 2]
    assert {"rewards/any_digit_test_reward/mean", "rewards/math_reward/mean"} <= set(logged[0])
    assert logged[-1]["rollouts"] == 2 * 4
    payload = json.loads((out / "results.json").read_text())
    assert list(payload["variants"]) == ["stock", "rloo"]
    assert "Model: " + tiny_model_dir in (out / "results.md").read_text()
    mtime = (out / "rloo-seed0.jsonl").stat().st_mtime_ns
    second = run_compare("--config", str(tmp_path / "task.yaml"), "--variant", "rloo:advantage_estimator=rloo",
                         "--output_dir", str(out))  # fmt: skip
    assert "2 runs planned, 2 already finished" in second.stdout and "[1/2]" not in second.stdout + second.stderr
    assert (out / "rloo-seed0.jsonl").stat().st_mtime_ns == mtime


PARITY_VERIFIER = """
from trl_grpo_ext.verifiers import register_verifier


@register_verifier("first_char_parity_test")
def first_char_parity(completion, reference):
    return float(ord(completion[0]) % 2) if completion else 0.0
"""


@pytest.mark.slow  # over 8 s idle: the default suite stays under 10 minutes
def test_default_variant_logs_exactly_what_stock_logs_on_a_task_file(tmp_path, tiny_model_dir):
    """A `--config` task (local model folder, dataset folder, a verifier from a .py file) at TRL's defaults: stock and
    the default variant log the same values, entropy included. Such a file leaves bf16 unset, and on a CPU stock then
    trains with bf16 autocast, and so must the default variant, not fp32."""
    write_task(
        tmp_path, tiny_model_dir, "first_char_parity_test", PARITY_VERIFIER,
        "max_steps: 2\nnum_generations: 4\nper_device_train_batch_size: 8\nmax_completion_length: 4\n",
    )  # fmt: skip
    out = tmp_path / "out"
    result = run_compare("--config", str(tmp_path / "task.yaml"), "--output_dir", str(out))
    stock, ext = read_jsonl(out / "stock-seed0.jsonl"), read_jsonl(out / "ext-seed0.jsonl")
    assert len(stock) == len(ext) == 2
    for stock_row, ext_row in zip(stock, ext):
        shared = {k for k in stock_row.keys() & ext_row.keys() if k not in MACHINE_METRICS and not timing(k)}
        assert {"reward", "reward_std", "entropy", "loss", "grad_norm"} <= shared
        assert {k: stock_row[k] for k in shared} == {k: ext_row[k] for k in shared}
    assert any(row["grad_norm"] > 0 for row in stock), "no step had a non-zero advantage: the check proved little"
    table = (out / "results.md").read_text()
    assert table in result.stdout
    assert "| identical logs" in table


def test_a_folder_of_data_files_loads_with_load_dataset(tmp_path):
    from trl_grpo_ext.compare.worker import load_task_dataset

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"q": "1+1=", "a": "2"}\n{"q": "2+2=", "a": "4"}\n')
    task = Task(
        dataset_name=str(tmp_path / "data"), prompt_column="q", reference_column="a", system_prompt="Be brief."
    )
    dataset = load_task_dataset(task, seed=0)
    assert dataset[0] == {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+1="}], "a": "2"}  # fmt: skip
    with pytest.raises(ValueError, match=r"no column\(s\) \['answer'\]; its columns are \['q', 'a'\]"):
        load_task_dataset(Task(dataset_name=str(tmp_path / "data"), prompt_column="q"), seed=0)


def test_a_saved_dataset_dict_loads_its_split_with_load_from_disk(tmp_path):
    from datasets import Dataset, DatasetDict

    from trl_grpo_ext.compare.worker import load_task_dataset

    rows = {"train": [{"prompt": "1+1=", "answer": "2"}], "test": [{"prompt": "2+2=", "answer": "4"}]}
    DatasetDict({split: Dataset.from_list(r) for split, r in rows.items()}).save_to_disk(tmp_path / "saved")
    task = Task(dataset_name=str(tmp_path / "saved"), dataset_train_split="test")
    assert load_task_dataset(task, seed=0)[0] == {"prompt": [{"role": "user", "content": "2+2="}], "answer": "4"}


# --- slow: the built-in task end to end -----------------------------------------------------------------------------


@pytest.mark.slow
def test_default_variant_logs_exactly_what_stock_logs(tmp_path):
    result = run_compare("--max_steps", "3", "--prompts_per_step", "4", "--seeds", "2", "--output_dir", str(tmp_path))
    for seed in (0, 1):
        stock, ext = read_jsonl(tmp_path / f"stock-seed{seed}.jsonl"), read_jsonl(tmp_path / f"ext-seed{seed}.jsonl")
        assert len(stock) == len(ext) == 3
        for stock_row, ext_row in zip(stock, ext):
            shared = {k for k in stock_row.keys() & ext_row.keys() if k not in MACHINE_METRICS and not timing(k)}
            assert {"reward", "kl", "entropy", "loss"} <= shared
            assert {k: stock_row[k] for k in shared} == {k: ext_row[k] for k in shared}
    table = (tmp_path / "results.md").read_text()
    assert table in result.stdout
    assert "| identical logs" in table
    for png in ("reward.png", "kl.png", "rollouts.png"):
        assert (tmp_path / png).exists()


@pytest.mark.slow
def test_group_sweep_writes_one_run_per_group_size_on_the_same_budget(tmp_path):
    run_compare(
        "--group_sizes", "2", "4", "--rollouts", "32", "--prompts_per_step", "4", "--output_dir", str(tmp_path)
    )  # fmt: skip
    for name, steps in [("stock-G2", 4), ("ext-G2", 4), ("stock-G4", 2), ("ext-G4", 2)]:
        logged = read_jsonl(tmp_path / f"{name}-seed0.jsonl")
        assert [r["step"] for r in logged] == list(range(1, steps + 1))
        assert logged[-1]["rollouts"] == 32
    assert (tmp_path / "rollouts.png").exists()


@pytest.mark.slow
def test_under_accelerate_launch_each_run_trains_on_two_processes(tmp_path):
    launch = ("-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29561")  # fmt: skip
    result = run_compare("--max_steps", "2", "--prompts_per_step", "2", "--output_dir", str(tmp_path), launcher=launch)
    assert result.stdout.count("2 runs planned") == 1  # the main process prints, the other does not
    for name in ("stock", "ext"):
        logged = read_jsonl(tmp_path / f"{name}-seed0.jsonl")
        # 2 processes x 2 prompts x 8 completions per step
        assert [r["step"] for r in logged] == [1, 2] and logged[-1]["rollouts"] == 2 * 2 * 2 * 8
    assert (tmp_path / "results.json").exists()


@pytest.mark.parametrize("name", ["compare_math_qwen.yaml", "grpo_math_qwen.yaml", "grpo_math_tiny.yaml"])
def test_the_examples_yaml_files_read_as_compare_tasks(name):
    task, settings = load_task_file(REPO / "examples" / "configs" / name)
    if "qwen" in name:
        assert (task.model_name_or_path, task.dataset_name) == ("Qwen/Qwen2.5-0.5B-Instruct", "openai/gsm8k")
        assert task.reference_column == "answer" and settings["model_init_kwargs"] == {"dtype": "bfloat16"}
    else:
        assert task.builtin and settings["max_completion_length"] == 4
    assert not {"logging_steps", "output_dir", "advantage_estimator"} & set(settings)
    assert settings.get("report_to", "none") == "none"  # a file's trackers pass through to every run; these set none


def test_command_plans_from_the_built_in_task_or_the_file():
    from trl_grpo_ext.cli import build_parser
    from trl_grpo_ext.commands.compare import plan

    def planned(*argv):
        return plan(build_parser().parse_args(["compare", *argv]))[1]

    runs = planned()  # the built-in task: 200 steps of 32 prompts x 8 completions, seed 0, stock and `ext`
    assert [(r.run_id, r.max_steps, r.settings["per_device_train_batch_size"]) for r in runs] == [
        ("stock-seed0", 200, 256),
        ("ext-seed0", 200, 256),
    ]
    tiny = str(REPO / "examples" / "configs" / "grpo_math_tiny.yaml")  # max_steps 50, a batch of 32, seed 0
    runs = planned("--config", tiny, "--seeds", "2", "--seed", "7", "--variant", "k2:kl_estimator=k2")
    assert [r.run_id for r in runs] == ["stock-seed7", "k2-seed7", "stock-seed8", "k2-seed8"]
    assert {(r.max_steps, r.settings["per_device_train_batch_size"], r.settings["beta"]) for r in runs} == {
        (50, 32, 0.0)
    }
    runs = planned("--config", tiny, "--max_steps", "5", "--prompts_per_step", "2", "--set", "beta=0.1")
    assert {(r.max_steps, r.settings["per_device_train_batch_size"], r.settings["beta"]) for r in runs} == {
        (5, 16, 0.1)
    }


def test_peft_fields_are_accepted_like_the_example_scripts_and_build_a_lora_config(tmp_path):
    import argparse

    from trl_grpo_ext.commands.compare import add_arguments, plan
    from trl_grpo_ext.compare.plan import peft_config_of, run_config_kwargs

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--set", "use_peft=true,lora_r=4,lora_alpha=8", "--variant", "rloo:advantage_estimator=rloo"]
    )
    _, runs = plan(args)
    validate_plan(runs, tmp_path)  # every run's config builds: the PEFT fields are not config fields
    assert all("lora_r" not in run_config_kwargs(run, tmp_path) for run in runs)
    lora = peft_config_of(runs[1].settings)
    assert (type(lora).__name__, lora.r, lora.lora_alpha) == ("LoraConfig", 4, 8)
    assert peft_config_of({"lora_r": 4}) is None  # without use_peft, every weight trains
