"""The engine's own guarantees: how names resolve, and where code runs."""

from ptlint.front.api import check_text


def test_an_import_inside_a_function_binds_a_name_of_that_function_only():
    source = """
import torch

def make():
    import numpy as torch
    return torch.ones(2)

def train(loader):
    for x in loader:
        torch.cuda.synchronize()
"""
    assert [(f.code, f.line) for f in check_text(source, ["PTL102"])] == [("PTL102", 10)]


def test_a_function_level_import_resolves_inside_that_function():
    source = """
def train(loader):
    import torch as T
    for x in loader:
        T.cuda.synchronize()

def other(loader):
    for x in loader:
        T.cuda.synchronize()
"""
    assert [(f.code, f.line) for f in check_text(source, ["PTL102"])] == [("PTL102", 5)]


PER_STEP_SYNC_AND_SOFTMAX = """
import torch

def train(model, loader):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        print(loss.item())
        p = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
"""


def test_test_code_silences_performance_rules_not_numerics(tmp_path):
    from helpers import run_json

    for folder in ("src", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "test_loop.py").write_text(PER_STEP_SYNC_AND_SOFTMAX)
    (tmp_path / "src" / "loop.py").write_text(PER_STEP_SYNC_AND_SOFTMAX)
    _, findings = run_json("check", "--select", "PTL101,PTL301", ".", cwd=tmp_path)
    found = sorted((f["path"].removeprefix("./"), f["code"]) for f in findings)
    assert found == [("src/loop.py", "PTL101"), ("src/loop.py", "PTL301"),
                     ("src/test_loop.py", "PTL301"), ("tests/test_loop.py", "PTL301")]
    # `test-code = []` turns it off
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\ntest-code = []\n")
    _, findings = run_json("check", "--select", "PTL101,PTL301", ".", cwd=tmp_path)
    assert sorted(f["code"] for f in findings) == ["PTL101"] * 3 + ["PTL301"] * 3


def test_each_finding_carries_its_context():
    source = PER_STEP_SYNC_AND_SOFTMAX + """
def softmax(x):
    return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)

probs = torch.exp(t) / torch.exp(t).sum(-1, keepdim=True)
"""
    found = [(f.code, f.line, f.context) for f in check_text(source, ["PTL101", "PTL301"])]
    assert found == [("PTL101", 8, "per-step"), ("PTL301", 9, "per-step"), ("PTL301", 12, "called"),
                     ("PTL301", 14, "once")]


# -- in process: the traversal, bindings, bad input (mutation testing sees these) ------------------

import ast  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from ptlint.engine.registry import rule_classes_for  # noqa: E402
from ptlint.engine.rule import Rule  # noqa: E402
from ptlint.engine.source import SourceFile  # noqa: E402
from ptlint.engine.traversal import lint_source  # noqa: E402


def lint(text: str, rules, test_code: bool = False, path: str = "m.py"):
    return lint_source(SourceFile(path, text), rules, test_code)


def spans(findings):
    return [(f.code, f.name, f.message, f.line, f.column, f.end_line, f.end_column, f.severity) for f in findings]


@pytest.mark.parametrize("text,expected", [
    ("x = (1,\n", ("PTL001", "syntax-error", "SyntaxError: '(' was never closed", 1, 5, 1, 6, "error")),
    ("def f():\nreturn 1\n", ("PTL001", "syntax-error", "SyntaxError: expected an indented block after "
                              "function definition on line 1", 2, 1, 2, 7, "error")),
    ("x = 1 +\n", ("PTL001", "syntax-error", "SyntaxError: invalid syntax", 1, 8, 1, 9, "error")),
    ("a = 1\nb = $\n", ("PTL001", "syntax-error", "SyntaxError: invalid syntax", 2, 5, 2, 6, "error")),
])
def test_a_syntax_error_is_one_finding_at_its_place(text, expected):
    assert spans(lint(text, rule_classes_for(["PTL101"]))) == [expected]


def test_a_syntax_error_without_an_end_gets_a_one_character_span():
    from ptlint.engine.traversal import syntax_error_finding

    exc = SyntaxError("bad", ("m.py", 3, 4, "x", 3, 4))
    [(line, column, end_line, end_column)] = [(f.line, f.column, f.end_line, f.end_column)
                                              for f in [syntax_error_finding(SourceFile("m.py", "x"), exc)]]
    assert (line, column, end_line, end_column) == (3, 4, 3, 5)
    bare = syntax_error_finding(SourceFile("n.py", "x"), SyntaxError("bare"))
    assert (bare.path, bare.line, bare.column, bare.end_line, bare.end_column, bare.message) == \
        ("n.py", 1, 1, 1, 2, "SyntaxError: bare")


def test_nesting_too_deep_and_unreadable_characters_are_findings_not_crashes():
    deep = "x = " + "-" * 200_000 + "1\n"  # the parser runs out of stack: MemoryError in 3.11
    [finding] = lint(deep, rule_classes_for(["PTL101"]))
    assert (finding.code, finding.name, finding.message, finding.path, finding.line, finding.column,
            finding.end_line, finding.end_column, finding.severity) == (
        "PTL001", "syntax-error", "the expression nesting is too deep for Python's parser", "m.py", 1, 1, 1, 2, "error")
    [finding] = lint("a = 1\nb = '\ud800'\n", rule_classes_for(["PTL101"]))
    assert spans([finding])[0][2].startswith("a character Python cannot read (")
    assert (finding.code, finding.line, finding.column, finding.end_line, finding.end_column) == ("PTL001", 2, 6, 2, 7)


def test_test_code_silences_families_1_2_4_5_6_only_and_recursion_limit_is_restored():
    text = PER_STEP_SYNC_AND_SOFTMAX
    rules = rule_classes_for(["PTL101", "PTL301"])
    limit = sys.getrecursionlimit()
    assert [f.code for f in lint(text, rules)] == ["PTL101", "PTL301"]
    assert [f.code for f in lint(text, rules, test_code=True)] == ["PTL301"]
    assert sys.getrecursionlimit() == limit
    assert lint("x = 1\n", rules) == []  # no rule can fire: parsed, not walked


def test_whether_a_rule_reports_in_test_code_is_its_own_attribute():
    class Loud(Rule):
        code, name, message = "PTL901", "loud", "loud"
        reports_in_tests = True

        def visit_Module(self, node):
            self.report(node.body[0])

    class Quiet(Loud):
        code, name = "PTL902", "quiet"
        reports_in_tests = False

    text = "x = 1\n"
    assert [f.code for f in lint(text, [Loud, Quiet])] == ["PTL901", "PTL902"]
    assert [f.code for f in lint(text, [Loud, Quiet], test_code=True)] == ["PTL901"]
    assert Rule.reports_in_tests is False  # a new family is silent in tests unless it says otherwise


def test_only_the_numerics_family_reports_in_test_code():
    from ptlint.engine.registry import all_rules

    loud = sorted(code for code, rule in all_rules().items() if rule.reports_in_tests)
    assert loud == sorted(code for code in all_rules() if code.startswith("PTL3"))
    assert loud  # DESIGN.md: numerics rules (PTL3) still report in test code


class Probe(Rule):
    """Records what the engine tells a rule about each name it meets: bindings so far, loops and
    functions around it."""

    code = "PTL999"
    name = "probe"
    message = "probe"
    seen: list = []

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id.startswith("use_"):
            name = node.id[4:]
            values = [ast.unparse(v) if isinstance(v, ast.AST) else v for v in self.ctx.assignments(name)]
            Probe.seen.append((node.id, values, len(self.ctx.loops), len(self.ctx.functions), len(self.ctx.classes)))

    def visit_Constant(self, node: ast.Constant) -> None:
        if node.value == "report-me":
            self.report(node)


def probe(text: str):
    Probe.seen = []
    findings = lint(text, [Probe])
    return Probe.seen, findings


def test_bindings_of_every_assignment_form():
    seen, _ = probe("""
a, (b, c) = 1, (2, 3)
d: int = 4
e: int
f = 5
f += 6
if (g := 7):
    pass
with open(p) as h, lock:
    pass
first, *rest = items
for i, row in enumerate(rows):
    for k, v in zip(keys, vals):
        use_i, use_row, use_k, use_v
use_a, use_b, use_c, use_d, use_e, use_f, use_g, use_h, use_first, use_rest
[use_q for q in qs if use_q]
{use_r: use_s for r, s in pairs}
""")
    found = {name: values for name, values, *_ in seen}
    assert found["use_i"] == ["enumerate(rows)"] and found["use_row"] == ["rows"]
    assert found["use_k"] == ["keys"] and found["use_v"] == ["vals"]
    assert found["use_a"] == ["1"]
    assert found["use_b"] == ["2"] and found["use_c"] == ["3"]
    assert found["use_d"] == ["4"] and found["use_e"] == []
    assert found["use_f"] == ["5", "f += 6"]
    assert found["use_g"] == ["7"]
    assert found["use_h"] == ["open(p)"]
    assert found["use_first"] == ["items"] and found["use_rest"] == ["items"]
    assert found["use_q"] == ["qs"]
    assert found["use_r"] == ["pairs"] and found["use_s"] == ["pairs"]


def test_unpacking_that_the_value_does_not_show_binds_the_whole_value():
    seen, _ = probe("""
a, b = pair
c, d = x, *ys
e, f = zip(xs, ys, zs)
g, h = zip(*xss)
i, j = zip(xs, ys, strict=True)
k, m = zip(xs, ys, fill=1)
n, o, p = enumerate(xs)
use_a, use_b, use_c, use_d, use_e, use_f, use_g, use_h, use_i, use_j, use_k, use_m, use_n, use_o
""")
    found = {name: values for name, values, *_ in seen}
    assert found["use_a"] == found["use_b"] == ["pair"]
    assert found["use_c"] == found["use_d"] == ["(x, *ys)"]
    assert found["use_e"] == found["use_f"] == ["zip(xs, ys, zs)"]
    assert found["use_g"] == found["use_h"] == ["zip(*xss)"]
    assert found["use_i"] == ["xs"] and found["use_j"] == ["ys"]
    assert found["use_k"] == found["use_m"] == ["zip(xs, ys, fill=1)"]
    assert found["use_n"] == found["use_o"] == ["enumerate(xs)"]


def test_loops_functions_and_classes_around_a_node():
    seen, _ = probe("""
x = 1
use_x
for a in b:
    use_x
    while c:
        use_x
    [use_x for _ in d]
    def f(y=use_x):
        use_x
        lambda: use_x
    use_x
class K(Base if use_x else object):
    def m(self):
        for z in w:
            use_x
""")
    assert [tuple(s[2:]) for s in seen] == [
        (0, 0, 0), (1, 0, 0), (2, 0, 0), (2, 0, 0), (1, 0, 0), (0, 1, 0), (0, 2, 0), (1, 0, 0), (0, 0, 0),
        (1, 1, 1)]
    # bindings are per function: a function sees its own, the module sees the module's
    assert [values for _, values, *_ in seen][:2] == [["1"], ["1"]]
    assert seen[5][1] == [] and seen[-1][1] == []


def test_a_report_spans_its_node_in_characters_and_carries_the_rule():
    _, findings = probe('é = 1\nx = ("report-me",\n     2)\n')
    [finding] = findings
    assert (finding.code, finding.name, finding.message, finding.path, finding.line, finding.column,
            finding.end_line, finding.end_column, finding.severity, finding.context) == (
        "PTL999", "probe", "probe", "m.py", 2, 6, 2, 17, Probe.severity, "once")
    _, findings = probe('def f():\n    return "report-me"  # ptlint: noqa: PTL999\n')
    assert findings == []


def test_implicit_reads_are_silent_in_test_code():
    """PTL101's implicit conversions follow the engine's test-code rule like `.item()` does."""
    text = """
import torch

def train(model, loader, opt, log):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        opt.step()
        log.append(float(loss))
        opt.step()
        print(f"{loss:.3f}")
"""
    rules = rule_classes_for(["PTL101"])
    assert [(f.code, f.line) for f in lint(text, rules)] == [("PTL101", 9), ("PTL101", 11)]
    assert lint(text, rules, test_code=True, path="tests/test_train.py") == []


def test_where_code_runs_does_not_depend_on_which_rules_run():
    """PTL108 asks for parent links while the walk is under way; the execution model it builds
    then has seen only the assignments above. `model = Net()` in `fit` comes after that, and the
    call `model.stats(out)` must still be traced to `Net.stats`, a helper of a training loop."""
    text = """
import time
import torch


def bench(x):
    start = time.perf_counter()
    y = x.cuda() * 2
    return time.perf_counter() - start


class Net(torch.nn.Module):
    def stats(self, out):
        return out.mean().item()


def fit(loader, opt):
    model = Net()
    for x in loader:
        out = model(x)
        out.sum().backward()
        opt.step()
        model.stats(out)
"""
    alone = [(f.code, f.line) for f in lint(text, rule_classes_for(["PTL101"]))]
    together = [(f.code, f.line) for f in lint(text, rule_classes_for(["PTL101", "PTL108"]))]
    assert alone == [("PTL101", 14)]
    assert [f for f in together if f[0] == "PTL101"] == alone


# -- a line once per rule -------------------------------------------------------------------------
ONE_LINE = """
import torch


def step(model, x, device):
    for _ in range(10):
        a, b = torch.zeros(4).to(device), torch.ones(4).to(device)
        model(x.to(device) + a + b).sum().backward()
"""


def test_a_line_is_reported_once_per_rule_with_the_fixes_of_all_its_findings():
    """Duplicate findings on one line count against precision (JUDGING.md): one finding, whose fix
    takes the other's edits, so that the quick fix of the line does what `fix` does."""
    from ptlint.front.api import fix_text

    [finding] = check_text(ONE_LINE, ["PTL201"])
    assert finding.line == 7 and len(finding.fix.edits) == 2
    fixed = fix_text(ONE_LINE, ["PTL201"])
    assert "torch.zeros(4, device=device), torch.ones(4, device=device)" in fixed
    from ptlint.engine.edits import apply_edits

    assert apply_edits(SourceFile("<string>", ONE_LINE), list(finding.fix.edits)) == fixed


def test_fixes_of_one_line_of_different_safety_stay_apart():
    source = ONE_LINE.replace("torch.ones(4)", "torch.randn(4)")
    [finding] = check_text(source, ["PTL201"])
    assert finding.fix.applicability == "safe" and len(finding.fix.edits) == 1
