"""The published rule pages (docs/rules/*.md, `ptlint rule CODE`) keep their promises: the
Example reports where a user pastes it, "Use instead" does not, "Where it reports" agrees with
where the rule runs, and a page cites no file that is not in the repository and carries no
notes from judging the corpus (those live in bench/judgement-notes.md)."""

from __future__ import annotations

import json
import re

import pytest
from helpers import REPO, run_ptlint

from ptlint.engine.catalogue import doc_page, rule_page, with_section
from ptlint.engine.registry import BUILTIN_CODES, DYNAMIC_CODES, all_rules
from ptlint.engine.rule import DOC_SECTIONS, doc_section
from ptlint.semantics.where import CALLED, ONCE, PER_OUTER

RULES = all_rules()
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def python_blocks(markdown: str) -> list[str]:
    return PYTHON_BLOCK.findall(markdown)


# -- Example and Use instead, checked as a user would: saved as files, `ptlint check --select CODE`
def check_files(tmp_path, code: str, files: dict[str, str]) -> dict[str, list[dict]]:
    """The findings of `code` per file, from one run of the real command in `tmp_path`."""
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\n")  # the project root: test-code is relative to it
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = run_ptlint("check", "--no-cache", "--select", code, "--output-format", "json", *files, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)
    assert {f["code"] for f in findings} <= {code}, findings  # PTL001 would mean a snippet does not parse
    return {name: [f for f in findings if f["path"] == name] for name in files}


@pytest.mark.parametrize("code", list(RULES))
def test_page_example_is_reported_and_use_instead_is_not(tmp_path, code):
    docs = RULES[code].docs
    [example] = python_blocks(doc_section(docs, "Example"))
    instead = python_blocks(doc_section(docs, "Use instead"))
    assert instead, f"{code}: 'Use instead' shows no code"
    # the first block is the whole fixed program (later ones may show alternatives in part)
    assert re.search(r"^(import torch|from torch)", instead[0], re.M), f"{code}: 'Use instead' is not complete"
    files = {"train.py": example, "tests/test_train.py": example}
    files.update({f"instead_{i}.py": block for i, block in enumerate(instead)})
    found = check_files(tmp_path, code, files)
    assert found["train.py"], f"{code}: its page's Example, saved as a file, is not reported"
    for i in range(len(instead)):
        assert found[f"instead_{i}.py"] == [], f"{code}: 'Use instead' block {i + 1} is reported"
    # the same Example in test code: reported exactly where the page says so
    reports_in_tests = "test code" in where_bullets(docs)["Reports"]
    assert bool(found["tests/test_train.py"]) == reports_in_tests


def test_the_example_check_sees_a_silent_example(tmp_path):
    """The check above fails for a page whose Example the rule does not report."""
    found = check_files(tmp_path, "PTL101", {"train.py": "import torch\n\nx = torch.ones(3).sum().item()\n"})
    assert found["train.py"] == []


# -- Where it reports --------------------------------------------------------------------------
# The words a page uses for each place (the rule's `contexts`, `cold`, and whether its family
# reports in test code): a page must name every place where the rule stays silent.
WHERE_WORDS = {
    ONCE: "once-code",
    PER_OUTER: "once per epoch",
    CALLED: "callers the file does not show",
}


def where_bullets(docs: str) -> dict[str, str]:
    """{"Reports": text, "Silent": text} from the "Where it reports" section (one-line text)."""
    section = doc_section(docs, "Where it reports")
    bullets = {}
    for match in re.finditer(r"^- \*\*(Reports|Silent)\*\*(.*?)(?=^- \*\*|\Z)", section, re.S | re.M):
        bullets[match.group(1)] = " ".join(match.group(2).split())
    return bullets


@pytest.mark.parametrize("code", list(RULES))
def test_where_it_reports_names_the_places_the_rule_leaves_out(code):
    cls = RULES[code]
    bullets = where_bullets(cls.docs)
    assert "Reports" in bullets, f"{code}: 'Where it reports' needs a '- **Reports** ...' bullet"
    silent = bullets.get("Silent", "")
    for place, words in WHERE_WORDS.items():
        if place not in cls.contexts:
            assert words in silent, f"{code} does not report in {place} code: its page must say '{words}'"
    if not cls.cold:
        assert "error paths" in silent, f"{code} does not report on error paths: its page must say so"
    if not cls.reports_in_tests:
        assert "test code" in silent and "test code" not in bullets["Reports"]
    else:
        assert "test code" in bullets["Reports"] and "test code" not in silent


def test_where_bullets_are_read_from_the_section():
    docs = ("## What it does\nx\n## Where it reports\n- **Reports** in loops,\n  every step.\n"
            "- **Silent** in once-code and test code.\n\n## Example\n- **Reports** elsewhere\n")
    assert where_bullets(docs) == {"Reports": "in loops, every step.", "Silent": "in once-code and test code."}


@pytest.mark.parametrize("code", sorted(set(RULES) | set(BUILTIN_CODES) | set(DYNAMIC_CODES)))
def test_every_code_s_page_says_where_it_reports(code):
    """Rules, the engine's codes and the dynamic pass's: `ptlint rule CODE` (and docs/rules/CODE.md,
    made from it) has a "Where it reports" with a Reports bullet, in its place among the sections."""
    page = rule_page(code)
    assert "Reports" in where_bullets(page), f"{code}: its page needs '## Where it reports' with '- **Reports** ...'"
    titles = [title for title in re.findall(r"^## (.+)$", page, re.M) if title in DOC_SECTIONS]
    assert titles == sorted(titles, key=DOC_SECTIONS.index), code
    assert "## Where it reports" in doc_page(code)


def test_a_section_goes_where_doc_sections_put_it():
    docs = "## What it does\nx\n\n## Example\ny\n\n## Notes\nz\n"
    assert with_section(docs, "Where it reports", "- **Reports** w") == (
        "## What it does\nx\n\n## Where it reports\n- **Reports** w\n\n## Example\ny\n\n## Notes\nz\n")
    assert with_section("## What it does\nx\n", "Where it reports", "w\n") == (
        "## What it does\nx\n\n## Where it reports\nw\n")


def test_the_host_sync_page_states_the_device_shadow():
    """PTL452 on the CPU counts a sync only on a tensor that would be on the device: its page says
    which those are, which are the host's, and what the shadow cannot know."""
    section = " ".join(doc_section(rule_page("PTL452"), "Which tensors are on the device").split())
    for words in ("device shadow", "`.to(d)`", "`model.to(d)`", "computed from a device tensor",
                  "data pipeline", "sampler", "RNG state", '`"cpu"`', "cannot know"):
        assert words in section, words


@pytest.mark.parametrize("code", list(RULES))
def test_page_sections_come_in_order(code):
    titles = re.findall(r"^## (.+)$", RULES[code].docs, re.M)
    assert titles == list(DOC_SECTIONS)


# -- what a page may cite and say --------------------------------------------------------------
# A file of this repository named in prose: a path with a folder (`bench/expm1_accuracy.py`), an
# upper-case markdown file (`DESIGN.md`), or a relative markdown link. Globs (`processing_*.py`)
# and bare example names (`train.py`) describe the user's files, not ours.
PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|jsonl|json|toml|txt|sh|ipynb)|[A-Z][A-Z_]*\.md)(?![\w/*])")
LINK = re.compile(r"\]\((?!https?:|#)([^)\s]+)\)")
URL = re.compile(r"https?://\S+")
FENCED = re.compile(r"```.*?```", re.S)
# Notes from judging findings on the corpus: counts of verdicts, the judging vocabulary.
EVALUATION = [re.compile(p, re.I) for p in (
    r"\bjudg(?:e|ed|ement|ements|ing)\b", r"\bcorp(?:us|ora)\b", r"\bdebatable\b",
    r"\b\d+\s+(?:true|false|debatable)\b", r"\b\d+\s+findings\b", r"\bprecision of \d+",
)]


def cited_files(page: str) -> list[str]:
    """Repository paths the page cites, relative to the repository (links: to the page's folder)."""
    prose = URL.sub("", FENCED.sub("", page))
    cited = [m.group(1) for m in PATH.finditer(LINK.sub("]", prose))]
    cited += ["docs/rules/" + target for target in LINK.findall(prose)]
    return cited


def evaluation_wording(page: str) -> list[str]:
    return [m.group(0) for pattern in EVALUATION for m in pattern.finditer(page)]


def published_pages() -> dict[str, str]:
    pages = {path.name: path.read_text(encoding="utf-8") for path in (REPO / "docs" / "rules").glob("*.md")}
    assert len(pages) > len(RULES)  # every rule, the engine's and dynamic codes, the index
    return pages


@pytest.mark.parametrize("name,page", sorted(published_pages().items()))
def test_page_cites_only_files_in_the_repository(name, page):
    missing = [path for path in cited_files(page) if not (REPO / path).exists()]
    assert missing == [], f"{name} cites files that are not in the repository"


@pytest.mark.parametrize("name,page", sorted(published_pages().items()))
def test_page_carries_no_corpus_evaluation(name, page):
    assert evaluation_wording(page) == [], f"{name}: move evaluation notes to bench/judgement-notes.md"


def test_the_page_checks_catch_what_they_are_for():
    page = ("Off by default. On the corpus its findings were judged 5 true, 4 false (JUDGING.md); "
            "see `bench/gone.py`, `bench/expm1_accuracy.py`, [all](README.md), `processing_*.py`, "
            "https://example.com/a/b.py\n```python\nopen('x/y.py')\n```\n")
    assert cited_files(page) == ["JUDGING.md", "bench/gone.py", "bench/expm1_accuracy.py", "docs/rules/README.md"]
    assert [p for p in cited_files(page) if not (REPO / p).exists()] == ["JUDGING.md", "bench/gone.py"]
    assert sorted(evaluation_wording(page)) == ["4 false", "5 true", "JUDGING", "corpus", "judged"]


def test_the_evaluation_notes_moved_to_the_judgement_records():
    notes = (REPO / "bench" / "judgement-notes.md").read_text(encoding="utf-8")
    headings = [line for line in notes.splitlines() if line.startswith("## ")]
    for code in ("PTL202", "PTL402", "PTL404", "PTL501", "PTL603", "PTL606"):
        assert any(code in heading for heading in headings), code
    assert "judged 5 true, 4 false" in notes
    assert evaluation_wording(doc_page("PTL402")) == []
