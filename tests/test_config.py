"""`test-code` patterns: which files count as test code (DESIGN.md, "Where code runs")."""

import pytest

from ptlint.config import ConfigError, Settings, build_settings


@pytest.mark.parametrize("path, expected", [
    ("tests/test_model.py", True),
    ("pkg/tests/sub/helpers.py", True),  # `tests/**` matches a tests folder anywhere
    ("src/test_train.py", True),
    ("src/train_test.py", True),
    ("conftest.py", True),
    ("src/pkg/conftest.py", True),
    ("src/testing.py", False),
    ("src/latest.py", False),
    ("tests.py", False),
    ("src/contest.py", False),
    ("src/attest/train.py", False),
    ("diffusers/utils/testing_utils.py", True),
    ("accelerate/test_utils/scripts/ops.py", True),
    ("src/utils.py", False),
])
def test_default_test_code_patterns(path, expected):
    assert Settings(enabled=()).is_test_code(path) is expected


def test_test_code_from_config_replaces_the_default(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\ntest-code = ["qa/**"]\n')
    settings = build_settings([str(tmp_path)])
    assert settings.is_test_code(str(tmp_path / "qa" / "check.py"))
    assert not settings.is_test_code(str(tmp_path / "tests" / "test_a.py"))


def test_empty_test_code_turns_it_off(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\ntest-code = []\n")
    assert not build_settings([str(tmp_path)]).is_test_code(str(tmp_path / "tests" / "test_a.py"))


def test_test_code_must_be_a_list_of_strings(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\ntest-code = "tests"\n')
    with pytest.raises(ConfigError, match="test-code must be a list of strings"):
        build_settings([str(tmp_path)])
