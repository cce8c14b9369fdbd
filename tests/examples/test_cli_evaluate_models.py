"""`trl-grpo-ext evaluate` on a LoRA output folder: loaded on its base and merged, it samples exactly what the merged
model saved as a plain folder samples; a folder naming no base says so; a task file naming no model asks for one."""

from __future__ import annotations

import json

from trl_grpo_ext.cli import main


def lora_folder(tiny_model_dir, folder):
    """A LoRA adapter of the tiny model with non-zero weights (PEFT's save_pretrained: no config.json), and the same
    adapter merged and saved as a plain model folder."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    model = get_peft_model(base, config)
    model.save_pretrained(folder / "adapter")
    merged = model.merge_and_unload()
    merged.save_pretrained(folder / "merged")
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(folder / "merged")
    return folder / "adapter", folder / "merged"


def evaluate(model, out):
    args = ["evaluate", "--model", str(model), "--num_samples", "3", "--max_prompts", "4", "--greedy",
            "--max_completion_length", "3", "--no_progress", "--save_completions", "--output_dir", str(out)]  # fmt: skip
    assert main(args) == 0
    return (out / "completions.jsonl").read_text()


def test_a_lora_output_folder_is_evaluated_on_its_base_model(tmp_path, tiny_model_dir):
    adapter, merged = lora_folder(tiny_model_dir, tmp_path)
    assert (adapter / "adapter_config.json").is_file() and not (adapter / "config.json").exists()
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == tiny_model_dir
    from_adapter = evaluate(adapter, tmp_path / "a")
    assert from_adapter == evaluate(merged, tmp_path / "m")
    assert from_adapter != evaluate(tiny_model_dir, tmp_path / "base")  # the adapter changes what is sampled
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["model"] == str(adapter)


def test_an_adapter_folder_that_names_no_base_says_so(tmp_path, capsys):
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "base_model_name_or_path": None}))
    assert main(["evaluate", "--model", str(tmp_path)]) == 2
    assert "is a LoRA adapter folder whose adapter_config.json names no base_model_name_or_path" in (
        capsys.readouterr().err
    )


def test_a_task_file_that_names_no_model_asks_for_one_before_reading_its_data(tmp_path, capsys):
    (tmp_path / "task.yaml").write_text(f"dataset_name: {tmp_path / 'absent'}\nreward_verifiers: [math]\n")
    assert main(["evaluate", "--config", str(tmp_path / "task.yaml")]) == 2
    error = capsys.readouterr().err
    assert "names no model_name_or_path" in error and "pass --model DIR" in error
