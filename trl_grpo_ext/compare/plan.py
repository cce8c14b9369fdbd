"""What a comparison trains: the task (model, data, rewards), the variants, and the list of runs.

Nothing here imports torch or trains; `validate_plan` builds every run's config (which imports TRL) so that a bad
field or a contradictory setting stops the comparison before the first run starts.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl_grpo_ext.data.task import TASK_KEYS, Task, import_verifier_modules
from trl_grpo_ext.usage import UsageError, check_model_path

STOCK = "stock"
CONTROL = "control"  # the null-reward control runs are named control:<kind> (`--control`)
# Settings of the built-in task (those of examples/demo.py); `--set`, the YAML file and variants replace them.
TINY_SETTINGS: dict[str, Any] = dict(
    learning_rate=1e-3,
    beta=0.04,
    lr_scheduler_type="constant",
    num_generations=8,
    max_completion_length=1,
    temperature=1.0,
    save_strategy="no",
    bf16=False,
)
TINY_MAX_STEPS = 200
TINY_PROMPTS_PER_STEP = 32
# Every run logs every step to its JSONL file, whatever the YAML file says (and to `report_to`'s trackers if set).
FORCED_SETTINGS: dict[str, Any] = dict(logging_steps=1, disable_tqdm=True)


@dataclass
class RunSpec:
    """One training run. `trainer`: "stock" (trl.GRPOTrainer) or "ext" (GRPOExtTrainer). `overrides`: the variant's
    own settings (shown in the report); `settings`: every config field the run sets. `baseline`: the stock run it is
    compared with (same seed). `budget_completions`: stop at the first step whose completions generated reach it
    (`max_steps` is then an upper bound); `eval_points`: completions generated at which the policy is evaluated on
    the held-out split, besides the end of training."""

    name: str
    trainer: str
    overrides: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    max_steps: int = TINY_MAX_STEPS
    seed: int = 0
    baseline: str = STOCK
    budget_completions: int | None = None
    eval_points: list[int] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return f"{self.name}-seed{self.seed}"


def config_fields(stock: bool = False) -> list[str]:
    """Field names of GRPOConfig (stock) or GRPOExtConfig, read from the dataclasses (imports TRL), and the PEFT
    fields of TRL's ModelConfig, as the example scripts take them (`peft_fields`)."""
    from trl import GRPOConfig

    from trl_grpo_ext import GRPOExtConfig

    return [f.name for f in dataclasses.fields(GRPOConfig if stock else GRPOExtConfig) if f.init] + peft_fields()


def peft_fields() -> list[str]:
    """TRL ModelConfig's LoRA fields (`use_peft`, `lora_r`, `lora_alpha`, `lora_target_modules`, ...): a run with
    `use_peft=true` trains LoRA adapters built by `trl.get_peft_config` from them."""
    from trl import ModelConfig

    names = [f.name for f in dataclasses.fields(ModelConfig)]
    return [n for n in names if n in ("use_peft", "use_rslora", "use_dora") or n.startswith("lora_")]


def peft_config_of(settings: dict[str, Any]):
    """The run's `peft.LoraConfig` (`trl.get_peft_config` of its PEFT fields), or None without `use_peft`."""
    from trl import ModelConfig, get_peft_config

    chosen = {k: v for k, v in settings.items() if k in peft_fields()}
    return get_peft_config(ModelConfig(**chosen)) if chosen.get("use_peft") else None


def extension_fields() -> list[str]:
    """The fields GRPOExtConfig adds to GRPOConfig."""
    stock = set(config_fields(stock=True))
    return [name for name in config_fields() if name not in stock]


def check_fields(where: str, keys: list[str], stock: bool = False, also_accepted: tuple[str, ...] = ()) -> None:
    """Raise UsageError naming each unknown key and its closest match among every accepted key (the config's fields
    and `also_accepted`); where a key has none, the valid fields too."""
    valid = config_fields(stock=stock)
    unknown = [k for k in keys if k not in valid]
    if not unknown:
        return
    hints, all_close = [], True
    for key in unknown:
        close = difflib.get_close_matches(key, [*valid, *also_accepted], n=1)
        all_close = all_close and bool(close)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]}?)" if close else ""))
    kind = "GRPOConfig" if stock else "GRPOExtConfig"
    message = f"{where}: unknown {kind} field(s) {', '.join(hints)}; fix the name."
    if all_close:  # the suggestion says it: no list of every field
        raise UsageError(message)
    if not stock:
        message += f" The extension's fields: {', '.join(extension_fields())}."
    message += f" Every valid field: {', '.join(sorted(valid))}."
    if also_accepted:
        message += f" Besides these, the file may set: {', '.join(also_accepted)}."
    raise UsageError(message)


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """`"rloo:advantage_estimator=rloo,beta=0.04"` -> ("rloo", {"advantage_estimator": "rloo", "beta": 0.04}).

    Values are read as YAML scalars (numbers, booleans, null, strings). A bare name is a variant with no settings.
    Only the syntax is checked here; `check_fields` checks the field names.
    """
    import yaml

    name, _, settings = text.partition(":")
    if not name or name.startswith(STOCK) or "=" in name or "/" in name:
        raise UsageError(
            f"--variant {text!r}: write NAME or NAME:FIELD=VALUE[,FIELD=VALUE...]; NAME must not start with "
            f"{STOCK!r} (the stock runs' name) nor contain '=' or '/'."
        )
    overrides = {}
    for item in filter(None, settings.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--variant {text!r}: {item!r} is not FIELD=VALUE.")
        try:
            overrides[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise UsageError(f"--variant {text!r}: {value!r} is not a YAML scalar; quote it or fix it.") from None
    return name, overrides


def load_task_file(path: str | os.PathLike) -> tuple[Task, dict[str, Any]]:
    """Read a YAML file in the examples' style: Task keys (`answer_column` is read as `reference_column`), plus any
    GRPOExtConfig field (the settings every run shares) and `dtype`. Extension fields must keep their defaults there: stock GRPOTrainer cannot run them; put them in a
    `--variant` instead."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise UsageError(f"--config {path}: {error}; give a readable YAML file.") from None
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a mapping of keys to values, got {type(data).__name__}.")
    if "answer_column" in data:  # the name examples/grpo_math.py gives the reference column
        data.setdefault("reference_column", data.pop("answer_column"))
    if "dtype" in data:  # ModelConfig's flag in the examples' files; GRPOConfig passes it on to from_pretrained
        data["model_init_kwargs"] = {**(data.get("model_init_kwargs") or {}), "dtype": data.pop("dtype")}
    task = Task(**{k: data.pop(k) for k in TASK_KEYS if k in data})
    if isinstance(task.reward_verifiers, str):
        task.reward_verifiers = [task.reward_verifiers]
    if isinstance(task.verifier_imports, str):
        task.verifier_imports = [task.verifier_imports]
    if isinstance(task.eval_k, int):
        task.eval_k = [task.eval_k]
    for key in ("output_dir", "config", *FORCED_SETTINGS):
        data.pop(key, None)  # the comparison chooses its own output folders and logging
    check_fields(f"--config {path}", list(data), also_accepted=TASK_KEYS)
    from trl_grpo_ext import GRPOExtConfig
    from trl_grpo_ext.trainer.advantages import validate_advantage_estimator
    from trl_grpo_ext.trainer.kl import validate_kl_estimator

    try:  # a misspelt estimator gets its own sentence first
        for key, validate in [
            ("advantage_estimator", validate_advantage_estimator),
            ("kl_estimator", validate_kl_estimator),
        ]:
            if key in data:
                validate(key, data[key])
    except ValueError as error:
        raise UsageError(f"--config {path}: {error}") from None
    defaults = {f.name: f.default for f in dataclasses.fields(GRPOExtConfig)}
    changed = [k for k in extension_fields() if k in data and data[k] != defaults[k]]
    if changed:
        raise UsageError(
            f"--config {path}: {', '.join(f'{k}={data[k]!r}' for k in changed)} is an extension setting that stock "
            f"GRPOTrainer cannot run. Remove it from the file and compare it as a variant, e.g. "
            f"--variant mine:{','.join(f'{k}={data[k]}' for k in changed)}."
        )
    return task, {k: v for k, v in data.items() if k not in extension_fields()}


def plan_runs(
    variants: list[tuple[str, dict]],
    common: dict,
    max_steps: int | None,
    prompts_per_step: int,
    seeds: list[int],
    suffix: str = "",
    budget: Budget | None = None,
) -> list[RunSpec]:
    """For each seed: stock, then each variant. `common` settings apply to every run, stock included; each run asks
    for `prompts_per_step` prompts of `num_generations` completions per device per step. With a `budget`, each run
    stops when it has generated `budget.completions` (`max_steps`: the steps stock needs on one process, an upper
    bound for the rest) and is evaluated every `budget.eval_every` completions."""
    runs = []
    for seed in seeds:
        for name, trainer, overrides in [(STOCK, STOCK, {}), *((n, "ext", o) for n, o in variants)]:
            settings = {**common, **overrides}
            settings["per_device_train_batch_size"] = settings.get("num_generations", 8) * prompts_per_step
            run = RunSpec(name + suffix, trainer, dict(overrides), settings, max_steps or 0, seed, STOCK + suffix)
            if budget is not None:
                per_step = settings["per_device_train_batch_size"] * settings.get("gradient_accumulation_steps", 1)
                run.max_steps = -(-budget.completions // per_step)
                run.budget_completions = budget.completions
                run.eval_points = budget.points(run.max_steps * per_step)
            runs.append(run)
    return runs


@dataclass
class Budget:
    """Runs stopped at a number of completions generated, evaluated on the held-out split every `eval_every`."""

    completions: int
    eval_every: int | None = None

    def points(self, total: int) -> list[int]:
        """The evaluation points up to the budget (the last one is the end of training)."""
        if not self.eval_every:
            return []
        return list(range(self.eval_every, min(total, self.completions) + 1, self.eval_every))


def plan_group_sweep(
    group_sizes: list[int],
    variants: list[tuple[str, dict]],
    common: dict,
    rollouts: int,
    prompts_per_step: int,
    seeds: list[int],
) -> list[RunSpec]:
    """For each G, the runs of `plan_runs` (named `<name>-G<G>`), each with the same budget of `rollouts`
    completions per process: G * prompts_per_step per step."""
    runs = []
    for group_size in group_sizes:
        if group_size < 2:
            raise UsageError(f"--group_sizes: group size {group_size} must be >= 2 (GRPO needs two completions).")
        steps = max(1, rollouts // (group_size * prompts_per_step))
        settings = {**common, "num_generations": group_size}
        runs += plan_runs(variants, settings, steps, prompts_per_step, seeds, suffix=f"-G{group_size}")
    return runs


def validate_task(task: Task) -> None:
    """Check the whole task before anything loads a model or starts a run; UsageError naming the field for: a model
    path that does not exist (or a GGUF file), a dataset path that does not exist, a local dataset without the split
    or the columns the task names, a verifier module that is missing or fails to import, a reward verifier that is
    not registered, bad held-out settings."""
    from trl_grpo_ext.verifiers import list_verifiers
    from trl_grpo_ext.verifiers.core.plugins import suggest

    check_model_path("model_name_or_path", task.model_name_or_path)
    check_task_datasets(task)
    for name in task.verifier_imports:
        if name.endswith(".py") and not Path(name).is_file():
            raise UsageError(
                f"verifier_imports: {name} does not exist; give the path of the .py file that registers the verifier "
                "(relative to the current folder) or a module's dotted name."
            )
    try:
        import_verifier_modules(task)
    except Exception as error:  # the user's module: where it failed, on one line
        raise UsageError(
            f"verifier_imports {task.verifier_imports}: importing failed{failure_place(error)} with "
            f"{type(error).__name__}: {error}; fix the module or the name."
        ) from None
    bad_k = [
        k for k in task.eval_k if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= task.eval_num_samples
    ]
    if task.eval_num_samples < 1 or not task.eval_k or bad_k:
        raise UsageError(
            f"eval_k={task.eval_k} with eval_num_samples={task.eval_num_samples}: each k must lie between 1 and "
            "eval_num_samples (the completions drawn per held-out prompt)."
        )
    if (
        isinstance(task.eval_prompts_per_call, bool)
        or not isinstance(task.eval_prompts_per_call, int)
        or task.eval_prompts_per_call < 1
    ):
        raise UsageError(f"eval_prompts_per_call={task.eval_prompts_per_call!r}: must be an integer >= 1.")
    valid = list_verifiers()
    unknown = [name for name in task.reward_verifiers if name not in valid]
    if unknown or not task.reward_verifiers:
        problem = f"unknown verifier(s) {', '.join(unknown)}" if unknown else "the list is empty"
        hints = "".join(suggest(name, valid) for name in unknown)
        raise UsageError(
            f"reward_verifiers: {problem}.{hints} Registered verifiers: {', '.join(valid)}. A custom verifier needs "
            "the module that registers it in verifier_imports."
        )


def check_task_datasets(task: Task) -> None:
    """The task's local datasets exist and have their splits and columns (a Hub name is left to the run: no network
    here). UsageError naming the field."""
    from trl_grpo_ext.data.task import load_raw_dataset
    from trl_grpo_ext.usage import check_dataset_path

    if check_dataset_path("dataset_name", task.dataset_name):
        load_raw_dataset(task, task.dataset_train_split)
    eval_source = task.eval_dataset or task.dataset_name
    field = "eval_dataset" if task.eval_dataset else "dataset_name"
    if check_dataset_path(field, eval_source) and task.eval_split is not None:
        source = dataclasses.replace(task, dataset_name=eval_source)
        load_raw_dataset(source, task.eval_split, field, split_field="eval_split")


def failure_place(error: BaseException) -> str:
    """` at FILE:LINE`, the innermost frame of `error` in the imported code (not importlib's nor this file's), or a
    SyntaxError's own place; else ``."""
    if isinstance(error, SyntaxError) and error.filename:
        return f" at {error.filename}:{error.lineno}"
    place, tb = "", error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not (name.startswith("<") or name == __file__ or Path(name).parent.name == "importlib"):
            place = f" at {name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return place


def validate_plan(runs: list[RunSpec], output_dir: Path) -> None:
    """Build every run's config as the run will (GRPOConfig for stock, GRPOExtConfig otherwise), so that unknown
    fields and contradictory settings fail now, before anything trains. Raises UsageError naming the run."""
    from trl import GRPOConfig

    from trl_grpo_ext import GRPOExtConfig

    for run in runs:
        check_fields(f"{run.name}: {run.overrides or run.settings}", list(run.settings), stock=run.trainer == STOCK)
        config_cls = GRPOConfig if run.trainer == STOCK else GRPOExtConfig
        try:
            with without_distributed_env(), warnings.catch_warnings():
                # transformers' deprecation notices about its own defaults; the extension's warnings still show
                warnings.simplefilter("ignore", FutureWarning)
                config_cls(**run_config_kwargs(run, output_dir))
        except (ValueError, TypeError) as error:
            raise UsageError(f"{run.name} ({run.overrides or 'no settings'}): {error}") from None


def run_config_kwargs(run: RunSpec, output_dir: Path) -> dict[str, Any]:
    """The keyword arguments of the run's config: its settings, then what every run of a comparison forces."""
    from trl_grpo_ext.trainer.config import accelerator_available

    # GRPOExtConfig sets use_cpu on a machine without an accelerator; stock gets the same, so both train alike.
    cpu = {} if accelerator_available() or "use_cpu" in run.settings else {"use_cpu": True}
    peft = peft_fields()
    return {
        **cpu,
        "report_to": "none",
        **{k: v for k, v in run.settings.items() if k not in peft},
        **FORCED_SETTINGS,
        "output_dir": str(output_dir / "trainer" / run.run_id),
        "max_steps": run.max_steps,
        "seed": run.seed,
    }


class without_distributed_env:
    """Hide `accelerate launch`'s process-group variables while this process builds a config (TrainingArguments
    sets up its device): the comparison's own process must not join the group its runs will form."""

    NAMES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")

    @classmethod
    def hides(cls, name: str) -> bool:
        return name in cls.NAMES or name.startswith("ACCELERATE_")

    def __enter__(self):
        self.saved = {k: os.environ.pop(k) for k in list(os.environ) if self.hides(k)}
        return self

    def __exit__(self, *exc):
        os.environ.update(self.saved)
        return False
