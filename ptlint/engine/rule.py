"""The rule API: what a rule declares, and what it reports.

A rule is a class in its own module under `ptlint/rules/`. It declares its code, name, whether it
is on by default, where code must run for it to report (`contexts`), its documentation and
examples, and `visit_<NodeType>` methods that the engine calls during its single traversal of the
module's `ast` tree. A fixable rule attaches a `Fix` to the finding where it finds the problem:
text edits computed from the same nodes (see `ptlint.engine.edits`), never re-derived later.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from ptlint.engine.finding import SAFE, UNSAFE, Edit, Finding, Fix  # noqa: F401 - the rule API in one import
from ptlint.semantics.where import CALLED, EVERYWHERE, ONCE, PER_OUTER, PER_STEP  # noqa: F401

if TYPE_CHECKING:
    from ptlint.engine.file_context import FileContext


class FixInput(NamedTuple):
    """One state a fix example runs in, the original (`before`) and the fixed code (`after`)
    side by side, with torch on the CPU (tests/rules/test_fix_examples_run.py).

    `code` runs after the example's own code, in its namespace, with torch's seed set (to the
    same value for both runs): it builds the tensors and state (a model with no gradients yet,
    frozen parameters, float16 inputs, huge magnitudes, an empty list...), calls the example's
    functions, and binds `result`, what is compared: tensors (values, dtype, shape, device),
    modules (parameters, gradients, buffers), lists, tuples, dicts, numbers, None. A claim about
    the state (`assert all(p.grad is None for p in model.parameters())`) may be asserted there:
    a failing one fails the test, in either run. An exception raised there is the outcome.

    The outcomes must be equal: the same exception, or results equal bit for bit, or within
    `tolerance` where the fix changes rounding — relative to each tensor's largest magnitude,
    one number for every floating dtype or per dtype name ({"float16": 2 ** -10}; a dtype not
    named compares bit for bit). Where the fix is meant to differ — the difference an unsafe
    fix's page names, or the value the original gets wrong and the fix gets right — `check`
    replaces the comparison: an expression over `before` and `after` (the two results, None
    after an exception), `before_error` and `after_error` (the exceptions' class names, or
    None), the names the fixed run's code bound, and the helpers `same(a, b, tolerance=0)`,
    `close(a, b, tolerance)` and `finite(t)`. `device`: the device the input needs ("cuda":
    run where there is one)."""

    name: str
    code: str
    tolerance: float | dict[str, float] = 0.0
    check: str | None = None
    device: str = "cpu"


class FixExample(NamedTuple):
    """`before` must become `after` when this rule's fixes are applied (unsafe ones too if `unsafe`),
    and, given `inputs`, both must behave alike in each of them (see FixInput)."""

    before: str
    after: str
    unsafe: bool = False
    inputs: tuple[FixInput, ...] = ()


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]  # the default message of a finding
    # What to change, in one line that names public APIs: shown under every finding (`help:` in
    # the full format, "help" in JSON and SARIF), also when there is no automatic fix. Every rule
    # of the catalogue has one (tests/rules/test_rule_examples.py).
    help: ClassVar[str] = ""
    default: ClassVar[bool] = True  # on unless the user deselects it
    severity: ClassVar[str] = "warning"
    fixable: ClassVar[str | None] = None  # None, SAFE, UNSAFE or "sometimes" (catalogue column)
    # Where the reported code must run for a finding to count (DESIGN.md, "Where code runs").
    # Rules about the cost of one execution leave out once-code; rules about how something is
    # built report everywhere. `cold`: whether to report in branches that only run on misuse.
    contexts: ClassVar[frozenset[str]] = EVERYWHERE
    cold: ClassVar[bool] = True
    # Whether the rule reports in test code (files matching `test-code`, DESIGN.md): performance
    # and compile rules stay silent there; a family whose findings are wrong anywhere (numerics:
    # a wrong formula is wrong in a test too) sets it for all its rules.
    reports_in_tests: ClassVar[bool] = False
    # What the program must do for a finding to cost anything (DESIGN.md, "The project model"):
    # `needs_accelerator`, place tensors on an accelerator (syncs and transfers cost nothing on the
    # CPU: silent in code whose every program is seen and never does); `needs_compile`, compile code
    # with torch.compile somewhere in the project (or `compile = true` in the configuration).
    needs_accelerator: ClassVar[bool] = False
    needs_compile: ClassVar[bool] = False
    # Substrings of the source text of which at least one must occur for the rule to be able to
    # fire. The engine skips the rule (and the whole traversal, when no rule is left) otherwise.
    triggers: ClassVar[tuple[str, ...]] = ()
    # The rule reads the project modules the file imports (ptlint.semantics.project.imported_sources): the
    # cache then keys the file's findings on their text too.
    reads_imports: ClassVar[bool] = False
    docs: ClassVar[str]  # markdown, one `## <title>` per DOC_SECTIONS entry, in that order
    # Code that must trigger the rule: every line that must carry a finding ends with
    # `# expect: <CODE>`; no other line may carry one. Code that must not trigger it.
    bad_examples: ClassVar[list[str]] = []
    good_examples: ClassVar[list[str]] = []
    fix_examples: ClassVar[list[FixExample]] = []
    # Code that triggers the rule on its `# expect:` lines but must get no fix, even an unsafe
    # one (the rewrite would change behaviour or lose a comment).
    unfixable_examples: ClassVar[list[str]] = []

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx

    def report(self, node: ast.AST, message: str | None = None, fix: Fix | None = None,
               end_node: ast.AST | None = None, help: str | None = None) -> None:
        """Report a finding spanning `node` (to the end of `end_node` when given); `help`: what to
        change for this one, when the rule's `help` does not say it well enough. The engine keeps
        it only if `node` runs in one of the rule's `contexts`."""
        self.ctx.add_finding(self, node, end_node or node, message or self.message, fix, help or self.help or None)

    def end_file(self) -> None:
        """Called after the traversal: rules that need the whole module report here."""

    def keep(self, node: ast.AST, where) -> bool:
        """After the traversal, once the module's execution model is known: keep the finding
        reported at `node` (which runs at `where`, a ptlint.semantics.where.Where)? Default: yes."""
        return True

    @classmethod
    def summary(cls) -> str:
        """The first sentence of "What it does", for catalogues and SARIF short descriptions."""
        section = doc_section(cls.docs, "What it does")
        first = " ".join(section.split())
        end = first.find(". ")
        return first if end < 0 else first[: end + 1]


def triggered(triggers: tuple[str, ...], text: str) -> bool:
    """Whether a rule with these trigger substrings can fire in `text`: no triggers, or one of them
    occurs. Python allows spaces around `.` and before `(`, so a trigger counts when each of its
    words occurs (`torch.cuda.amp` in `torch.cuda . amp`, `tensor(` in `torch.tensor (x)`)."""
    if not triggers:
        return True
    global _found_text, _found  # one scan of a (large) file per word, however many rules ask
    if text is not _found_text:
        _found_text, _found = text, {}
    found = _found
    for trigger in triggers:
        for word in _trigger_words(trigger):
            present = found.get(word)
            if present is None:
                present = found[word] = word in text
            if not present:
                break
        else:
            return True
    return False


_found_text: str | None = None  # the text `triggered` last looked at, and which words it holds
_found: dict[str, bool] = {}


def _trigger_words(trigger: str) -> tuple[str, ...]:
    words = _TRIGGER_WORDS.get(trigger)
    if words is None:
        words = _TRIGGER_WORDS[trigger] = tuple(w for w in trigger.replace("(", ".").split(".") if w) or (trigger,)
    return words


_TRIGGER_WORDS: dict[str, tuple[str, ...]] = {}


# The sections of a rule's docs, in this order. "Where it reports": where the code must run for a
# finding (per step, once, called, error paths, test code, compiled code); "Example": a complete
# snippet that `ptlint check --select CODE` reports as it stands; "Use instead": the same code fixed.
DOC_SECTIONS = ("What it does", "Why is this bad?", "Where it reports", "Example", "Use instead", "Fix safety",
                "References")


def doc_section(docs: str, title: str) -> str:
    """The text under `## <title>` in a rule's docs."""
    lines = docs.strip().splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("## "):
            inside = line[3:].strip() == title
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()
