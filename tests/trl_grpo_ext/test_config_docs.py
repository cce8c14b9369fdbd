"""The fields' help is their one description: docs/config.md and the class docstring are rendered from it."""

import dataclasses

import pytest
from trl import GRPOConfig, TrlParser

from trl_grpo_ext import GRPOExtConfig
from trl_grpo_ext.trainer.config import FIELD_SECTIONS
from trl_grpo_ext.trainer.config_docs import DOCS_PAGE, render_page
from trl_grpo_ext.trainer.field_docs import markdown_table, own_fields, sections


def test_docs_page_holds_the_table_the_fields_render():
    page = DOCS_PAGE.read_text()
    assert render_page(page, markdown_table(GRPOExtConfig, GRPOConfig, FIELD_SECTIONS)) == page, (
        "docs/config.md is stale: run `python -m trl_grpo_ext.trainer.config_docs --write`"
    )


def test_code_verifier_page_holds_the_table_the_options_render():
    from trl_grpo_ext.trainer.config_docs import OPTIONS_BEGIN, OPTIONS_PAGE, code_verifier_options_table

    page = OPTIONS_PAGE.read_text()
    table = code_verifier_options_table()
    assert render_page(page, table, OPTIONS_BEGIN) == page, (
        "docs/code_verifier.md is stale: run `python -m trl_grpo_ext.trainer.config_docs --write`"
    )
    assert "| `timeout_s` | `10.0` | The candidate's own time per sandbox run, in seconds: the CPU time" in table
    assert "| `cpp_flags` | `['-O2', '-std=c++17']` |" in table and "\\|got - want\\|" in table


def test_every_added_field_is_in_one_section_with_help_in_the_docstring_and_in_help_output(capsys):
    names = [f.name for f in own_fields(GRPOExtConfig, GRPOConfig)]
    assert "advantage_estimator" in names and "retire_solved_after" in names
    grouped = sections(GRPOExtConfig, GRPOConfig, FIELD_SECTIONS)
    assert sorted(f.name for fields in grouped.values() for f in fields) == sorted(names)
    with pytest.raises(SystemExit):
        TrlParser((GRPOExtConfig,)).parse_args(["--help"])
    help_output = " ".join(capsys.readouterr().out.split())
    for f in own_fields(GRPOExtConfig, GRPOConfig):
        first_words = " ".join(f.metadata["help"].split()[:6])
        assert f"{f.name} (`" in GRPOExtConfig.__doc__
        assert first_words in " ".join(GRPOExtConfig.__doc__.split())
        assert first_words in help_output.replace("%%", "%")


def test_a_field_left_out_of_the_sections_or_without_help_is_refused():
    @dataclasses.dataclass
    class Base:
        a: int = 0

    @dataclasses.dataclass
    class Extended(Base):
        b: int = dataclasses.field(default=1, metadata={"help": "B."})
        c: int = 2

    with pytest.raises(ValueError, match=r"list each field in one section"):
        sections(Extended, Base, {"S": ("b",)})
    with pytest.raises(ValueError, match=r"without metadata 'help': c"):
        sections(Extended, Base, {"S": ("b", "c")})


def test_render_page_replaces_only_the_generated_block_and_needs_its_markers():
    from trl_grpo_ext.trainer.config_docs import BEGIN, END

    page = f"intro\n{BEGIN}\nold\n{END}\noutro\n"
    assert render_page(page, "new\n") == f"intro\n{BEGIN}\n\nnew\n\n{END}\noutro\n"
    with pytest.raises(ValueError, match="no generated block"):
        render_page("no markers", "new")
