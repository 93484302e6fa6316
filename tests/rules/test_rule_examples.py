"""Every rule's embedded examples: bad ones trigger exactly on their `# expect:` lines, good
ones never trigger it, and fix examples turn `before` into `after`."""

from __future__ import annotations

import ast
import re

import pytest

from ptlint.engine.registry import all_rules
from ptlint.engine.rule import DOC_SECTIONS, doc_section
from ptlint.front.api import check_text, fix_text

RULES = all_rules()
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z0-9, ]+)")
EXPECT_MARKER = re.compile(r"[ \t]*#\s*expect:\s*[A-Z0-9, ]+$", re.MULTILINE)


def _cases(kind: str):
    for code, cls in RULES.items():
        for index, example in enumerate(getattr(cls, kind)):
            yield pytest.param(code, example, id=f"{code}-{index}")


def expected_lines(text: str, code: str) -> list[int]:
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        match = EXPECT.search(line)
        if match and code in {c.strip() for c in match.group("codes").split(",")}:
            lines.append(number)
    return lines


@pytest.mark.parametrize("code,example", list(_cases("bad_examples")))
def test_bad_example_triggers_on_marked_lines(code, example):
    expected = expected_lines(example, code)
    assert expected, "a bad example must mark its expected lines with `# expect: CODE`"
    found = sorted(f.line for f in check_text(example, [code]) if f.code == code)
    assert found == expected


@pytest.mark.parametrize("code,example", list(_cases("good_examples")))
def test_good_example_does_not_trigger(code, example):
    ast.parse(example)
    assert [f for f in check_text(example, [code]) if f.code == code] == []


def declined(example) -> bool:
    """A fix example whose `after` is its `before`: the rule finds the problem there but offers no
    fix (one would change behaviour). Anything else is a fix, and must change the text."""
    return example.before == example.after


@pytest.mark.parametrize("code,example", [p for p in _cases("fix_examples") if not declined(p.values[1])])
def test_fix_example(code, example):
    assert fix_text(example.before, [code], unsafe=example.unsafe) == example.after
    # a fix is stable: running again changes nothing
    assert fix_text(example.after, [code], unsafe=example.unsafe) == example.after
    if example.unsafe:  # an unsafe fix is not applied without --unsafe-fixes
        assert fix_text(example.before, [code], unsafe=False) == example.before


@pytest.mark.parametrize("code,example", list(_cases("unfixable_examples")))
def test_unfixable_example_is_reported_without_a_fix(code, example):
    expected = expected_lines(example, code)
    assert expected, "an unfixable example must mark its expected lines with `# expect: CODE`"
    findings = [f for f in check_text(example, [code]) if f.code == code]
    assert sorted(f.line for f in findings) == expected
    assert all(f.fix is None for f in findings)
    assert fix_text(example, [code], unsafe=True) == example
    # the `# expect:` markers are comments, and a fix that would drop a comment is declined:
    # without them the example must still get no fix, for the reason it was written for
    bare = EXPECT_MARKER.sub("", example)
    findings = [f for f in check_text(bare, [code]) if f.code == code]
    assert len(findings) == len(expected) and all(f.fix is None for f in findings)
    assert fix_text(bare, [code], unsafe=True) == bare


@pytest.mark.parametrize("code,example", [p for p in _cases("fix_examples") if declined(p.values[1])])
def test_declined_fix_example(code, example):
    """A fixer that does nothing passes `before == after`; so the example must be a finding of the
    rule (or it shows nothing), and that finding must offer no fix (or the editor would offer one
    that does nothing)."""
    findings = [f for f in check_text(example.before, [code]) if f.code == code]
    assert findings, "a declined-fix example must be something the rule reports"
    assert [f.fix for f in findings] == [None] * len(findings)
    assert fix_text(example.before, [code], unsafe=True) == example.before


@pytest.mark.parametrize("code", [code for code, cls in RULES.items() if cls.fixable])
def test_fixable_rule_has_a_fix_that_changes_code(code):
    assert [e for e in RULES[code].fix_examples if not declined(e)], f"{code} has no fix example that fixes"


@pytest.mark.parametrize("code", list(RULES))
def test_rule_is_documented_with_examples(code):
    cls = RULES[code]
    assert re.fullmatch(r"PTL\d{3}", cls.code)
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", cls.name)  # kebab case: `tf32-off`
    for title in DOC_SECTIONS:
        assert doc_section(cls.docs, title), f"{code} docs lack a '## {title}' section"
    assert cls.bad_examples, f"{code} has no examples that must trigger it"
    assert cls.good_examples, f"{code} has no examples that must not trigger it"
    if cls.fixable:
        assert cls.fix_examples, f"{code} is fixable but has no before/after fix examples"
    for example in cls.bad_examples + cls.good_examples:
        ast.parse(example)


def test_one_module_per_rule():
    modules = [cls.__module__ for cls in RULES.values()]
    assert len(modules) == len(set(modules))
    for code, cls in RULES.items():
        assert cls.__module__.split(".")[-1].startswith(code.lower() + "_")


@pytest.mark.parametrize("code", list(RULES))
def test_every_rule_says_what_to_change_with_public_apis(code):
    """`help`: one line on the rule's own class, shown under every finding; messages name public
    APIs (a private `torch._*` one may appear in a help only as the custom optimizer's tool)."""
    cls = RULES[code]
    assert isinstance(cls.__dict__.get("help"), str), f"{code} declares no `help`"
    assert cls.help.strip() == cls.help and "\n" not in cls.help and cls.help.endswith(".")
    messages = [value for name, value in vars(cls).items() if name.endswith("message") and isinstance(value, str)]
    assert messages and not any("torch._" in message for message in messages), messages
    if "torch._" in cls.help:
        assert "custom optimizer" in cls.help
    found = [f for example in cls.bad_examples for f in check_text(example, [code]) if f.code == code]
    assert found and all(f.help and f.help.endswith(".") for f in found)
