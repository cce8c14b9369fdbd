"""Stage 3 of the math verifier alone: structure and sympy comparison of two normalised answers (in-process)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trl_grpo_ext.verifiers.math.compare import compare_task
from trl_grpo_ext.verifiers.math.parse import TooLargeError, guard_size, parse_leaf
from trl_grpo_ext.verifiers.math.structure import Interval, Leaf, Relation, Seq, Union, is_name, parse_structure


def equal(pred: str, ref: str, rel_tol: float = 0.0, abs_tol: float = 0.0):
    return compare_task([(pred, ref)], rel_tol, abs_tol)[0]


@pytest.mark.parametrize(
    "pred, ref",
    [
        (r"\frac{x}{7}+\frac{2}{7}", r"\frac{x+2}{7}"),
        (r"\sec^2(y)", r"\tan^2(y)+1"),
        ("(r+5)(r+5)", "(r+5)^2"),
        (r"2\sqrt{2}", r"\sqrt{8}"),
        (r"\sqrt[3]{8}", "2"),
        (r"918\frac{1}{2}", "918.5"),
        (r"\frac{1}{\sqrt{2}}", r"\frac{\sqrt{2}}{2}"),
        ("0.0833333333", r"\frac{1}{12}"),
        (r"4.123105625617661", r"\sqrt{17}"),
        (r"\pi", "3.14159265"),
        ("2+3i", "3i+2"),
        (r"\frac{3}{4}i", r"\frac{3i}{4}"),
        ("e^{i\\pi}", "-1"),
        ("1,2,3", "3,2,1"),  # a bare list is order-free
        (r"\{1, 2\}", r"\{2, 1\}"),
        ("(1,2,3)", "(1, 2, 3)"),
        ("(1,3)", "1,3"),  # a bare list against a tuple is read in order
        (r"(0.6, 2.6667]", r"(\frac{3}{5}, \frac{8}{3}]"),
        (r"[-1, -\frac{1}{2}) \cup (0, 1)", r"(0, 1) \cup [-1, -0.5)"),
        (r"(-\infty, 3]", r"(-\infty, 3]"),
        ("k=1", "1"),
        ("1", "k = 1"),
        (r"\frac{NO}{BO}=\frac{1}{\sqrt{6}}", r"\frac{1}{\sqrt{6}}"),
        ("(p,q)=(3,2)", "(3,2)"),
        ("x = 5+5+1 = 11", "11"),
        ("35 + 70 = 105", "105"),
        ("y = x^2+2x+1", "2x+1+x^2"),
        ("2x+4y-3=0", r"y=-\frac{1}{2}x+\frac{3}{4}"),
        ("34x+45y-20z+100=0", "-34x-45y+20z-100=0"),
        (r"x \ge 5", r"5 \le x"),
        ("x < 1", "-x > -1"),
        (r"x \le 1", r"-x \ge -1"),
        (r"x \ne 3", r"3 \ne x"),
        (r"-2 \le x \le 7", r"[-2,7]"),
        (r"x > 5", r"(5, \infty)"),
        ("0<f(x)<1", "(0,1)"),
        (r"1\le|z|\le \frac{3}{2}", r"[-\frac{3}{2}, -1] \cup [1, \frac{3}{2}]"),
        (r"a_3 = 2, a_{37} = 19", r"a_{37} = 19, a_3 = 2"),
        ("x = -5, p = \\frac{14}{3}", "-5, \\frac{14}{3}"),
        (r"\pm 2021", "-2021, 2021"),
        (r"1 \pm \sqrt{19}", r"1 - \sqrt{19}, 1 + \sqrt{19}"),
        ("p=5, q=2; p=7, q=2", "(5,2),(7,2)"),
        (r"\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix}", r"\begin{bmatrix}1 & 2 \\ 3 & 4\end{bmatrix}"),
        (
            r"\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix} + \begin{pmatrix}5 & 6 \\ 7 & 8\end{pmatrix}",
            r"\begin{pmatrix}6 & 8 \\ 10 & 12\end{pmatrix}",
        ),
        (r"\frac{1}{3} \approx 0.33", r"\frac{1}{3}"),
        (r"x \approx 11", "11"),
        ("1.000012e-7", "1.00001e-7"),  # within half a unit of the reference's last written digit
        (r"\frac{1}{3}", "0.33"),  # a decimal reference accepts what rounds to it
    ],
)
def test_equal(pred, ref):
    assert equal(pred, ref) is True


@pytest.mark.parametrize(
    "pred, ref",
    [
        ("1e-7", "2e-7"),  # relative tolerance, never fixed decimal rounding
        ("5.001", "5"),
        ("1000001", "1000000"),  # integers are exact
        ("1e-7", "1.00001e-7"),  # the reference is written to 6 digits: 1e-7 differs in the 6th
        ("0.33", r"\frac{1}{3}"),  # an exact reference: a decimal needs 4 significant digits, correctly rounded
        ("x+1", "y+1"),
        ("x^3+2x+1", "x^2+2x+1"),
        ("(2,4)", "(4,2)"),  # tuples are ordered
        ("(3,1)", "1,3"),
        ("[0,1)", "(0,1)"),  # bracket types matter
        ("[0,1)", "[0,1]"),
        ("(0,9)", "[0,9)"),
        ("x > 5", "x < 5"),
        (r"x \ge 5", r"x \le 5"),
        ("x > -1", "x < 1"),
        ("2x+z=1", "1"),  # a genuine equation is not its right-hand side
        ("7 = 11a+c", "11a+c"),
        ("12:00", "1:00"),
        (r"\sqrt{67}, -\sqrt{85}", r"\sqrt{67}"),
        ("1, 2, 3", "1, 2"),
        (r"\{1, 2\}", "(1, 2)"),
        (r"\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix}", r"\begin{pmatrix}1 & 2 \\ 3 & 5\end{pmatrix}"),
        (r"\begin{pmatrix}1 & 2\end{pmatrix}", r"\begin{pmatrix}1 \\ 2\end{pmatrix}"),
        ("2+3i", "2-3i"),
        (r"x \in [-1, 2]", r"[-1, 3]"),
        (r"-[0,1)", "1"),
    ],
)
def test_not_equal(pred, ref):
    assert equal(pred, ref) is False


def test_tolerances_are_options():
    assert equal("3.14", r"\pi", rel_tol=1e-3) is True
    assert equal("3.14", r"\pi", rel_tol=1e-4) is False
    assert equal("1e-13", "0", abs_tol=1e-12) is True


def test_unparseable_prediction_is_wrong_not_a_stray_number():
    result, reason = compare_task([(r"\frac{1}{2", r"\frac{1}{2}")], 1e-4, 1e-12)
    assert result is False
    assert reason.startswith("unparseable")


def test_unparseable_reference_is_unusable():
    result, reason = compare_task([("1", r"\frac{1}{")], 1e-4, 1e-12)
    assert result is None
    assert reason.startswith("unusable_reference")


@pytest.mark.parametrize("latex", [r"2^{10^{10}}", r"10^{100000}", r"100000!", r"x^{99999}"])
def test_huge_powers_and_factorials_are_refused_before_evaluation(latex):
    with pytest.raises(TooLargeError):
        parse_leaf(latex)


def test_moderate_powers_are_allowed():
    guard_size(parse_leaf(r"2^{100}"))
    assert equal(r"2^{10}", "1024") is True


@pytest.mark.parametrize(
    "text, structure",
    [
        ("1, 2", Seq("list", (Leaf("1"), Leaf("2")))),
        (r"\{1\}", Seq("set", (Leaf("1"),))),
        ("(1, 2, 3)", Seq("tuple", (Leaf("1"), Leaf("2"), Leaf("3")))),
        ("[1, 2)", Interval("[", Leaf("1"), Leaf("2"), ")")),
        (
            r"(1,2] \cup [3,4)",
            Union((Interval("(", Leaf("1"), Leaf("2"), "]"), Interval("[", Leaf("3"), Leaf("4"), ")"))),
        ),
        (r"x \le 5", Relation((Leaf("x"), Leaf("5")), (r"\le",))),
        (r"x \in [0, 1]", Interval("[", Leaf("0"), Leaf("1"), "]")),
        ("(x-2)(x+2)", Leaf("(x-2)(x+2)")),
        (r"f(1, 2)", Leaf("f(1, 2)")),
    ],
)
def test_structure(text, structure):
    assert parse_structure(text) == structure


@pytest.mark.parametrize(
    "text, name",
    [
        ("x", True),
        ("a_{37}", True),
        ("f(x)", True),
        ("|AB|", True),
        ("(p,q)", True),
        ("2x", False),
        ("a+3z", False),
        ("7", False),
    ],
)
def test_is_name(text, name):
    assert is_name(text) is name


@pytest.mark.parametrize("seed", range(16))
def test_solution_set_equals_sympy_as_set_for_rational_relations(seed):
    """The shortcut that skips sympy's periodicity check gives exactly `as_set()` on relations of rational functions."""
    import random

    import sympy

    from trl_grpo_ext.verifiers.math.relations import solution_set

    x = sympy.Symbol("x", real=True)
    rng = random.Random(seed)
    relations = [sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge]

    def rational_function():
        numerator = sum(rng.randint(-3, 3) * x**k for k in range(rng.randint(1, 3)))
        denominator = 1 + rng.randint(0, 2) * x**2
        return numerator / denominator

    condition = sympy.true
    while condition in (sympy.true, sympy.false) or condition.free_symbols != {x}:  # relations that stay symbolic
        parts = [rng.choice(relations)(rational_function(), rng.randint(-2, 2)) for _ in range(rng.randint(1, 2))]
        condition = sympy.And(*parts)
    assert solution_set(condition, x) == condition.as_set()


def test_linear_set_is_what_sympy_solves():
    """The directly written solution set of a linear relation equals `_eval_as_set()`, on every relation type, slope
    sign and written form; anything else is left to sympy."""
    import random

    import sympy

    from trl_grpo_ext.verifiers.math.relations import linear_set

    x = sympy.Symbol("x", real=True)
    rng = random.Random(0)
    relations = [sympy.StrictGreaterThan, sympy.GreaterThan, sympy.StrictLessThan, sympy.LessThan, sympy.Eq, sympy.Ne]
    written = 0
    for _ in range(150):
        a = sympy.Rational(rng.randint(-9, 9), rng.randint(1, 5))
        b = sympy.Rational(rng.randint(-20, 20), rng.randint(1, 7))
        side = rng.choice([a * x + b, a * (x + b), (a * x + b) / 3, b - a * x, x + b, -x, x**2 + a * x, 1 / (x + 1)])
        relation = rng.choice(relations)(side, rng.choice([0, b]))
        if relation in (sympy.true, sympy.false) or relation.free_symbols != {x}:
            continue
        solutions = linear_set(relation, x)
        if solutions is not None:
            written += 1
            assert solutions == relation._eval_as_set(), relation
        else:
            assert (
                isinstance(relation, sympy.Ne)
                or not (relation.lhs - relation.rhs).is_polynomial(x)
                or sympy.degree(relation.lhs - relation.rhs, x) != 1
                or a == 0
            ), relation
    assert written >= 80


# Leaves in the shapes of final answers; some need ANTLR's full-context (LL) prediction (`y^x^2` does), some
# meet the decisions that `prediction` takes itself, so every stage of `latex_to_sympy` is exercised.
PARSER_INPUTS = [
    r"\frac{3}{4}",
    r"-\frac{\sqrt{3}}{2}",
    r"x^2+2x+1",
    r"a^2 + b",
    r"2\sqrt{5} - 1",
    r"\sqrt[3]{x^{2}}",
    r"\sin^2(t) + \cos^2(t)",
    r"\log_{2} 8",
    r"e^{-x}",
    r"\sum_{k=0}^{n-1} F_k F_{n-k-1}",
    r"\begin{pmatrix}1 & 0 \\ -2 & 3\end{pmatrix}",
    r"007",
    r"1{,}000",
    r"2.50",
    r"3+4i",
    r"\binom{7}{3}",
    r"|x - 2|",
    r"\frac{n(n+1)}{2}",
    r"y_{1}",
    r"10\%",
    r"45^\circ",
    r"y^x^2",
    r"x_1^2 + x_{2}^{2}",
    r"a_{n-1}^{3} b_k",
    r"x^2_3",
    r"2^{x_1}",
    r"e^{i\pi}",
    r"\sin^{2} x",
    r"3 \pm \sqrt{2}",
    r"\pm 4",
    r"(1, 2)",
    r"[0, 1)",
    r"(x+1)(x-1)",
    r"\{1, 2, 3\}",
    r"\emptyset",
    r"x = 5",
    r"x \in [0, 1]",
    r"[0, 1] \cup [2, 3]",
    r"(a, b) = 3",
    r"1, 2; 3",
    r"\boxed{7}",
    r"x^{2} \le 4",
]


@pytest.mark.parametrize("latex", PARSER_INPUTS)
def test_latex_to_sympy_returns_what_latex2sympy_returns(latex):
    import sympy
    from latex2sympy2_extended import latex2sympy

    from trl_grpo_ext.verifiers.math.parse import PARSE_CONFIG, latex_to_sympy

    expected = latex2sympy(latex, normalization_config=PARSE_CONFIG)
    got = latex_to_sympy(latex)
    assert type(got) is type(expected)
    assert sympy.srepr(got) == sympy.srepr(expected)


@pytest.mark.parametrize("latex", [r"\frac{1}{", r"x + * 2", r"\sqrt{}"])
def test_latex_to_sympy_fails_where_latex2sympy_fails(latex):
    from latex2sympy2_extended import latex2sympy

    from trl_grpo_ext.verifiers.math.parse import PARSE_CONFIG, latex_to_sympy

    def error_of(parse):
        try:
            parse()
        except Exception as exc:  # the library raises bare Exceptions with a readable message
            return f"{type(exc).__name__}: {exc}"
        return None

    expected = error_of(lambda: latex2sympy(latex, normalization_config=PARSE_CONFIG))
    assert expected is not None
    assert error_of(lambda: latex_to_sympy(latex)) == expected  # the LL stage reports the library's own error


def test_sll_stage_parses_simple_input_and_bails_out_on_input_that_needs_ll():
    from antlr4.error.Errors import ParseCancellationException

    from trl_grpo_ext.verifiers.math.parse import PARSE_CONFIG, _Converter, normalize_latex

    assert _Converter(sll=True).parse(normalize_latex(r"\frac{\sqrt{3}}{2}", PARSE_CONFIG)) is not None
    # `x^2+2x+1` failed in SLL mode until `prediction` took its `^2` as a superscript itself
    assert _Converter(sll=True).parse(normalize_latex("x^2+2x+1", PARSE_CONFIG)) is not None
    with pytest.raises(ParseCancellationException):
        _Converter(sll=True).parse(normalize_latex("y^x^2", PARSE_CONFIG))


@pytest.mark.parametrize("latex", PARSER_INPUTS)
def test_certain_predictions_are_what_ll_prediction_returns(latex):
    """Wherever `prediction` would take a decision itself, ANTLR's full LL prediction (the parser's default mode)
    returns the same alternative; and the inputs above meet all three of its decisions."""
    from trl_grpo_ext.verifiers.math.parse import CERTAIN, PARSE_CONFIG, _Converter, normalize_latex

    text = normalize_latex(latex, PARSE_CONFIG)
    kinds = CERTAIN.token_kinds(text)
    absent = CERTAIN.absent_rules(kinds)
    checked = []

    class Recording(_Converter):
        def create_parser(self, latex_str):
            parser = super().create_parser(latex_str)
            predict = parser._interp.adaptivePredict

            def adaptive_predict(input_stream, decision, outer_context):
                mine = CERTAIN.certain(kinds, absent, decision, input_stream)
                theirs = predict(input_stream, decision, outer_context)
                if mine is not None:
                    checked.append((decision, mine, theirs))
                return theirs

            parser._interp.adaptivePredict = adaptive_predict
            return parser

    Recording(sll=False).parse(text)
    assert all(mine == theirs for _, mine, theirs in checked), checked
    RECORDED_DECISIONS.update(decision for decision, _, _ in checked)


RECORDED_DECISIONS: set[int] = set()


def test_certain_predictions_cover_their_three_decisions():
    from trl_grpo_ext.verifiers.math.parse import CERTAIN

    for latex in PARSER_INPUTS:
        test_certain_predictions_are_what_ll_prediction_returns(latex)
    assert RECORDED_DECISIONS == {*CERTAIN.rules, CERTAIN.atom_expr} and len(RECORDED_DECISIONS) == 3


@given(st.text(alphabet="0123456789,", min_size=1, max_size=30).filter(lambda t: any(c.isdigit() for c in t)))
def test_integer_literals_equal_sympy_number(text):
    import sympy

    from trl_grpo_ext.verifiers.math.parse import _Converter

    expected = sympy.Number(text.replace(",", "").lstrip("0") or "0")
    got = _Converter(sll=True).parse_number(text)
    assert type(got) is type(expected) and got == expected


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("F_k F_{n-k-1}", "F_{n-k-1} F_k", True),
        (r"x \cdot y + 1", "1 + y x", True),
        ("(x+1)(x-1)", "x^2 - 1", False),  # equal values, different expressions: rebuilding does not expand
        ("2(x+1)", "2x + 2", True),  # sympy distributes a number over a sum when it builds the product
    ],
)
def test_rebuilt_makes_operand_order_canonical_and_computes_nothing_more(a, b, same):
    from trl_grpo_ext.verifiers.math.expressions import rebuilt

    assert (rebuilt(parse_leaf(a)) == rebuilt(parse_leaf(b))) is same


def test_every_warm_up_input_parses_and_every_warm_up_pair_is_equal():
    from trl_grpo_ext.verifiers.math.parse import latex_to_sympy
    from trl_grpo_ext.verifiers.math.warmup import WARM_UP_LEAVES, WARM_UP_PAIRS

    for latex in WARM_UP_LEAVES:
        latex_to_sympy(latex)  # raises on a shape the installed parser rejects
    for pred, ref in WARM_UP_PAIRS:
        assert compare_task([(pred, ref)], 1e-4, 1e-12) == (True, "symbolic"), (pred, ref)


def test_points_cover_every_sign_and_scale_for_each_variable_and_are_seeded():
    import sympy

    from trl_grpo_ext.verifiers.math.points import points as _points

    x, y = sympy.symbols("x y")
    points = _points([x, y])
    assert points == _points([x, y])
    for symbol in (x, y):
        values = [float(p[symbol]) for p in points]
        assert any(v < -1 for v in values) and any(-1 < v < -0.05 for v in values)
        assert any(0 < v < 0.06 for v in values) and any(v > 5 for v in values)
    assert len({(float(p[x]) > 0, float(p[y]) > 0) for p in points}) >= 3  # the variables vary jointly


@pytest.mark.parametrize(
    "pred, ref, same",
    [
        ("x + 10^{-8}", "x", False),  # evaluated at 40 digits: a 1e-8 difference shows at every scale
        (r"\cosh^2 x - \sinh^2 x", "1", True),  # 26 digits cancel at x = 30, within the working precision
        (r"\sqrt[3]{x^3}", "x", True),  # odd roots of negatives are real
        (r"\ln(x^2)", r"2\ln x", False),  # 2 ln x is undefined for x < 0: the domains differ, so do the answers
        (r"2\ln x", r"2\ln|x|", False),
        (r"\frac{x^2-4}{x-2}", "x+2", True),  # a removable point is never drawn
    ],
)
def test_real_domain_sampling(pred, ref, same):
    assert equal(pred, ref) is same


def _undefined_function_differences(count: int, seed: int) -> list:
    """Differences of two random rational expressions in x, y, the imaginary unit and the undefined functions f, g
    (the shapes that sampling cannot evaluate), some of them identities, some with roots or sines."""
    import random

    import sympy

    rng = random.Random(seed)
    x, y = sympy.symbols("x y", real=True)
    f, g = sympy.Function("f"), sympy.Function("g")
    leaves = [x, y, sympy.I, sympy.Rational(2, 3), sympy.Integer(-3), f(x), f(y), f(x + 1), g(x, 2), g(1, 3),
              f(x**2)]  # fmt: skip
    others = [sympy.sqrt(2), sympy.sin(x), f(sympy.sin(x)), sympy.Abs(f(x))]

    def term(depth: int) -> sympy.Expr:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(others if rng.random() < 0.1 else leaves)
        a, b = term(depth - 1), term(depth - 1)
        return rng.choice([a + b, a * b, a - b, a / b if b != 0 else a, a**2])

    differences = []
    for _ in range(count):
        a = term(3)
        b = rng.choice([term(3), sympy.expand(a), sympy.factor(a), a + f(x) - f(x), term(2)])
        differences.append(sympy.Add(a, -b, evaluate=False))
    return differences


def test_nonzero_at_exact_point_never_refutes_what_simplify_proves_zero():
    import sympy

    from trl_grpo_ext.verifiers.math.expressions import nonzero_at_exact_point

    refuted = zero = 0
    for difference in _undefined_function_differences(150, seed=0):
        if nonzero_at_exact_point(difference):
            refuted += 1
            assert sympy.simplify(difference) != 0, difference
        else:
            zero += sympy.simplify(difference) == 0
    assert refuted >= 25 and zero >= 50, (refuted, zero)  # it decides the rational ones, and meets identities


@pytest.mark.parametrize(
    "difference, refuted",
    [
        ("40/9 - f(x)", True),
        ("f(x) - f(y)", True),
        ("f(x) - f(x**2)", True),  # f is any function: f(x) and f(x^2) differ for some f
        ("-I*a**2*n*o*r*t*l(1, 3) + 40/9", True),  # `Rational(1,3)` read as letters and a function
        ("f(x)*(x + 1) - x*f(x) - f(x)", False),  # zero: an identity
        ("(f(x)**2 - 1)/(f(x) - 1) - f(x) - 1", False),  # zero wherever defined
        ("sqrt(2) - f(x)", False),  # an irrational value: no exact verdict, simplify decides
        ("f(sin(x)) - 1", False),  # f of a sine is no rational function of x
        ("sin(x)**2 + cos(x)**2 - 1", False),
    ],
)
def test_nonzero_at_exact_point(difference, refuted):
    import sympy

    from trl_grpo_ext.verifiers.math.expressions import nonzero_at_exact_point

    symbols = {name: sympy.Symbol(name, real=True) for name in ("x", "y", "a", "n", "o", "r", "t")}
    assert nonzero_at_exact_point(sympy.sympify(difference, locals=symbols)) is refuted
