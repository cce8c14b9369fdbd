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
