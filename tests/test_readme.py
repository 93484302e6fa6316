"""The README's rule table is generated from the catalogue; it must not drift."""

from ptlint.catalogue import README_END, README_START, readme_table

from helpers import REPO


def test_readme_rule_table_is_current():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text[text.index(README_START) + len(README_START):text.index(README_END)]
    assert table.strip() == readme_table().strip(), "run: python -m ptlint.catalogue README.md"


def test_readme_commands_match_ci():
    """.ci/run installs the test extra and runs the very pytest command the README gives."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    [command] = [line for line in readme.splitlines() if 'pip install -e ".[test]" && python -m pytest' in line]
    pytest_command = command[command.index("python -m pytest"):]
    assert ci[ci.index('pip install -q -e ".[test]"') + 1] == pytest_command
    assert ci[-1] == pytest_command  # the last command: its exit status is the run's
    assert "ptlint check fixtures/sample_project" in readme
