"""Compound units (a power on the last unit, negative powers written as a product), vectors written as one column or
one row of a matrix, and ordinals ("the 3rd", "the third") (docs/verifiers.md). Each class: controls that must pay and
attacks that must score 0, on both sides."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers.math.units import canonical_unit, unit_as_quotient

PAID = [
    (r"\boxed{9.8 \text{ m/s}^2}", r"9.8 \text{ m/s}^2"),
    (r"\boxed{9.8\ \mathrm{m/s^2}}", "9.8"),
    (r"\boxed{60 \mathrm{km\,h^{-1}}}", "60"),
    (r"\boxed{60 \mathrm{km\,h^{-1}}}", r"60 \text{ km/h}"),
    (r"\boxed{9.8 \mathrm{m\,s^{-2}}}", r"9.8 \text{ m/s}^2"),
    (r"\boxed{3 \mathrm{kg\cdot m^{-3}}}", r"3 \text{ kg/m}^3"),
    (r"\boxed{\begin{pmatrix}1\\2\\3\end{pmatrix}}", "(1,2,3)"),
    (r"\boxed{(1,2,3)}", r"\begin{pmatrix}1\\2\\3\end{pmatrix}"),
    (r"\boxed{\begin{bmatrix}1\\2\\3\end{bmatrix}}", "(1, 2, 3)"),
    (r"\boxed{\begin{pmatrix}1&2&3\end{pmatrix}}", "(1,2,3)"),
    (r"\boxed{\begin{pmatrix}\frac12\\-3\end{pmatrix}}", r"\left(\frac{1}{2}, -3\right)"),
    ("The answer is the 3rd.", "3"),
    ("The answer is the third.", "3"),
    (r"\boxed{21st}", "21"),
    ("The answer is the 11th.", "11"),
    ("The answer is a third.", r"\frac13"),  # with "a", the fraction
]
REFUSED = [
    (r"\boxed{60 \mathrm{km\,h^{-1}}}", r"60 \text{ mph}"),  # another unit
    (r"\boxed{9.8 \mathrm{m\,s^{-1}}}", r"9.8 \text{ m/s}^2"),  # another power
    (r"\boxed{9.8 \text{ m/s}}", r"9.8 \text{ m/s}^2"),
    (r"\boxed{9.8 \text{ m/s}^2}", r"9.8 \text{ m/s}"),
    (r"\boxed{10 \text{ m/s}^2}", r"9.8 \text{ m/s}^2"),  # another value
    (r"\boxed{(1,3,2)}", r"\begin{pmatrix}1\\2\\3\end{pmatrix}"),  # another order
    (r"\boxed{(1,2)}", r"\begin{pmatrix}1\\2\\3\end{pmatrix}"),  # an entry dropped
    (r"\boxed{\begin{pmatrix}1&2\\3&4\end{pmatrix}}", "(1,2,3,4)"),  # a 2 x 2 matrix is no vector
    (r"\boxed{\begin{vmatrix}1&2\\3&4\end{vmatrix}}", "(1,2,3,4)"),  # nor a determinant
    (r"\boxed{\{1,2,3\}}", r"\begin{pmatrix}1\\2\\3\end{pmatrix}"),  # a set is unordered
    (r"\boxed{3th}", "3"),  # a numeral with another's suffix
    ("The answer is the 12nd.", "12"),
    ("The answer is the 4th.", "3"),
    ("The answer is a third.", "3"),  # "a third" is 1/3
    (r"\boxed{\text{third}}", "3"),  # and "third" alone may be
    ("The answer is the third.", r"\frac{1}{3}"),
]


def test_a_unit_or_a_vector_in_another_notation_pays(score_pairs):
    assert [row for row in score_pairs(PAID) if row[2] != 1.0] == []


def test_another_unit_power_value_or_shape_scores_zero(score_pairs):
    assert [row for row in score_pairs(REFUSED) if row[2] != 0.0] == []


@pytest.mark.parametrize(
    ("text", "quotient"),
    [
        (r"60 \mathrm{km h^{-1}}", r"60 \text{km/h}"),
        (r"9.8 \text{m s^{-2}}", r"9.8 \text{m/s^2}"),
        (r"9.8 \text{m/s^{2}}", r"9.8 \text{m/s^2}"),
        (r"3 \mathrm{kg\cdot m^{-3}}", r"3 \text{kg/m^3}"),
        (r"5 \text{cm}^2", r"5 \text{cm}^2"),  # no braces inside: as it was
        (r"2 \text{m^{-1} s^{-1}}", r"2 \text{m^{-1} s^{-1}}"),  # not one unit per another: left to refuse
    ],
)
def test_a_unit_with_negative_powers_is_written_as_a_quotient(text, quotient):
    assert unit_as_quotient(text) == quotient


def test_a_power_binds_to_the_last_unit():
    assert canonical_unit("m/s", "^2") == "m/s^2"
    assert canonical_unit("cm", "^2") == "cm^2"
    assert canonical_unit("km/h") == "km/h" and canonical_unit("miles per hour") == "mph"
