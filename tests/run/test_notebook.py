"""Jupyter notebooks (DESIGN.md, "Notebooks, stdin, configuration per file"): discovered like .py
files; code cells checked as one module with IPython syntax kept out of the parser; findings carry
the cell and the line in it; fixes rewrite only the changed cells' source, every other byte kept."""

from __future__ import annotations

import json
import shutil
import textwrap
import types
from pathlib import Path

import nbformat
import pytest
from helpers import FIXTURES, run_ptlint

from ptlint.run.notebook import NotebookError, build_module, read_notebook, split_module
from ptlint.engine.finding import Finding

TRAIN = FIXTURES / "notebooks" / "train.ipynb"
# What the fixture holds: (cell, line, column, end_line, end_column, code); cells 1 and 3 are
# markdown, 6 is raw, 7 is a %%bash cell whose text looks like Python. Cell 5's
# `torch.zeros(8, 8).cuda()` runs once, at the notebook's top level: no PTL201 there.
EXPECTED = [(4, 6, 19, 6, 30, "PTL101"), (5, 3, 9, 3, 45, "PTL302")]
FIXED_CELL_5 = ("files = !ls data\nlogits?\nprobs = F.log_softmax(logits, dim=-1)  # per-class log-probabilities\n"
                'x = torch.zeros(8, 8).cuda()')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copyfile(TRAIN, tmp_path / "train.ipynb")
    (tmp_path / "script.py").write_text("import torch\nfor x in xs:\n    y = net(x.cuda()).item()\n")
    return tmp_path


def check_json(cwd: Path, *args: str, input: str | None = None) -> tuple[int, list[dict]]:
    result = run_ptlint("check", "--no-cache", "--output-format", "json", *args, cwd=cwd, input=input)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def spots(findings: list[dict]) -> list[tuple]:
    return [(f.get("cell"), f["line"], f["column"], f["end_line"], f["end_column"], f["code"]) for f in findings]


def test_folder_walk_finds_notebooks_and_reports_cell_and_line(project: Path):
    (project / ".ipynb_checkpoints").mkdir()  # Jupyter's autosave copies are skipped like .venv
    shutil.copyfile(TRAIN, project / ".ipynb_checkpoints" / "train-checkpoint.ipynb")
    code, findings = check_json(project, ".")
    assert code == 1
    assert [f["path"] for f in findings] == ["script.py"] + ["train.ipynb"] * 2
    assert spots(findings[1:]) == EXPECTED
    assert "cell" not in findings[0]
    assert findings[2]["fix"]["applicability"] == "safe"


def test_text_formats_print_the_cell(project: Path):
    concise = run_ptlint("check", "--no-cache", "--output-format", "concise", "train.ipynb", cwd=project)
    lines = concise.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines[:2]] == ["train.ipynb:cell 4:6:19", "train.ipynb:cell 5:3:9"]
    assert lines[1].startswith("train.ipynb:cell 5:3:9: PTL302 [*] ")
    full = run_ptlint("check", "--no-cache", "train.ipynb", cwd=project).stdout
    assert "train.ipynb:cell 4:6:19: PTL101 " in full
    assert "6 |     losses.append(loss.item())\n  |                   ^^^^^^^^^^^ PTL101\n" in full


def test_names_from_earlier_cells_resolve_in_later_ones(project: Path):
    """F in cell 5 is torch.nn.functional because cell 2 imported it: without that cell, the same
    code is no log-of-softmax."""
    notebook = json.loads(TRAIN.read_text())
    notebook["cells"][1]["source"] = ["import torch\n"]
    (project / "train.ipynb").write_text(json.dumps(notebook))
    _, findings = check_json(project, "train.ipynb")
    assert "PTL302" not in {f["code"] for f in findings}


def test_magics_and_shell_lines_are_kept_out_of_the_parser():
    notebook = read_notebook(TRAIN.read_bytes(), "train.ipynb")
    module = build_module(notebook)
    lines = module.text.splitlines()
    for magic in ("%matplotlib inline", "!pip install -q torchvision", "%%time", "    %time optimizer.step()",
                  "files = !ls data", "logits?"):
        assert magic not in lines
        assert magic + "\n" in module.magics.values()
    assert "for f in *.py" not in module.text  # the %%bash cell is not Python at all
    assert module.cells == [2, 4, 5]
    # placeholders keep each cell's line count, so lines in the module map back to the cell
    assert split_module(module, module.text) == {n: notebook.cells[n - 1].source + ("\n" if n != 7 else "")
                                                 for n in (2, 4, 5)}


@pytest.mark.parametrize("cell_text, expect", [
    ("x = (1\n%2)\n", []),  # inside brackets `%` is an operator, not a magic
    ('s = """\n!not a shell line\n"""\nfor t in ts:\n    net(t).item()\n', [(5, "PTL101")]),
    ("for t in ts:\n    !echo \\\n    continued\n    net(t).item()\n", [(4, "PTL101")]),
    ("%%capture out\nfor t in ts:\n    net(t).item()\n", [(3, "PTL101")]),  # its body is Python
    ("%%writefile helper.py\nfor t in ts:\n    net(t).item()\n", []),  # its body is a file's text
    ("t = 1  # is this a question?\nfor t in ts:\n    net(t).item()\n", [(3, "PTL101")]),
    ("for t in ts:\n    t.item?\n    net(t).item()\n", [(3, "PTL101")]),
])
def test_ipython_syntax_cases(tmp_path: Path, cell_text: str, expect: list):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import torch"), nbformat.v4.new_code_cell(cell_text)]
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(notebook))
    _, findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == [(2, *spot) for spot in expect]


def test_fix_rewrites_only_the_changed_cell(project: Path):
    before = (project / "train.ipynb").read_bytes()
    result = run_ptlint("fix", "--apply", "--no-cache", "train.ipynb", cwd=project)
    assert result.returncode == 1, result.stderr  # PTL101 remains
    after = (project / "train.ipynb").read_bytes()
    old, new = json.loads(before), json.loads(after)
    assert "".join(new["cells"][4]["source"]) == FIXED_CELL_5
    new["cells"][4]["source"] = old["cells"][4]["source"]
    assert new == old  # outputs, metadata, ids and the other cells as they were
    # byte for byte outside the changed cell's source: the same prefix and suffix
    start = before.index(b'"files = !ls data\\n"')
    end = before.index(b'".cuda()"') if b'".cuda()"' in before else before.index(b'.cuda()"') + len(b'.cuda()"')
    assert after[:start] == before[:start]
    assert after[len(after) - (len(before) - end):] == before[end:]
    assert after == nbformat.writes(nbformat.reads(after, as_version=4)).encode()  # still Jupyter's own style
    _, findings = check_json(project, "train.ipynb")
    assert spots(findings) == [EXPECTED[0]]


def test_fix_keeps_another_writers_style(tmp_path: Path):
    """Sources as one string, two-space indent, \\u escapes, CRLF: nbformat's writer would change all
    of it (which is why ptlint splices the changed cells itself); ptlint keeps it."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# caf\u00e9"},
             {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": "import torch\nx = torch.log(torch.softmax(y, -1))  # caf\u00e9\ny = 1"}]
    document = {"nbformat": 4, "nbformat_minor": 2, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}}, "cells": cells}
    text = json.dumps(document, indent=2, ensure_ascii=True).replace("\n", "\r\n")
    path = tmp_path / "style.ipynb"
    path.write_bytes(text.encode())
    rewritten = nbformat.writes(nbformat.reads(text, as_version=nbformat.NO_CONVERT))
    assert rewritten != text  # what nbformat would have done to the unchanged parts
    result = run_ptlint("fix", "--apply", "--no-cache", "style.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expected = text.replace("torch.log(torch.softmax(y, -1))", "torch.log_softmax(y, -1)")
    assert path.read_bytes() == expected.encode()


def test_fix_never_touches_a_magic(project: Path, monkeypatch):
    """A fix that would rewrite a magic's placeholder leaves the notebook as it was, with a message."""
    from ptlint.run import fix as fixer
    from ptlint.run.fix import fix_notebook

    def swallow_magics(source, codes, unsafe, test_code=False, project=None):
        text = source.text.replace("pass  # ptlint-magic-3", "optimizer.step()")
        return types.SimpleNamespace(fixed=text, applied=[], remaining=[], messages=[])

    monkeypatch.setattr(fixer, "fix_source", swallow_magics)
    notebook = read_notebook(TRAIN.read_bytes(), "train.ipynb")
    outcome = fix_notebook(notebook, ("PTL201", "PTL302"), False, False)
    assert not outcome.changed and outcome.fixed == notebook.text
    assert outcome.messages == ["train.ipynb: fixes not applied: they would rewrite code around an IPython magic "
                                "or shell line"]


def test_diff_is_shown_per_cell(project: Path):
    result = run_ptlint("fix", "--no-cache", "train.ipynb", cwd=project)
    assert result.returncode == 1
    assert result.stdout.startswith("--- a/train.ipynb:cell 5\n+++ b/train.ipynb:cell 5\n")
    assert "+probs = F.log_softmax(logits, dim=-1)  # per-class log-probabilities\n" in result.stdout
    assert "No newline" not in result.stdout
    assert (project / "train.ipynb").read_bytes() == TRAIN.read_bytes()


def test_a_cell_that_does_not_parse_hides_nothing_else(tmp_path: Path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("def broken(:\n    pass"),
                      nbformat.v4.new_code_cell("import torch\nfor t in ts:\n    net(t).item()\n"),
                      nbformat.v4.new_code_cell("y = torch.log(torch.softmax(z, -1))")]
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(notebook))
    _, findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == [(1, 1, "PTL001"), (2, 3, "PTL101"),
                                                                    (3, 1, "PTL302")]
    fixed = run_ptlint("fix", "--apply", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert fixed.returncode == 1
    cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    assert "".join(cells[0]["source"]) == "def broken(:\n    pass"
    assert "".join(cells[2]["source"]) == "y = torch.log_softmax(z, -1)"


DECODER_CELL = """import random
import torch
from torch import nn


class Decoder(nn.Module):
    def forward(self, x, teacher_forcing_ratio=0.5):
        if random.random() < teacher_forcing_ratio:
            return x
        return self.out(x)
"""


@pytest.mark.parametrize("compiles, config, expect", [
    ("", "", []),  # nothing compiles the notebook's forward: no graph to break
    ("decoder = torch.compile(Decoder())", "", [(1, 8, "PTL405")]),
    ("", "[tool.ptlint]\ncompile = true\n", [(1, 8, "PTL405")]),
])
def test_compile_rules_in_a_notebook_follow_its_own_compile_evidence(tmp_path: Path, compiles: str, config: str,
                                                                     expect: list):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(DECODER_CELL), nbformat.v4.new_code_cell(compiles)]
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(notebook))
    (tmp_path / "pyproject.toml").write_text(config)
    _, findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == expect


CPU_TRAINING_CELL = """import torch

model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in [torch.randn(8, 4) for _ in range(10)]:
    loss = model(x).sum()
    loss.backward()
    opt.step()
    print(loss.item())
"""


@pytest.mark.parametrize("extra, expect", [
    ("", []),  # a notebook that never names a device stays on the CPU: nothing waits
    ("model = model.cuda()", [(1, 9, "PTL101")]),
    ("device = 'mps'", [(1, 9, "PTL101")]),
    ("%run prepare.py", [(1, 9, "PTL101")]),  # it runs a script it does not show
])
def test_sync_rules_in_a_notebook_follow_its_own_device_evidence(tmp_path: Path, extra: str, expect: list):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(CPU_TRAINING_CELL), nbformat.v4.new_code_cell(extra)]
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(notebook))
    (tmp_path / "pyproject.toml").write_text("")
    _, findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings if f["code"] == "PTL101"] == expect


@pytest.mark.parametrize("content, needle", [
    (b'{"cells": [', "invalid JSON"),
    (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": "x",'
     b' "metadata": {}, "execution_count": null}]}', 'cell 1: "outputs" is missing'),
    (b'{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}', "notebook format 3"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_a_malformed_notebook_is_one_line_and_others_are_checked(project: Path, content: bytes, needle: str):
    (project / "bad.ipynb").write_bytes(content)
    result = run_ptlint("check", "--no-cache", "--output-format", "concise", ".", cwd=project)
    assert result.returncode == 2
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("ptlint: bad.ipynb: ") and needle in errors[0], errors
    assert "train.ipynb:cell 4:6:19: PTL101" in result.stdout and "script.py:3:9: PTL101" in result.stdout
    with pytest.raises(NotebookError):
        read_notebook(content, "bad.ipynb")


def test_notebook_on_standard_input(project: Path):
    text = TRAIN.read_text()
    code, findings = check_json(project, "--stdin-filename", "nb/train.ipynb", "-", input=text)
    assert code == 1 and spots(findings) == EXPECTED and {f["path"] for f in findings} == {"nb/train.ipynb"}
    fixed = run_ptlint("fix", "--no-cache", "--stdin-filename", "train.ipynb", "-", cwd=project, input=text)
    assert fixed.returncode == 1  # PTL101 remains
    document = json.loads(fixed.stdout)
    assert "".join(document["cells"][4]["source"]) == FIXED_CELL_5
    assert "train.ipynb:cell 4:6:19: PTL101" in fixed.stderr


def test_sarif_and_github_point_into_the_ipynb_file(project: Path):
    raw_lines = TRAIN.read_text().splitlines()
    line = next(n for n, text in enumerate(raw_lines, 1) if "losses.append(loss.item())" in text)
    column = raw_lines[line - 1].index("loss.item()") + 1
    result = run_ptlint("check", "--no-cache", "--output-format", "sarif", "train.ipynb", cwd=project)
    first = json.loads(result.stdout)["runs"][0]["results"][0]
    region = first["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (line, column)
    assert region["endColumn"] - region["startColumn"] == len("loss.item()")
    assert first["properties"]["cell"] == 4 and first["properties"]["cellLine"] == 6
    github = run_ptlint("check", "--no-cache", "--output-format", "github", "train.ipynb", cwd=project)
    assert f"file=train.ipynb,line={line},col={column}," in github.stdout
    assert "::cell 4:6:19: `.item()` in a loop" in github.stdout


def test_a_notebook_of_another_language_is_skipped(tmp_path: Path):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    notebook.cells = [nbformat.v4.new_code_cell("for (t in ts) { t$item() }")]
    (tmp_path / "r.ipynb").write_text(nbformat.writes(notebook))
    code, findings = check_json(tmp_path, "r.ipynb")
    assert code == 0 and findings == []


def test_noqa_in_a_cell(tmp_path: Path):
    source = textwrap.dedent("""\
        import torch
        for t in ts:
            a = net(t).item()  # noqa: PTL101
            b = net(t).item()""")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source)]
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(notebook))
    _, findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"]) for f in findings] == [(1, 4)]


# -- the writer, over many JSON styles -----------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_SOURCE = st.lists(_TEXT, max_size=4).map(lambda lines: "\n".join(lines))


@settings(max_examples=150, deadline=None)
@given(sources=st.lists(_SOURCE, min_size=1, max_size=4), new=_SOURCE, target=st.integers(0, 3),
       indent=st.sampled_from([None, 0, 1, 2, "\t"]), ascii_only=st.booleans(), as_lists=st.booleans(),
       crlf=st.booleans())
def test_writer_changes_only_the_target_cells_source(sources, new, target, indent, ascii_only, as_lists, crlf):
    target %= len(sources)
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {"tags": ["x"], "note": source[:3]},
              "outputs": [{"name": "stdout", "output_type": "stream", "text": [source]}],
              "source": source.splitlines(keepends=True) if as_lists else source}
             for i, source in enumerate(sources)]
    document = {"metadata": {"source": "not a cell", "cells": [1]}, "nbformat": 4, "nbformat_minor": 5,
                "cells": cells}
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    if crlf:
        text = text.replace("\n", "\r\n")
    notebook = read_notebook(text.encode(), "nb.ipynb")
    assert [cell.source for cell in notebook.cells] == sources
    written = notebook.with_sources({target + 1: new})
    after = json.loads(written)
    assert "".join(after["cells"][target]["source"]) == new
    after["cells"][target]["source"] = document["cells"][target]["source"]
    assert after == document
    span = notebook.cells[target].span
    assert written.startswith(text[:span[0]]) and written.endswith(text[span[1]:])
    assert read_notebook(written.encode(), "nb.ipynb").cells[target].source == new


# Malformed notebooks, and what the user is told (in their words: no exception names, no Python
# reprs of whole cells).
_CELL = {"cell_type": "code", "id": "a", "metadata": {}, "source": "x = 1\n", "outputs": [], "execution_count": None}
_BASE = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [_CELL]}


def _without(mapping: dict, key: str) -> dict:
    return {k: v for k, v in mapping.items() if k != key}


MALFORMED = [
    ('{"nbformat": 4, "nbformat_minor": NaN, "metadata": {}, "cells": []}', "invalid JSON: NaN is not a JSON value"),
    ('{"nbformat": 4, "nbformat_minor": -Infinity, "metadata": {}, "cells": []}', "-Infinity is not a JSON value"),
    (dict(_BASE, nbformat_minor="5"), '"nbformat_minor" must be a whole number of 0 or more, not "5"'),
    (dict(_BASE, nbformat_minor=-1), '"nbformat_minor" must be a whole number of 0 or more, not -1'),
    (dict(_BASE, nbformat_minor=4.5), "not 4.5"),
    (dict(_BASE, nbformat_minor=None), "not null"),
    (dict(_BASE, nbformat=4.0), '"nbformat" must be a whole number, not 4.0'),
    (dict(_BASE, nbformat=True), '"nbformat" must be a whole number, not true'),
    (_without(_BASE, "nbformat"), 'no "nbformat" version'),
    (_without(_BASE, "cells"), 'no "cells"'),
    (dict(_BASE, cells={}), '"cells" must be a list, not a JSON object'),
    (dict(_BASE, metadata=[]), '"metadata" must be a JSON object, not a list'),
    (dict(_BASE, cells=[1]), "cell 1 must be a JSON object, not 1"),
    (dict(_BASE, cells=[_CELL, dict(_CELL, id="b", source=3)]), "cell 2, source: must be text, not 3"),
    (dict(_BASE, cells=[dict(_CELL, source=["a", 2])]), "cell 1, source, item 2: must be text, not 2"),
    (dict(_BASE, cells=[_without(_CELL, "cell_type")]), 'cell 1: "cell_type" is missing'),
    (dict(_BASE, cells=[dict(_CELL, cell_type="weird")]),
     'cell 1: unknown cell_type "weird" (one of code, markdown, raw)'),
    (dict(_BASE, cells=[dict(_CELL, cell_type="markdown")]), 'cell 1: unexpected keys "execution_count", "outputs"'),
    (dict(_BASE, cells=[dict(_CELL, outputs=[{"output_type": "bogus"}])]),
     'cell 1, output 1: unknown output_type "bogus" (one of display_data, error, execute_result, stream)'),
    (dict(_BASE, cells=[dict(_CELL, outputs=[{"output_type": "stream", "name": "stdout"}])]),
     'cell 1, output 1: "text" is missing'),
    (dict(_BASE, cells=[dict(_CELL, execution_count="1")]),
     'cell 1, execution_count: must be a whole number or null, not "1"'),
    (dict(_BASE, metadata={"kernelspec": "python"}), 'metadata.kernelspec: must be a JSON object, not "python"'),
    ("[" * 100000 + "]" * 100000, "the JSON nests too deeply to read"),
    ('{"nbformat": 4, "nbformat_minor": 1' + "0" * 5000 + ', "metadata": {}, "cells": []}',
     "invalid JSON: a number too long to read"),
    ("[]", "the file holds a list, not a JSON object"),
]


@pytest.mark.parametrize("document,message", MALFORMED, ids=[m[:40] for _, m in MALFORMED])
def test_a_malformed_notebook_is_said_in_the_users_words(document, message):
    data = (document if isinstance(document, str) else json.dumps(document)).encode()
    with pytest.raises(NotebookError) as caught:
        read_notebook(data, "bad.ipynb")
    said = str(caught.value)
    assert said == message or said == f"not a valid notebook: {message}" or said.endswith(message), said
    assert "\n" not in said and "Error" not in said and "{'" not in said


def test_a_notebook_of_a_later_minor_version_or_without_cell_ids_is_read():
    assert len(read_notebook(json.dumps(dict(_BASE, nbformat_minor=99)).encode(), "a.ipynb").cells) == 1
    assert len(read_notebook(json.dumps(dict(_BASE, cells=[_without(_CELL, "id")])).encode(), "a.ipynb").cells) == 1


_JUNK = [None, True, 0, -1, 2.5, "", "x", [], [1], {}, {"a": 1}, [None], "\ud800"]


def _variants(value, path=()):
    """Every document with one value replaced by junk or one key removed."""
    if isinstance(value, dict):
        for key in value:
            yield path + (key,), "drop"
            yield from _variants(value[key], path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _variants(item, path + (index,))
    if path:
        for junk in _JUNK:
            yield path, junk


def _changed(document, path, change):
    document = json.loads(json.dumps(document))
    holder = document
    for part in path[:-1]:
        holder = holder[part]
    if change == "drop":
        del holder[path[-1]]
    else:
        holder[path[-1]] = change
    return document


def test_every_small_corruption_of_a_notebook_is_read_or_said_in_one_line():
    """Each value of a notebook (with an output) replaced by junk of every JSON type, or removed:
    it is read, or refused with a NotebookError of one line, without exception names or reprs."""
    document = dict(_BASE, cells=[dict(_CELL, outputs=[{"output_type": "stream", "name": "stdout", "text": "1"}]),
                                  {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# a\n", "b"]}],
                    metadata={"kernelspec": {"name": "python3", "display_name": "P", "language": "python"}})
    refused = 0
    for path, change in _variants(document):
        data = json.dumps(_changed(document, path, change)).encode()
        try:
            read_notebook(data, "bad.ipynb")
        except NotebookError as exc:
            refused += 1
            said = str(exc)
            assert "\n" not in said and "Error" not in said and "{'" not in said and len(said) < 200, (path, said)
            assert "shapes" not in said, (path, said)  # each one says what is wrong, not only that something is
    assert refused > 50


# -- the evidence chain (Finding.via) of a finding in a notebook --------------------------------------

def test_links_in_the_notebook_are_mapped_to_their_cells_like_the_findings_line():
    """The module is `# marker 2`, cell 2, `# marker 4`, cell 4: module line 7 is cell 4's line 1;
    a link in another file keeps its line and has no cell."""
    from ptlint.engine.finding import Finding
    from ptlint.run.notebook import locate

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# Training"),
                      nbformat.v4.new_code_cell("import torch\n\ndef step(x):\n    return x.item()"),
                      nbformat.v4.new_markdown_cell("The loop:"),
                      nbformat.v4.new_code_cell("for x in loader:\n    step(x)")]
    module = build_module(read_notebook(nbformat.writes(notebook).encode(), "nb.ipynb"))
    assert module.text.splitlines()[6] == "for x in loader:"
    via = (("nb.ipynb", 7, "for x in loader"), ("nb.ipynb", 8, "calls step"), ("lib/data.py", 3, "calls load"))
    finding = Finding("PTL101", "sync-in-loop", "m", "nb.ipynb", 5, 12, 5, 20, context="per-step", via=via)
    [located] = locate(module.text, "nb.ipynb", [finding])
    assert (located.cell, located.line) == (2, 4)
    assert located.via == (("nb.ipynb", 1, "for x in loader"), ("nb.ipynb", 2, "calls step"),
                           ("lib/data.py", 3, "calls load"))
    assert located.extra == {"cell": 2, "via_cells": [4, 4, None]}
    # no link in the notebook: the chain as it was, no via_cells; no chain: nothing new either
    [other] = locate(module.text, "nb.ipynb", [Finding(**{**vars(finding), "via": via[2:]})])
    assert other.via == via[2:] and other.extra == {"cell": 2}
    [plain] = locate(module.text, "nb.ipynb", [Finding(**{**vars(finding), "via": ()})])
    assert plain.via == () and plain.extra == {"cell": 2}


def _lint_with_declared_chains(real):
    """lint_source, with each finding's chain replaced by the `# via: [path, line, why]` comments
    of the checked text (line in the joined module; "<self>": the checked file): the analysis
    that fills chains is a stand-in here."""
    import re as regex

    def lint_source(source, *args, **kwargs):
        lint_source.calls += 1
        chain = tuple((source.path if path == "<self>" else path, line, why)
                      for path, line, why in (json.loads(m) for m in regex.findall(r"# via: (\[.*\])", source.text)))
        return [Finding(**{**vars(f), "via": chain}) for f in real(source, *args, **kwargs)]
    lint_source.calls = 0
    return lint_source


def test_a_notebook_findings_chain_through_the_command_and_its_cache(tmp_path: Path, monkeypatch, capsys):
    """In process (the traversal's lint_source replaced): JSON keeps the chain and its cells, the
    full format shows `nb.ipynb:cell 4:1`, and a second run, from the cache, says the same."""
    from ptlint.engine import traversal
    from ptlint.front import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PTLINT_CACHE_DIR", raising=False)
    lint = _lint_with_declared_chains(traversal.lint_source)
    monkeypatch.setattr(traversal, "lint_source", lint)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# Training"),
                      nbformat.v4.new_code_cell('import torch  # via: ["<self>", 5, "for x in loader"]\n'
                                                '# via: ["lib/data.py", 3, "calls load"]'),
                      nbformat.v4.new_markdown_cell("The loop:"),
                      nbformat.v4.new_code_cell("for x in loader:\n    y = net(x).item()")]
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(notebook))
    # the module: 1 marker, 2-3 cell 2, 4 marker, 5-6 cell 4
    full = ("  |\n2 |     y = net(x).item()\n  |         ^^^^^^^^^^^^^ PTL101\n"
            "  = runs per step: nb.ipynb:cell 4:1 for x in loader -> lib/data.py:3 calls load\n  = help: ")
    for _ in range(2):
        assert cli.run(["check", "--output-format", "json", "nb.ipynb"]) == 1
        assert lint.calls == 1  # linted once: every later run reads the cache
        [finding] = json.loads(capsys.readouterr().out)
        assert (finding["code"], finding["cell"], finding["line"]) == ("PTL101", 4, 2)
        assert finding["context"] == {"where": "per-step", "via": [
            {"path": "nb.ipynb", "line": 1, "why": "for x in loader"},
            {"path": "lib/data.py", "line": 3, "why": "calls load"}]}
        assert finding["via_cells"] == [4, None]
        assert cli.run(["check", "nb.ipynb"]) == 1
        out = capsys.readouterr().out
        assert out.startswith("nb.ipynb:cell 4:2:9: PTL101 ") and full in out
