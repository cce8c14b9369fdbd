"""Stage 1 of the math verifier alone: which answer is taken from a completion or a reference."""

import pytest

from trl_grpo_ext.verifiers.math.boxes import find_boxes
from trl_grpo_ext.verifiers.math.extract import extract_answer, extract_reference
from trl_grpo_ext.verifiers.math.letters import letter_answer, reference_letter


@pytest.mark.parametrize(
    "completion, answer",
    [
        (r"so the result is \boxed{42}.", "42"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"nested \boxed{\frac{\sqrt{2}}{2}} done", r"\frac{\sqrt{2}}{2}"),
        (r"\fbox{7}", "7"),
        (r"the answer is \boxed 5 indeed", "5"),
        (r"first \boxed{3}, I mean \boxed{3}", "3"),  # the same box twice is no hedge
        (r"roots \boxed{1}, \boxed{2} and \boxed{3}", "1, 2, 3"),
        (r"$\boxed{(2, 2)} \quad \text{and} \quad \boxed{(6, 2)}$", "(2, 2), (6, 2)"),
        (r"escaped \boxed{\{1, 2\}} set", r"\{1, 2\}"),
        ("<think>maybe \\boxed{1}</think> so \\boxed{2}", "2"),
        ("<answer>17</answer>", "17"),
        ("<think>hmm</think><answer>The answer is \\boxed{9}</answer> trailing 3", "9"),
        ("The final answer is $\\frac{3}{4}$. I hope it is correct.", "\\frac{3}{4}"),
        ("Final Answer: The largest $n$ is 34.", "34"),
        ("Thus the answer is 12.", "12"),
        ("So the answer is: 2x + 3", "2x + 3"),
        ("Natalia sold 72 clips.\n#### 72", "72"),
        ("We get $x = 3$ and then $y = 5$", "y = 5"),
        ("There are 12 ways to do it.", "12"),
        ("costs 1,250 dollars in total.", "1,250"),
        ("2/3", "2/3"),
        (r"\frac{1}{2}", r"\frac{1}{2}"),
        ("(2,4)", "(2,4)"),
        ("x^2+2x+1", "x^2+2x+1"),
        ("Answer: \\( (9+1) \\)", "(9+1)"),
        ("so it is 3\n\nanswer: $-7$", "-7"),
        ("First 42 apples, then 17 pears remain.", "17"),
    ],
)
def test_extracts_the_final_answer(completion, answer):
    assert extract_answer(completion).answer == answer


@pytest.mark.parametrize(
    "completion, how",
    [
        (r"\boxed{1} or maybe, if we reconsider everything, \boxed{2}", "hedge"),
        ("<think>the answer is 5 but I am still thinking", "unclosed_think"),
        ("<think>\\boxed{42}</think> Some other text.", "no_answer"),
        ("no digits at all here, only words.", "no_answer"),
        ("", "no_answer"),
    ],
)
def test_refuses_hedges_and_missing_answers(completion, how):
    extraction = extract_answer(completion)
    assert extraction.answer is None
    assert extraction.how == how


def test_boxed_intermediate_results_followed_by_a_final_answer_are_not_a_hedge():
    text = r"first $\boxed{200}$ then, after some more work, $\boxed{255}$. Final Answer: The final answer is $455$."
    assert extract_answer(text).answer == "455"


def test_unbalanced_box_is_ignored_not_read_to_the_end():
    assert find_boxes(r"\boxed{\frac{1}{2}") == []


@pytest.mark.parametrize(
    "completion, letter",
    [
        ("The answer is (B).", "B"),
        (r"\boxed{C}", "C"),
        (r"$\boxed{\text{(D)}}$", "D"),
        ("I think the correct answer is C", "C"),
        ("The answer is for sure D, it can't be A or B", "D"),
        ("D. it can't be A or B", "D"),
        ("B。不是 A", "B"),
        ("Let's think. It's not A because it fails, so I pick (E) at the end", "E"),
        ("After checking every option, B", "B"),
    ],
)
def test_multiple_choice_letters(completion, letter):
    assert extract_answer(completion, letters="ABCDE").answer == letter


def test_a_letter_inside_a_formula_is_not_a_choice():
    assert letter_answer(r"\mathrm{E}*2", "ABCDE") is None


@pytest.mark.parametrize(
    "reference, letter",
    [("B", "B"), ("(C)", "C"), ("C. x = 42", "C"), ("(D) Alina", "D"), (r"\text{(A)}", "A"), ("E", "E")],
)
def test_reference_letters(reference, letter):
    assert reference_letter(reference) == letter


@pytest.mark.parametrize("reference", ["A:B=1", "A + B", "x", "12", r"\frac{1}{2}", "C = 5"])
def test_references_that_are_not_letters(reference):
    assert reference_letter(reference) is None


@pytest.mark.parametrize(
    "reference, answer",
    [
        (r"\frac{1}{2}", r"\frac{1}{2}"),
        ("72", "72"),
        ("$\\sqrt{2}$", "$\\sqrt{2}$"),
        (r"We compute ... so the total is $\boxed{17}$.", "17"),
        ("Step one. Step two.\n#### 1,234", "1,234"),
        (r"\boxed{1} papers and \boxed{2} bins", "1, 2"),
        (r"a worked solution first finds \boxed{1}, then after more steps settles on \boxed{3}", "3"),
    ],
)
def test_reference_extraction(reference, answer):
    assert extract_reference(reference).answer == answer


def test_empty_reference_is_unusable():
    assert extract_reference("   ").answer is None


@pytest.mark.parametrize(
    "completion, answer, how",
    [
        # A correction the completion ends on settles the answer.
        (r"It is \boxed{3}. No wait, after checking again, it is \boxed{4}", "4", "boxed"),
        (r"So $\boxed{5}$. Hmm, wait, that's wrong: the correct value is $7$.", "7", "correction"),
        ("$\\boxed{5}$.\n\nFinal answer: 7", "7", "anchor"),
        ("Boxes $\\boxed{12}$, then $\\boxed{15}$.\n\n**Final Answer:** $\\boxed{94}$", "94", "boxed"),
        # Unicode keeps its sign and its root; comments and phantoms are not read.
        ("The answer is −7.", "-7", "anchor"),
        ("The answer is 2√3.", r"2\sqrt{3}", "anchor"),
        ("% $\\boxed{12}$\nThe answer is $7$.", "7", "anchor"),
        (r"The answer is $\$18$.", r"\textdollar 18", "anchor"),
        ("The correct answer is **7**.", "7", "anchor"),
    ],
)
def test_final_answer_model(completion, answer, how):
    extraction = extract_answer(completion)
    assert (extraction.answer, extraction.how) == (answer, how)


@pytest.mark.parametrize(
    "completion, how",
    [
        (r"So $\boxed{5}$. Wait, that is wrong.", "retracted"),
        (r"So $\boxed{5}$. Wait, maybe it is 7.", "hedge"),
        (r"$\boxed{\phantom{12}}$", "empty_box"),
    ],
)
def test_a_retracted_box_without_a_new_value_is_no_answer(completion, how):
    extraction = extract_answer(completion)
    assert (extraction.answer, extraction.how) == (None, how)


def test_restatements_are_alternatives_that_must_all_be_right():
    extraction = extract_answer(r"The answer is $\boxed{1000}$ (or $10^3$).")
    assert (extraction.answer, extraction.how, extraction.candidates) == (None, "hedge", ("1000", "10^3"))


@pytest.mark.parametrize(
    "completion, how",
    [
        ("So x = 3 ... So x = 4 ... So x", "hedge"),  # cut off in a loop that never settles
        ("So x = 3. So x = 4. So x", "hedge"),
        ("Let me think about the first", "no_answer"),  # cut off before stating anything: nothing to read
        ("Adding the two numbers gives 7 and", "truncated"),  # the sentence holding 7 was cut
        ("So it is at least 4.", "unparseable: qualified answer"),
        ("The answer could be 3 or it could be 5.", "hedge"),
    ],
)
def test_prose_that_never_settles_gives_no_answer(completion, how):
    extraction = extract_answer(completion)
    assert (extraction.answer, extraction.how) == (None, how)


@pytest.mark.parametrize(
    "completion, answer",
    [
        ("The possible values are 1, 2, 3 and 4.", "1, 2, 3 and 4"),  # the list, not its last item
        ("Counting them: 1, 2, ..., 57.", "1, 2, ..., 57"),
        ("The area is 3π.", r"3\pi"),  # never the 3 out of 3π
        ("So the side is 2√3 cm long.", r"2\sqrt{3}"),
        ("We get x² + 1.", "x^{2} + 1"),
        ("Thus $x = 5$. Checking: $2(5)+1=11$.", "x = 5"),  # a check after the answer is not the answer
        ("To confirm, 68 - 34 = 34.", "34"),
        ("The total is 12.\n\nThis is", "12"),  # cut off after a statement that nothing contradicts
    ],
)
def test_prose_is_read_for_what_it_commits_to(completion, answer):
    assert extract_answer(completion).answer == answer
