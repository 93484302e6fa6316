"""Every fix example that carries inputs runs before and after its fix, side by side, with torch on
the CPU, in each of its inputs (FixInput, ptlint.engine.rule): the outcomes are equal (bit for bit,
or within the tolerance the input documents where the fix changes rounding), or related as the
input's `check` says (the difference an unsafe fix's page names; the value the original gets
wrong and the fix gets right). The inputs live with the rule's examples; this is the only test
that runs them. Inputs that need a CUDA device run where there is one."""

from __future__ import annotations

import pytest
from fix_runs import cuda, side_by_side

from ptlint.engine.registry import all_rules
from ptlint.front.api import fix_text

RULES = all_rules()
CASES = [pytest.param(code, example, fix_input, id=f"{code}-{index}-{fix_input.name}")
         for code, rule in sorted(RULES.items()) for index, example in enumerate(rule.fix_examples)
         for fix_input in example.inputs]


@pytest.mark.parametrize("code,example,fix_input", CASES)
def test_fix_example_behaves_alike_in_its_input(code, example, fix_input):
    if fix_input.device == "cuda" and not cuda():
        pytest.skip("this input needs a CUDA device (run on one: see CONTRIBUTING)")
    agree, outcomes = side_by_side(example.before, example.after, fix_input)
    assert agree, outcomes


@pytest.mark.parametrize("code", sorted(code for code, rule in RULES.items() if rule.fixable))
def test_every_fixable_rule_runs_its_fixes_side_by_side(code):
    examples = [e for e in RULES[code].fix_examples if e.before != e.after]
    assert any(e.inputs for e in examples), f"{code}: no fix example carries inputs to run it in"


def test_an_example_with_inputs_is_one_the_rule_fixes():
    """Inputs on an example the fixer does not change would compare the code with itself."""
    for code, rule in RULES.items():
        for example in rule.fix_examples:
            if example.inputs:
                assert fix_text(example.before, [code], unsafe=example.unsafe) == example.after != example.before, \
                    (code, example.before)


def test_the_states_are_many():
    """Every fixable rule's examples run in at least two states, and all together in at least as
    many as the side-by-side tests they replaced (see the report of this change)."""
    assert len(CASES) >= 420, len(CASES)
