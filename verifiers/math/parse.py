"""One leaf of an answer (a formula without top-level commas or relations) as a sympy object.

Parsed with latex2sympy2_extended through a thin subclass of its converter (two speed-ups, same results); powers and
factorials too large to evaluate are refused before sympy sees them.
"""

from __future__ import annotations

import functools
import logging
import re

import sympy
from antlr4.atn.PredictionMode import PredictionMode
from antlr4.error.Errors import ParseCancellationException
from antlr4.error.ErrorStrategy import BailErrorStrategy
from latex2sympy2_extended import NormalizationConfig, latex2sympy
from latex2sympy2_extended.latex2sympy2 import normalize_latex
from sympy import MatrixBase

from ..core.contract import QUOTED_CHARS
from .normalize import plain_number
from .prediction import CertainPredictions

logger = logging.getLogger("trl_grpo_ext.verifiers.math")

MAX_EXPONENT = 10_000
MAX_MATRIX_POWER = 100
MAX_FACTORIAL = 10_000  # 10000! has 35,660 digits: exact integer arithmetic on it takes milliseconds
PARSE_CONFIG = NormalizationConfig(basic_latex=True, units=False, malformed_operators=False, nits=False, boxed="none")


class UnparseableError(ValueError):
    """The LaTeX of one side could not be turned into a sympy object."""


class TooLargeError(ValueError):
    """An expression contains a power or factorial too large to evaluate safely."""


@functools.lru_cache(maxsize=4096)
def parse_leaf(latex: str) -> sympy.Basic:
    value = plain_number(latex)
    if value is not None:  # decimals stay approximate (compared with tolerance), integers and fractions exact
        if re.search(r"[.eE]", latex):
            return sympy.Float(latex.replace(" ", ""), 30)
        return sympy.Rational(value.numerator, value.denominator)
    latex, double_factorials = _double_factorials(latex)
    try:
        expr = latex_to_sympy(latex)
    except Exception as exc:
        if not is_invalid_latex(exc):  # a bug (the parser's, sympy's, ours) on this input: comparison_error
            raise
        raise UnparseableError(
            f"cannot parse {latex!r}: {(str(exc).splitlines() or [''])[0][:QUOTED_CHARS]}"
        ) from None
    if double_factorials and isinstance(expr, sympy.Basic):
        expr = expr.xreplace(double_factorials)
    guard_size(expr)
    if isinstance(expr, sympy.MatrixExpr) or (isinstance(expr, sympy.Basic) and expr.has(sympy.MatrixExpr)):
        expr = expr.doit()  # "A + B" of explicit matrices
        if isinstance(expr, sympy.MatPow) and expr.exp.is_Integer and 0 <= expr.exp <= MAX_MATRIX_POWER:
            expr = sympy.Matrix(expr.base) ** int(expr.exp)  # a power of an explicit matrix, worked out
    if isinstance(expr, sympy.Basic) and expr.has(sympy.UnevaluatedExpr):  # `\gcd(12, 18)`, `\lcm(4, 6)`
        expr = expr.replace(lambda node: isinstance(node, sympy.UnevaluatedExpr), lambda node: node.args[0])
    symbol_i = sympy.Symbol("i")
    if isinstance(expr, sympy.Basic) and symbol_i in expr.free_symbols:
        expr = expr.subs(symbol_i, sympy.I)  # `i` is the imaginary unit in answers
    return expr


def is_invalid_latex(exc: Exception) -> bool:
    """Whether the parser refused the text as LaTeX it does not accept. latex2sympy2_extended says so with a bare
    `Exception` (its syntax-error listener and its "Unrecognized ..." checks); every other type comes from deeper
    (sympy building the expression, a converter bug) and is not a statement about the answer."""
    return type(exc) is Exception or isinstance(exc, ParseCancellationException)


DOUBLE_FACTORIAL_PLACEHOLDER = "\\Omega_{{{}}}"  # parsed as the symbol omega_{N}, replaced by factorial2 afterwards
PLACEHOLDER_BASE = 770001


def _operand_start(latex: str, end: int) -> int:
    """Where the operand that ends just before `end` begins: a bracketed group, a number, or one letter."""
    closers = {")": "(", "}": "{", "]": "["}
    if end > 0 and latex[end - 1] in closers:
        depth = 0
        for i in range(end - 1, -1, -1):
            if latex[i] in closers:
                depth += 1
            elif latex[i] in closers.values():
                depth -= 1
                if depth == 0:
                    return i
        return -1
    i = end
    while i > 0 and latex[i - 1].isdigit():
        i -= 1
    if i == end and end > 0 and latex[end - 1].isalpha():
        i = end - 1
    return i if i < end else -1


def _double_factorials(latex: str) -> tuple[str, dict]:
    """`n!!`, `7!!`, `(2k-1)!!` are double factorials (the parser reads `n!!` as `(n!)!`): each operand is parsed on
    its own, and stands in the text as a placeholder symbol that is replaced by `factorial2(operand)`."""
    replacements: dict = {}
    position = latex.find("!!")
    while position >= 0:
        start = _operand_start(latex, position)
        if start < 0:
            raise UnparseableError(f"cannot parse {latex!r}: a double factorial without an operand")
        operand = latex[start:position]
        value = parse_leaf(operand[1:-1] if operand[:1] in "({[" else operand)
        if isinstance(value, sympy.Basic) and value.is_Number and value > MAX_FACTORIAL:
            raise TooLargeError(f"double factorial of {value} is above {MAX_FACTORIAL}")
        index = PLACEHOLDER_BASE + len(replacements)
        replacements[sympy.Symbol(f"omega_{{{index}}}")] = sympy.factorial2(value)
        name = DOUBLE_FACTORIAL_PLACEHOLDER.format(index)
        latex = latex[:start] + name + latex[position + 2 :]
        position = latex.find("!!")
    return latex, replacements


# The converter class of latex2sympy2_extended is not public API: these are the versions it was tested with
# (tests/verifiers/math/test_latex2sympy_contract.py, the dependency in pyproject.toml), and the methods of it that
# `_Converter` overrides or calls. A release without them gets the public entry point, with a warning.
LATEX2SYMPY_VERSIONS = ">=1.10,<2"
CONVERTER_METHODS = ("create_parser", "parse_number", "parse")


def _private_converter() -> tuple[type, type, type] | str:
    """(converter class, parser, lexer) of latex2sympy2_extended, or why they cannot be used."""
    try:
        from latex2sympy2_extended.latex2sympy2 import PSLexer, PSParser, _Latex2Sympy
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    missing = [name for name in CONVERTER_METHODS if not callable(getattr(_Latex2Sympy, name, None))]
    if missing:
        return f"its converter class has no {', '.join(missing)}"
    return _Latex2Sympy, PSParser, PSLexer


_private = _private_converter()
if isinstance(_private, str):
    _Latex2Sympy, CERTAIN, FALLBACK_REASON = object, None, _private
else:
    _Latex2Sympy, CERTAIN, FALLBACK_REASON = _private[0], CertainPredictions(*_private[1:]), None


@functools.cache
def _warn_fallback() -> None:
    """Once per process: the parser's private API is missing, so parsing is slower (same results)."""
    logger.warning(
        "latex2sympy2_extended's private converter cannot be used (%s; tested with latex2sympy2_extended%s): "
        "answers are parsed through its public latex2sympy(), with the same results and without the speed-ups.",
        FALLBACK_REASON,
        LATEX2SYMPY_VERSIONS,
    )


class _Converter(_Latex2Sympy):
    """latex2sympy2_extended's converter, with three speed-ups that do not change its result.

    - `sll=True` puts its ANTLR parser in SLL prediction mode and bails out on the first error: ANTLR's documented
      two-stage strategy. SLL prediction ignores the calling context, so it skips full-context lookahead and builds
      fewer prediction states; it either returns exactly the tree that the default LL mode returns or reports a syntax
      error, and then `latex_to_sympy` parses again in LL mode.
    - In SLL mode, two decisions whose lookahead runs to the end of the input are taken without prediction when only
      one alternative can match it (`prediction`).
    - Integer literals become `sympy.Integer` directly; the library passes them through `sympy.Number(text)`, which
      runs sympy's string parser (about 1 ms) for the same value.
    """

    def __init__(self, sll: bool):
        super().__init__()
        self.sll = sll

    def create_parser(self, latex_str):
        parser = super().create_parser(latex_str)
        if self.sll:
            parser._interp.predictionMode = PredictionMode.SLL
            parser.removeErrorListeners()
            parser._errHandler = BailErrorStrategy()  # raises ParseCancellationException instead of recovering
            CERTAIN.install(parser, latex_str)
        return parser

    def parse_number(self, text):
        digits = text.replace(",", "")
        if digits.isascii() and digits.isdigit():
            return sympy.Integer(int(digits))
        return super().parse_number(text)


def latex_to_sympy(latex: str) -> object:
    """What `latex2sympy(latex, normalization_config=PARSE_CONFIG)` returns, parsed SLL first and LL only if needed."""
    if FALLBACK_REASON is not None:
        _warn_fallback()
        return latex2sympy(latex, normalization_config=PARSE_CONFIG)
    text = normalize_latex(latex, PARSE_CONFIG)
    try:
        return _Converter(sll=True).parse(text)
    except ParseCancellationException:  # a real syntax error, or input that needs full-context (LL) prediction
        return _Converter(sll=False).parse(text)


def guard_size(expr: object) -> None:
    """Refuse `2^{10^{9}}`, `100000!` and the like before anything tries to evaluate them exactly."""
    if not isinstance(expr, (sympy.Basic, MatrixBase)):
        return
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow) and node.exp.is_Number and abs(node.exp) > MAX_EXPONENT:
            if not (node.base.is_Number and abs(node.base) <= 1):
                raise TooLargeError(f"exponent {node.exp} is above {MAX_EXPONENT}")
        if isinstance(node, sympy.Pow) and isinstance(node.exp, sympy.Pow):
            guard_size(node.exp.doit())  # towers: 2^{10^{10}}
            if node.exp.doit().is_Number and abs(node.exp.doit()) > MAX_EXPONENT:
                raise TooLargeError("power tower is too large")
        if isinstance(node, (sympy.factorial, sympy.factorial2)) and node.args[0].is_Number:
            if node.args[0] > MAX_FACTORIAL:
                raise TooLargeError(f"factorial of {node.args[0]} is above {MAX_FACTORIAL}")
