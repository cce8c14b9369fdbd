"""The README and docs/: every relative link resolves, to a file of the repository and, with an anchor, to one of
its headings (as GitHub names them)."""

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)")
FENCED = re.compile(r"^ *```.*?^ *```", flags=re.M | re.S)  # a fence opens a line (inline spans may hold ```)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def links(page: Path) -> list[tuple[str, str]]:
    """(path, anchor) of each relative link outside code blocks; path "" for the page's own anchors."""
    text = FENCED.sub("", page.read_text())
    return [(path, name) for path, name in LINK.findall(text) if "://" not in path and not path.startswith("mailto:")]


def test_the_pages_have_links():
    assert sum(len(links(page)) for page in PAGES) >= 50


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_and_anchor_resolves(page):
    for path, name in links(page):
        target = (page.parent / path).resolve() if path else page
        assert target.exists() and REPO_ROOT in target.parents, f"{page.name}: ({path})"
        if name and target.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", FENCED.sub("", target.read_text()), flags=re.M)
            assert name in {anchor(h) for h in headings}, f"{page.name}: ({path}#{name})"


# The code and the docs speak of the project as it is: which tracker issue asked for something is history.
TRACKER_REFERENCE = re.compile(r"\b[Ii]ssues? \d+|\bissue-\d+")
SOURCES = [
    path
    for folder in ("trl_grpo_ext", "verifiers", "examples", "benchmarks", "tests", "docs")
    for path in sorted((REPO_ROOT / folder).rglob("*"))
    if path.suffix in (".py", ".md", ".yaml", ".sh") and "__pycache__" not in path.parts
]


def test_no_file_names_a_tracker_issue():
    assert len(SOURCES) > 100
    found = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for path in [REPO_ROOT / "README.md", REPO_ROOT / "Makefile", *SOURCES]
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if TRACKER_REFERENCE.search(line)
    ]
    assert not found, found
