"""Three decisions of latex2sympy2's grammar taken without ANTLR's prediction where its answer is certain.

Most of a worker's parsing time is ANTLR's `adaptivePredict` at three decisions. Two have lookahead that runs to the
end of the input, so that every new sequence of token types costs a fresh prediction:

- `element: plus_minus_expr | set_atom | relation`: `plus_minus_expr` needs a PLUS_MINUS token (`\\pm`, `\\mp`) and
  every `set_atom` starts with one of FIRST(set_atom) (a bracket, a brace, `\\boxed`, a set symbol). An input without
  PLUS_MINUS, at a token outside FIRST(set_atom), can only be a `relation`.
- `math: set_elements_relation | set_elements | set_relation`: the first needs IN or ASSIGNMENT; `set_relation` needs
  SUBSET, SUPSET, IN, NOTIN or ASSIGNMENT, or is a `minus_expr`, which starts with one of FIRST(minus_expr). An input
  without those tokens, starting outside FIRST(minus_expr), can only be `set_elements`.

The third is where SLL prediction fails on the most common shapes: `x^2`, `a_3`, `x^{2}+1` all end in a syntax
error in SLL mode and are parsed again in LL mode, with full-context prediction that ANTLR does not cache:

- `atom_expr: LETTER (supexpr subexpr | subexpr supexpr | subexpr | supexpr)?`: at `^` followed by a simple exponent
  (`{...}`, or one number, letter or symbol) and no `_` after it, `supexpr subexpr` cannot match; `supexpr` and
  leaving the `^` to the enclosing `exp CARET ...` both match the same inputs, an ambiguity that LL prediction
  resolves to the lower alternative, `supexpr`. Likewise `_` with a simple subscript and no `^` after it is `subexpr`.

When one alternative is the only one that can match the input, it is what full LL prediction returns, so taking it
directly changes no parse. Used only in the SLL pass of `parse.latex_to_sympy`: a wrong path there ends in a syntax
error, and the LL pass (which keeps ANTLR's prediction, so its error messages are unchanged) parses again. The FIRST
sets are read from the installed parser's ATN, and a decision is taken only if its alternatives still call the rules
above in this order: another grammar gets no override.
"""

from __future__ import annotations

from antlr4 import InputStream
from antlr4.atn.Transition import RuleTransition
from antlr4.error.ErrorListener import ErrorListener


def _called_rule(state) -> int | None:
    """The rule that an alternative of a decision calls first (following epsilon transitions)."""
    seen = set()
    while state.stateNumber not in seen:
        seen.add(state.stateNumber)
        calls = [t for t in state.transitions if isinstance(t, RuleTransition)]
        if calls:
            return calls[0].target.ruleIndex
        if len(state.transitions) != 1 or not state.transitions[0].isEpsilon:
            return None
        state = state.transitions[0].target
    return None


class CertainPredictions:
    """For the `element` and `math` decisions: the alternative that is certain for an input (see the module)."""

    def __init__(self, parser_class: type, lexer_class: type):
        self.lexer_class = lexer_class
        atn, p = parser_class.atn, parser_class

        def first(rule: int) -> frozenset[int]:
            return frozenset(t for span in atn.nextTokens(atn.ruleToStartState[rule]).intervals for t in span)

        def decision(rule: int, alternatives: tuple[int, ...]) -> int | None:
            found = [d for d, state in enumerate(atn.decisionToState) if state.ruleIndex == rule]
            if len(found) != 1:
                return None
            called = tuple(_called_rule(t.target) for t in atn.decisionToState[found[0]].transitions)
            return found[0] if called == alternatives else None

        element = decision(p.RULE_element, (p.RULE_plus_minus_expr, p.RULE_set_atom, p.RULE_relation))
        math = decision(p.RULE_math, (p.RULE_set_elements_relation, p.RULE_set_elements, p.RULE_set_relation))
        set_tokens = frozenset((p.SUBSET, p.SUPSET, p.IN, p.NOTIN, p.ASSIGNMENT))
        # decision -> (tokens that must be absent from the input, tokens the decision's first token must not be, alt)
        self.rules: dict[int, tuple[frozenset[int], frozenset[int], int]] = {}
        if element is not None:
            self.rules[element] = (frozenset((p.PLUS_MINUS,)), first(p.RULE_set_atom), 3)
        if math is not None:
            self.rules[math] = (set_tokens, first(p.RULE_minus_expr), 2)
        sup, sub = p.RULE_supexpr, p.RULE_subexpr
        self.atom_expr = decision(p.RULE_atom_expr, (sup, sub, sub, sup, None))
        self.caret, self.underscore, self.open, self.close = p.CARET, p.UNDERSCORE, p.L_BRACE, p.R_BRACE
        self.simple = frozenset((p.NUMBER, p.LETTER_NO_E, p.GREEK_CMD, p.SYMBOL))

    def token_kinds(self, text: str) -> list[int] | None:
        """The token types of `text`, read by a separate lexer (so that the parser's own lexer meets an error where
        it would have); None if the lexer reports an error or a token is off the default channel."""
        lexer = self.lexer_class(InputStream(text))
        lexer.removeErrorListeners()
        errors = _CountErrors()
        lexer.addErrorListener(errors)
        tokens = lexer.getAllTokens()
        if errors.count or any(token.channel != 0 for token in tokens):
            return None
        return [token.type for token in tokens]

    def install(self, parser, text: str) -> None:
        """Make `parser` take the certain alternatives of `text` without prediction."""
        kinds = self.token_kinds(text)
        if kinds is None:
            return
        absent = self.absent_rules(kinds)
        predict = parser._interp.adaptivePredict

        def adaptive_predict(input_stream, decision, outer_context):
            alternative = self.certain(kinds, absent, decision, input_stream)
            return predict(input_stream, decision, outer_context) if alternative is None else alternative

        parser._interp.adaptivePredict = adaptive_predict

    def absent_rules(self, kinds: list[int]) -> dict[int, tuple[frozenset[int], int]]:
        """The rules of `rules` whose tokens are absent from the input: decision -> (excluded first tokens, alt)."""
        types = set(kinds)
        return {
            decision: (excluded_first, alternative)
            for decision, (absent, excluded_first, alternative) in self.rules.items()
            if not types & absent
        }

    def certain(self, kinds: list[int], absent: dict, decision: int, input_stream) -> int | None:
        """The certain alternative at `decision` for the parser's position in `input_stream`, or None."""
        rule = absent.get(decision)
        if rule is not None and input_stream.LA(1) not in rule[0]:
            return rule[1]
        if decision == self.atom_expr:
            index = input_stream.index
            if index < len(kinds) and input_stream.LA(1) == kinds[index]:
                return self.script_alternative(kinds, index)
        return None

    def script_alternative(self, kinds: list[int], index: int) -> int | None:
        """At `atom_expr`'s optional scripts: 4 (`supexpr`) for `^` + a simple exponent not followed by `_`, 3
        (`subexpr`) for `_` + a simple subscript not followed by `^`, None (ask ANTLR) otherwise."""
        kind = kinds[index]
        if kind not in (self.caret, self.underscore):
            return None
        end = self._script_end(kinds, index + 1)
        if end is None:
            return None
        after = kinds[end] if end < len(kinds) else None
        if kind == self.caret:
            return 4 if after != self.underscore else None
        return 3 if after != self.caret else None

    def _script_end(self, kinds: list[int], start: int) -> int | None:
        """Where a script that begins at `start` ends: after its balanced `{...}`, or after one simple token that
        no `^` or `_` extends; None when it is anything else."""
        if start >= len(kinds):
            return None
        if kinds[start] == self.open:
            depth = 0
            for position in range(start, len(kinds)):
                depth += (kinds[position] == self.open) - (kinds[position] == self.close)
                if depth == 0:
                    return position + 1
            return None
        if kinds[start] in self.simple:
            following = kinds[start + 1] if start + 1 < len(kinds) else None
            return start + 1 if following not in (self.caret, self.underscore) else None
        return None


class _CountErrors(ErrorListener):
    def __init__(self):
        self.count = 0

    def syntaxError(self, recognizer, offendingSymbol, line, column, msg, e):  # noqa: N802, N803 (ANTLR's names)
        self.count += 1
