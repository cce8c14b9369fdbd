"""The front page: short, every figure it quotes recorded in docs/benchmarks.md (its links: tests/test_docs.py)."""

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
README = (REPO_ROOT / "README.md").read_text()
BENCHMARKS = (REPO_ROOT / "docs" / "benchmarks.md").read_text()
NUMBER = re.compile(r"(?<![\w.])[+-]?\d[\d,]*(?:\.\d+)?(?![\w.]*\d)")
RATIO_PREFIX = re.compile(r"\bx(?=\d)")  # "x2.37": a ratio, read as the number 2.37
FIGURE_OUTSIDE_MEASURED = re.compile(r"->|\d\s?%|\b\d+(?:\.\d+)?x\b|\bx\d")
MAX_LINES = 110  # about one screen and a scroll: details live in docs/


def prose(markdown: str) -> str:
    """The text without fenced code blocks and inline code spans."""
    text = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", markdown, flags=re.S))
    return RATIO_PREFIX.sub(" ", text)


def section(markdown: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", markdown, flags=re.M | re.S)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def test_readme_fits_on_a_screen():
    assert len(README.splitlines()) <= MAX_LINES


def test_every_number_of_the_measured_section_is_recorded_in_the_benchmarks_page():
    measured = prose(section(README, "Measured"))
    numbers = {n.lstrip("+") for n in NUMBER.findall(measured)} - {"0", "1", "2", "3"}
    assert len(numbers) >= 10, numbers
    recorded = {n.lstrip("+") for n in NUMBER.findall(RATIO_PREFIX.sub(" ", BENCHMARKS))}
    assert sorted(numbers - recorded) == []


def test_figures_appear_only_in_the_measured_section():
    outside = re.sub(
        r"`[^`\n]*`", "", re.sub(r"```.*?```", "", README.replace(section(README, "Measured"), ""), flags=re.S)
    )
    assert FIGURE_OUTSIDE_MEASURED.findall(outside) == []
