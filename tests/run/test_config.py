"""`test-code` patterns: which files count as test code (DESIGN.md, "Where code runs")."""

import pytest

from ptlint.run.config import ConfigError, Settings, build_settings


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


# -- in process, for mutation testing: every part of the configuration's meaning -------------------

from ptlint.engine.registry import DYNAMIC_CODES, known_codes, rule_index  # noqa: E402
from ptlint.run import config as config_module  # noqa: E402
from ptlint.run.config import (  # noqa: E402
    DEFAULT_TEST_CODE,
    Resolver,
    _matches,
    _relative,
    expand,
    load_config,
    enabled_codes,
    resolve_enabled,
    split_codes,
    validate,
)

DEFAULTS = tuple(sorted({c for c, i in rule_index().items() if i.default} | {"PTL002"} | set(DYNAMIC_CODES)))


@pytest.mark.parametrize("text, expected", [
    (None, None), ("", []), ("PTL101", ["PTL101"]), ("PTL101,PTL2", ["PTL101", "PTL2"]),
    ("PTL101, PTL2 ,,PTL3", ["PTL101", "PTL2", "PTL3"]), ("PTL101 PTL2", ["PTL101", "PTL2"]),
])
def test_split_codes(text, expected):
    assert split_codes(text) == expected


def test_expand_prefixes_all_and_case():
    every = known_codes()
    assert expand(["PTL"], "x") == every == expand(["ALL"], "x") == expand(["all"], "x")
    assert expand(["ptl10"], "x") == {c for c in every if c.startswith("PTL10")}
    assert expand([" PTL101 ", ""], "x") == {"PTL101"} == expand(["", "PTL101"], "x")
    assert expand([], "x") == set()
    with pytest.raises(ConfigError) as error:
        expand(["PTL101", "PTL999"], "the place")
    assert str(error.value) == "the place: unknown rule code or prefix 'PTL999' (see `ptlint rule --all`)"


def test_resolve_enabled_layers_like_ruff():
    assert resolve_enabled(None, None, None, None, None, None) == DEFAULTS
    assert resolve_enabled(["PTL101"], None, None, None, None, None) == ("PTL101",)
    assert resolve_enabled(["PTL101"], ["PTL102"], None, None, None, None) == ("PTL101", "PTL102")
    assert resolve_enabled(["PTL10"], None, ["PTL102"], None, None, None) == tuple(
        sorted(c for c in known_codes() if c.startswith("PTL10") and c != "PTL102"))
    # the command line comes last: its select replaces what the file chose
    assert resolve_enabled(["PTL101"], None, None, ["PTL201"], None, None) == ("PTL201",)
    assert resolve_enabled(["PTL101"], None, None, None, ["PTL201"], ["PTL101"]) == ("PTL201",)
    assert "PTL203" not in DEFAULTS and resolve_enabled(None, ["PTL203"], None, None, None, None) == tuple(
        sorted(DEFAULTS + ("PTL203",)))
    with pytest.raises(ConfigError, match="^my.toml: unknown"):
        resolve_enabled(["PTL9"], None, None, None, None, None, config_label="my.toml")
    with pytest.raises(ConfigError, match="^--extend-select: unknown"):
        resolve_enabled(None, None, None, None, ["PTL9"], None)
    with pytest.raises(ConfigError, match="^--ignore: unknown"):
        resolve_enabled(None, None, None, None, None, ["PTL9"])


def test_other_linters_codes_are_skipped_with_a_warning():
    warnings: list[str] = []
    assert expand(["E501", "ruf", "PTL101", "B9", "E501"], "--ignore", warnings) == {"PTL101"}
    assert warnings == ["--ignore: 'E501' is not a ptlint code (another linter's?); ignored",
                        "--ignore: 'ruf' is not a ptlint code (another linter's?); ignored",
                        "--ignore: 'B9' is not a ptlint code (another linter's?); ignored"]
    assert expand(["E501"], "x") == set()  # no list to warn in: skipped all the same
    for bad in ("PTL999", "ptl9", "E-501", "501", "PTL 1"):
        with pytest.raises(ConfigError, match="unknown rule code or prefix"):
            expand([bad], "x", warnings)
    # a select of other linters' codes only selects nothing of ptlint's
    assert enabled_codes([(["E501"], None, None, "cli")], warnings) == ()


@pytest.mark.parametrize("table, message", [
    ({"selct": []}, "p: unknown key(s) in [tool.ptlint]: selct (known: "),
    ({"select": "PTL1"}, "p: [tool.ptlint] select must be a list of strings"),
    ({"ignore": [1]}, "p: [tool.ptlint] ignore must be a list of strings"),
    ({"extend-select": "x"}, "p: [tool.ptlint] extend-select must be a list of strings"),
    ({"exclude": "x"}, "p: [tool.ptlint] exclude must be a list of strings"),
    ({"extend-exclude": "x"}, "p: [tool.ptlint] extend-exclude must be a list of strings"),
    ({"per-file-ignores": ["a"]}, "p: [tool.ptlint] per-file-ignores must map patterns to lists of codes"),
    ({"per-file-ignores": {"a": "PTL1"}}, "p: [tool.ptlint] per-file-ignores must map patterns to lists of codes"),
    ({"per-file-ignores": {"a": [1]}}, "p: [tool.ptlint] per-file-ignores must map patterns to lists of codes"),
    ({"per-file-ignores": {"a": ["PTL9X"]}}, "p: per-file-ignores['a']: unknown rule code or prefix 'PTL9X'"),
    ({"unsafe-fixes": "yes"}, "p: [tool.ptlint] unsafe-fixes must be true or false"),
    ({"force-exclude": 1}, "p: [tool.ptlint] force-exclude must be true or false"),
    ({"cache-dir": 3}, "p: [tool.ptlint] cache-dir must be a string"),
    ({"dynamic": []}, "p: [tool.ptlint.dynamic] must be a table"),
    ({"dynamic": {"targts": []}}, "p: unknown key(s) in [tool.ptlint.dynamic]: targts (known: "),
    ({"dynamic": {"targets": "a.py:f"}}, "p [tool.ptlint.dynamic]: [tool.ptlint] targets must be a list of strings"),
    ({"dynamic": {"timeout": 0}}, "p: [tool.ptlint.dynamic] timeout must be a positive number of seconds"),
    ({"dynamic": {"timeout": True}}, "p: [tool.ptlint.dynamic] timeout must be a positive number of seconds"),
    ({"dynamic": {"timeout": "9"}}, "p: [tool.ptlint.dynamic] timeout must be a positive number of seconds"),
    ({"dynamic": {"device": "tpu"}}, "p: [tool.ptlint.dynamic] device must be one of auto, cpu, cuda"),
    ({"dynamic": {"syncs": "on"}}, "p: [tool.ptlint.dynamic] syncs must be true or false"),
])
def test_validate_names_what_is_wrong(table, message):
    with pytest.raises(ConfigError) as error:
        validate(table, "p")
    assert str(error.value).startswith(message)


def test_validate_lists_unknown_keys_sorted_and_the_known_ones():
    with pytest.raises(ConfigError) as error:
        validate({"zz": 1, "aa": 2}, "p")
    assert str(error.value) == ("p: unknown key(s) in [tool.ptlint]: aa, zz (known: " +
                                ", ".join(sorted(config_module.KNOWN_KEYS)) + ")")


def test_validate_accepts_every_known_key():
    validate({"select": ["PTL1"], "ignore": [], "extend-select": ["PTL203"], "per-file-ignores": {"t/*": ["PTL1"]},
              "exclude": ["g"], "extend-exclude": ["h"], "force-exclude": True, "unsafe-fixes": False,
              "cache-dir": "c", "test-code": [], "dynamic": {"targets": ["a.py:f"], "timeout": 2.5, "device": "cpu",
                                                           "script": "s.py", "syncs": True}}, "p")


def test_resolver_builds_every_setting_from_the_file_and_the_command_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ptlint]\nselect = ["PTL1"]\nignore = ["PTL102"]\nexclude = ["gen"]\nextend-exclude = ["old"]\n'
        'per-file-ignores = { "t/*" = ["PTL101"] }\nunsafe-fixes = true\nforce-exclude = true\n'
        'cache-dir = "cc"\ntest-code = ["qa/**"]\n[tool.ptlint.dynamic]\ntargets = ["a.py:f"]\n')
    settings = Resolver().settings_for(str(tmp_path / "src" / "a.py"))
    assert settings.enabled == tuple(sorted(c for c in known_codes() if c.startswith("PTL1") and c != "PTL102"))
    assert settings.root == str(tmp_path)
    assert settings.config_path == str(tmp_path / "pyproject.toml")
    assert settings.exclude == ("gen", "old")
    assert settings.per_file_ignores == (("t/*", ("PTL101",)),)
    assert settings.unsafe_fixes is True and settings.force_exclude is True
    assert settings.cache_dir == str(tmp_path / "cc") and settings.test_code == ("qa/**",)  # relative to the config
    assert settings.dynamic == {"targets": ["a.py:f"]}
    cli = Resolver(select="PTL2", unsafe_fixes=False, force_exclude=False).settings_for(str(tmp_path))
    assert cli.enabled == tuple(sorted(c for c in known_codes() if c.startswith("PTL2")))
    assert cli.unsafe_fixes is False and cli.force_exclude is False
    bare = Resolver().settings_for(str(tmp_path.parent / "elsewhere.py"))
    assert bare.config_path is None and bare.enabled == DEFAULTS and bare.test_code == DEFAULT_TEST_CODE
    assert bare.unsafe_fixes is False and bare.force_exclude is False and bare.exclude == ()


def test_resolver_finds_the_nearest_config_and_remembers_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # not ptlint's: skipped
    (tmp_path / "a" / "b" / "pyproject.toml").write_text("[tool.ptlint]\nselect = ['PTL101']\n")
    resolver = Resolver()
    assert resolver.config_for(str(tmp_path / "a" / "b" / "c.py")) == str(tmp_path / "a" / "b" / "pyproject.toml")
    assert resolver.config_for(str(tmp_path / "a" / "x.py")) == str(tmp_path / "pyproject.toml")
    assert resolver.config_for(str(tmp_path / "a")) == str(tmp_path / "pyproject.toml")
    assert resolver.config_for(str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b" / "pyproject.toml")
    assert resolver.settings_for(str(tmp_path / "a" / "b" / "c.py")).enabled == ("PTL101",)
    assert resolver.settings_for(str(tmp_path / "a" / "b")) is resolver.settings_for(str(tmp_path / "a" / "b" / "d.py"))
    one = Resolver(config_file=str(tmp_path / "a" / "b" / "pyproject.toml"))
    assert one.config_for(str(tmp_path / "z.py")) == str(tmp_path / "a" / "b" / "pyproject.toml")
    with pytest.raises(ConfigError, match="config file not found"):
        Resolver(config_file=str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="unknown rule code"):
        Resolver(select="PTL9X")


def test_a_bad_config_is_an_error_each_time_it_is_asked_for(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\nselect = 'PTL1'\n")
    resolver = Resolver()
    for _ in range(2):
        with pytest.raises(ConfigError, match="select must be a list of strings"):
            resolver.settings_for(str(tmp_path / "a.py"))


def test_toml_errors_and_rereading_an_edited_file(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.ptlint\n")
    with pytest.raises(ConfigError) as error:
        load_config(str(path))
    assert str(error.value).startswith(f"{path}: invalid TOML: ")
    path.write_bytes(b"[tool.ptlint]\nselect = ['\xff']\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(str(path))
    path.write_text("[tool]\nptlint = 3\n")
    with pytest.raises(ConfigError, match=r"\[tool.ptlint\] must be a table"):
        load_config(str(path))
    path.write_text("[tool.ptlint]\nselect = ['PTL101']\n")
    assert load_config(str(path)) == {"select": ["PTL101"]}
    path.write_text("[tool.ptlint]\nselect = ['PTL102', 'PTL101']\n")  # another size: read again
    assert load_config(str(path)) == {"select": ["PTL102", "PTL101"]}
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path / "missing" / "pyproject.toml"))
    other = tmp_path / "other.toml"
    other.write_text("[project]\nname = 'x'\n")
    assert config_module._read_toml(str(other), only_if_mentioning=b"ptlint") == {}
    assert config_module._read_toml(str(other)) == {"project": {"name": "x"}}
    assert config_module._has_ptlint_table(str(path)) and not config_module._has_ptlint_table(str(other))
    assert not config_module._has_ptlint_table(str(tmp_path))  # a folder


@pytest.mark.parametrize("relative, pattern, expected", [
    ("gen/a.py", "gen", True), ("src/gen/a.py", "gen", True), ("src/generated.py", "gen", False),
    ("gen/a.py", "gen/", True), ("a/b/c.py", "a/b", True), ("x/a/b/c.py", "a/b", False),
    ("legacy_x.py", "legacy_*.py", True), ("src/legacy_x.py", "legacy_*.py", True),
    ("tests/a.py", "tests/**", True), ("pkg/tests/a.py", "tests/**", True), ("src/a.py", "src/*.py", True),
    ("src/a.py", "*.txt", False),
])
def test_gitignore_like_patterns(relative, pattern, expected):
    assert _matches(relative, pattern) is expected


def test_relative_paths_and_per_file_settings(tmp_path):
    assert _relative(str(tmp_path / "a" / "b.py"), str(tmp_path)) == "a/b.py"
    settings = Settings(enabled=("PTL101", "PTL102", "PTL201"), root=str(tmp_path), exclude=("gen",),
                        per_file_ignores=(("tests/*", ("PTL1",)), ("*.py", ("PTL201",))))
    assert settings.codes_for(str(tmp_path / "tests" / "a.py")) == ()
    assert settings.codes_for(str(tmp_path / "src" / "a.py")) == ("PTL101", "PTL102")
    assert Settings(enabled=("PTL101",)).codes_for("a.py") == ("PTL101",)
    assert settings.matches_exclude(str(tmp_path / "gen" / "x.py"))
    assert not settings.matches_exclude(str(tmp_path / "src" / "x.py"))
    assert Settings(enabled=()).cache_key() != Settings(enabled=(), test_code=()).cache_key()
    assert Settings(enabled=("PTL101",)).cache_key() != Settings(enabled=()).cache_key()


def test_build_settings_takes_the_first_path(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\nselect = ['PTL101']\nunsafe-fixes = false\n")
    assert build_settings([str(tmp_path / "a.py")]).enabled == ("PTL101",)
    assert build_settings([str(tmp_path)], select="PTL102", unsafe_fixes=True).enabled == ("PTL102",)
    assert build_settings([str(tmp_path)], unsafe_fixes=True).unsafe_fixes is True
    assert build_settings([str(tmp_path)], ignore="PTL101").enabled == ()
    assert build_settings([str(tmp_path)], extend_select="PTL102").enabled == ("PTL101", "PTL102")
    monkeypatch.chdir(tmp_path)
    assert build_settings([]).enabled == ("PTL101",)


# -- extend, --config overrides, --isolated, respect-gitignore -----------------------------------

def test_extend_layers_the_base_first_and_rebases_its_paths(tmp_path):
    base = tmp_path / "pyproject.toml"
    base.write_text('[tool.ptlint]\nselect = ["PTL1", "PTL3"]\nignore = ["PTL101"]\n'
                    'exclude = ["proj/gen", "vendor", "proj/data/", "**/x/y", "docs/**", "proj/a/**"]\n'
                    'extend-exclude = ["big/*.py"]\n'
                    'per-file-ignores = { "proj/tests/*" = ["PTL3"] }\ntest-code = ["proj/checks/**"]\n'
                    'cache-dir = "cache"\nunsafe-fixes = true\n'
                    '[tool.ptlint.dynamic]\ntargets = ["proj/probe.py:make", "pkg.mod:make", "c:/x.py:f:g"]\n'
                    'timeout = 9\n')
    (tmp_path / "proj").mkdir()
    child = tmp_path / "proj" / "pyproject.toml"
    child.write_text('[tool.ptlint]\nextend = "../pyproject.toml"\nextend-select = ["PTL101"]\n'
                     'ignore = ["PTL102"]\nextend-exclude = ["local"]\n[tool.ptlint.dynamic]\ndevice = "cpu"\n')
    settings = Resolver().settings_for(str(tmp_path / "proj" / "a.py"))
    assert settings.config_path == str(child) and settings.root == str(tmp_path / "proj")
    every = known_codes()
    assert set(settings.enabled) == {c for c in every if c.startswith(("PTL1", "PTL3")) and c != "PTL102"}
    # the base's patterns were relative to its folder; a name without a slash matches anywhere
    assert settings.exclude == ("gen", "vendor", "data/", "**/x/y", "docs/**", "a/**", "../big/*.py", "local")
    assert settings.per_file_ignores == (("tests/*", ("PTL3",)),)
    assert settings.test_code == ("checks/**",)
    assert settings.cache_dir == str(tmp_path / "cache") and settings.unsafe_fixes is True
    assert settings.dynamic == {"targets": ["probe.py:make", "pkg.mod:make", "c:/x.py:f:g"], "timeout": 9,
                                "device": "cpu"}
    assert settings.matches_exclude(str(tmp_path / "proj" / "gen" / "x.py"))
    assert settings.codes_for(str(tmp_path / "proj" / "tests" / "t.py")) == tuple(
        c for c in settings.enabled if not c.startswith("PTL3"))


def test_extend_chains_cycles_and_missing_files(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nselect = ["PTL2"]\n')
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.ptlint]\nextend = "$BASE_DIR/pyproject.toml"\n'
                                                 'extend-select = ["PTL101"]\n')
    (tmp_path / "b" / "pyproject.toml").write_text('[tool.ptlint]\nextend = "../a/pyproject.toml"\n')
    monkeypatch.setenv("BASE_DIR", str(tmp_path))
    settings = Resolver().settings_for(str(tmp_path / "b"))
    assert set(settings.enabled) == {c for c in known_codes() if c.startswith("PTL2")} | {"PTL101"}
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nextend = "b/pyproject.toml"\n')
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.ptlint]\nextend = "../pyproject.toml"\n')
    with pytest.raises(ConfigError, match="`extend` goes round in a circle"):
        Resolver().settings_for(str(tmp_path / "b"))
    (tmp_path / "b" / "pyproject.toml").write_text('[tool.ptlint]\nextend = "../nowhere.toml"\n')
    with pytest.raises(ConfigError, match=r"extend = '../nowhere.toml': no such file"):
        Resolver().settings_for(str(tmp_path / "b"))
    (tmp_path / "other.toml").write_text("[tool.black]\n")
    (tmp_path / "b" / "pyproject.toml").write_text('[tool.ptlint]\nextend = "../other.toml"\n')
    with pytest.raises(ConfigError, match=r"has no \[tool.ptlint\] table"):
        Resolver().settings_for(str(tmp_path / "b"))
    (tmp_path / "b" / "pyproject.toml").write_text('[tool.ptlint]\nextend = 3\n')
    with pytest.raises(ConfigError, match="extend must be a string"):
        Resolver().settings_for(str(tmp_path / "b"))


def test_overrides_replace_the_configs_keys_and_flags_win(tmp_path):
    from ptlint.run.config import parse_override

    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nignore = ["PTL1"]\nexclude = ["a"]\n'
                                            '[tool.ptlint.dynamic]\ntimeout = 5\ndevice = "cpu"\n')
    overrides = [parse_override("ignore = []"), parse_override("dynamic.timeout = 30"),
                 parse_override("tool.ptlint.extend-exclude = ['b']")]
    settings = Resolver(overrides=overrides).settings_for(str(tmp_path))
    assert "PTL101" in settings.enabled and settings.exclude == ("a", "b")
    assert settings.dynamic == {"timeout": 30, "device": "cpu"}
    assert "PTL101" not in Resolver(overrides=overrides, ignore="PTL101").settings_for(str(tmp_path)).enabled
    assert Resolver(overrides=[parse_override("select = ['PTL3']")]).settings_for(str(tmp_path / "x")).enabled \
        == tuple(sorted(c for c in known_codes() if c.startswith("PTL3")))
    for text, message in [("nope = 1", "unknown key"), ("select = 'PTL1'", "must be a list of strings"),
                          ("extend = 'x.toml'", "belongs in a")]:
        with pytest.raises(ConfigError, match=message):
            parse_override(text)
    for text, reason in [("select = ", "Invalid value (at end of document)"), ("x = '\udcff'", "not UTF-8")]:
        with pytest.raises(ConfigError) as error:
            parse_override(text)
        assert str(error.value) == f"--config {text!r}: neither a config file nor a TOML `key = value` pair " \
                                   f"({reason})"


def test_isolated_reads_no_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nignore = ["PTL1"]\nrespect-gitignore = false\n')
    configured = Resolver().settings_for(str(tmp_path))
    isolated = Resolver(isolated=True).settings_for(str(tmp_path))
    assert configured.respect_gitignore is False and "PTL101" not in configured.enabled
    assert isolated.config_path is None and isolated.respect_gitignore is True and "PTL101" in isolated.enabled
    assert Resolver(isolated=True, respect_gitignore=False).settings_for(str(tmp_path)).respect_gitignore is False
    with pytest.raises(ConfigError, match="respect-gitignore must be true or false"):
        validate({"respect-gitignore": "no"}, "p")
