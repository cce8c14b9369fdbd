"""Which model and dataset names are left for the Hub's loader and which must be local paths: huggingface_hub's own
rule for a repository id (`validate_repo_id`), never a pattern of ours."""

from __future__ import annotations

import pytest

from trl_grpo_ext.usage import UsageError, check_dataset_path, check_model_path, not_a_hub_id

HUB_IDS = ["gpt2", "Qwen/Qwen2.5-0.5B-Instruct", "openai/gsm8k", "a_b/c.d-e", "o/" + "n" * 96]
# Each of these fullmatched the pattern `[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?` once used here, and is no Hub id.
NOT_HUB_IDS = ["a--b/c", "a/b..c", "o/" + "n" * 97, "n" * 97, "a-/b", "a/b.", "a/b.git", "é/model"]


@pytest.mark.parametrize("value", HUB_IDS)
def test_a_possible_hub_id_is_left_for_the_loader(value):
    assert not_a_hub_id(value) is None
    check_model_path("model_name_or_path", value)
    assert check_dataset_path("dataset_name", value) is False


@pytest.mark.parametrize("value", NOT_HUB_IDS)
def test_a_name_the_hub_rejects_must_be_an_existing_path(value):
    assert not_a_hub_id(value) is not None
    with pytest.raises(UsageError, match=r"^model_name_or_path=.* does not exist; .*\(not a Hub id: .*\)$"):
        check_model_path("model_name_or_path", value)
    with pytest.raises(UsageError, match=r"^dataset_name=.* does not exist; .*\(not a Hub id: .*\)$"):
        check_dataset_path("dataset_name", value)


def test_the_error_says_why_the_name_is_no_hub_id():
    with pytest.raises(UsageError) as error:
        check_model_path("model_name_or_path", "a--b/c")
    assert str(error.value).endswith("(not a Hub id: Cannot have -- or .. in repo_id: 'a--b/c'.)")


@pytest.mark.parametrize("name", ["a--b", "a/b..c", "x" * 97])
def test_local_paths_are_accepted_whatever_their_name(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).mkdir(parents=True)
    (tmp_path / name / "config.json").write_text("{}")
    check_model_path("model_name_or_path", name)
    assert check_dataset_path("dataset_name", name) is True
    absolute = str(tmp_path / name)
    check_model_path("model_name_or_path", absolute)
    assert check_dataset_path("dataset_name", absolute) is True


def test_a_missing_path_is_refused():
    for value in ("./models/x", "/nowhere/at/all", "~/no-such-folder-here/x"):
        with pytest.raises(UsageError, match="does not exist"):
            check_model_path("model_name_or_path", value)
        with pytest.raises(UsageError, match="does not exist"):
            check_dataset_path("dataset_name", value)
