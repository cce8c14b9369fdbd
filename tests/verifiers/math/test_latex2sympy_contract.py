"""What the math verifier's parser relies on in latex2sympy2_extended that is not its public API: the converter
class `_Latex2Sympy` (subclassed by `parse._Converter`), its parser and lexer classes, and the ANTLR parser
attributes the speed-ups set. The versions they were tested with are pinned in pyproject.toml; a release without
them falls back to the public `latex2sympy()` with one warning (same results, slower).

Every name the package imports from latex2sympy2_extended, and every method `_Converter` overrides or calls, is also
checked by the derived checks of tests/trl_grpo_ext/test_trl_contract.py.
"""

from __future__ import annotations

import importlib.metadata
import logging
import tomllib
from pathlib import Path

import latex2sympy2_extended.latex2sympy2 as library
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from trl_grpo_ext.verifiers.math import parse

REPO = Path(__file__).resolve().parents[3]


def test_the_tested_range_is_the_dependency_and_holds_the_installed_version():
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"latex2sympy2_extended{parse.LATEX2SYMPY_VERSIONS}" in dependencies
    installed = Version(importlib.metadata.version("latex2sympy2_extended"))
    assert SpecifierSet(parse.LATEX2SYMPY_VERSIONS).contains(installed, prereleases=True)


def test_the_installed_version_has_the_private_converter():
    assert parse.FALLBACK_REASON is None and parse._Latex2Sympy is library._Latex2Sympy
    assert parse.CERTAIN is not None


def test_the_parser_has_the_antlr_attributes_the_speed_ups_set():
    parser = library._Latex2Sympy().create_parser("x^{2}+1")
    assert isinstance(parser, library.PSParser)
    assert callable(parser._interp.adaptivePredict) and hasattr(parser._interp, "predictionMode")
    assert hasattr(parser, "_errHandler")


def test_a_release_without_the_converter_is_told_apart(monkeypatch):
    monkeypatch.delattr(library, "_Latex2Sympy")
    assert parse._private_converter().startswith("ImportError: ")


def test_a_converter_without_a_method_the_subclass_overrides_is_told_apart(monkeypatch):
    class Renamed:
        def create_parser(self, text): ...

        def parse(self, text): ...

    monkeypatch.setattr(library, "_Latex2Sympy", Renamed)
    assert parse._private_converter() == "its converter class has no parse_number"


def test_the_fallback_parses_through_the_public_entry_point_and_warns_once(monkeypatch, caplog):
    texts = [r"\frac{x^2}{3} + 12", r"2^{10} - y_1"]
    expected = [parse.latex_to_sympy(text) for text in texts]
    monkeypatch.setattr(parse, "FALLBACK_REASON", "its converter class has no parse_number")
    parse._warn_fallback.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.verifiers.math"):
            assert [parse.latex_to_sympy(text) for text in texts] == expected
    finally:
        parse._warn_fallback.cache_clear()
    warnings = [r for r in caplog.records if "private converter" in r.getMessage()]
    assert len(warnings) == 1
    assert "has no parse_number" in warnings[0].getMessage() and parse.LATEX2SYMPY_VERSIONS in warnings[0].getMessage()
