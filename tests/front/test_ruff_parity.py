"""ruff and ptlint side by side: every row of docs/ruff.md marked "same" has a case here that runs
both tools on the same situation (ruff on its own rules, ptlint on PTL ones) and compares what a
user sees: exit codes, files written or not, what goes to standard output and error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import KEPT_LOSS, REPO, SYNC_LOSS_ITEM, run_ptlint

RUFF = [sys.executable, "-m", "ruff"]  # pinned by the test extra

# One situation in each tool's terms: a finding with a safe fix, one without a fix, one whose fix
# is unsafe; the codes and names a test needs.
TOOLS = {
    "ruff": {
        "fixable": "import os\n",
        "unfixable": "print(undefined_name)\n",
        "unsafe": "def f(x=[]):\n    return x\n",  # B006: an unsafe fix
        "select": [],  # F401, F821 and B006 are among ruff's default rules
        "fixable_code": "F401", "fixable_name": "unused-import", "unfixable_code": "F821",
        "config": "[tool.ruff.lint]\n{key} = {value}\n",
        "override": "lint.{key} = {value}",
        "extending": "[tool.ruff]\nextend = \"{base}\"\n\n[tool.ruff.lint]\nextend-select = {codes}\n",
    },
    "ptlint": {
        "fixable": "import torch\nimport torch.nn.functional as F\nlogp = torch.log(F.softmax(logits, dim=-1))\n",
        "unfixable": SYNC_LOSS_ITEM,
        "unsafe": KEPT_LOSS,
        "select": [],
        "fixable_code": "PTL302", "fixable_name": "log-of-softmax", "unfixable_code": "PTL101",
        "config": "[tool.ptlint]\n{key} = {value}\n",
        "override": "{key} = {value}",
        "extending": "[tool.ptlint]\nextend = \"{base}\"\nextend-select = {codes}\n",
    },
}


def run(tool: str, *args: str, cwd: Path, input: str | None = None, env: dict | None = None,
        select: bool = True, ruff_only: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`ruff_only`: options only ruff needs for the same situation."""
    extra = TOOLS[tool]["select"] if select else []
    if tool == "ruff":
        extra = [*extra, *ruff_only]
    if tool == "ptlint":
        return run_ptlint(*args, *extra, cwd=cwd, input=input, env=env)
    full_env = {**os.environ, **(env or {})}
    full_env.pop("RUFF_CACHE_DIR", None)
    return subprocess.run([*RUFF, *args, *extra], cwd=cwd, input=input, text=True, capture_output=True,
                          env=full_env, timeout=120)


def folder(tmp_path: Path, tool: str, files: dict[str, str]) -> Path:
    root = tmp_path / tool
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def both(tmp_path: Path, files: dict[str, str], describe) -> None:
    """`files` maps names to a kind of TOOLS ("fixable", ...) or to literal text; `describe(tool,
    root)` returns what a user sees; ruff's and ptlint's must be equal."""
    seen = {}
    for tool in TOOLS:
        root = folder(tmp_path, tool, {name: TOOLS[tool].get(text, text) if isinstance(text, str) else text(tool)
                                       for name, text in files.items()})
        seen[tool] = describe(tool, root)
    assert seen["ptlint"] == seen["ruff"], seen


def changed(tool: str, root: Path, name: str, kind: str) -> bool:
    return (root / name).read_text() != TOOLS[tool][kind]


# -- the rows ------------------------------------------------------------------------------------

def row_check(tmp_path):
    both(tmp_path, {"clean.py": "x = 1\n", "bad.py": "unfixable"}, lambda tool, root: (
        run(tool, "check", "clean.py", cwd=root).returncode,
        run(tool, "check", "bad.py", cwd=root).returncode,
        run(tool, "check", "bad.py", "--bogus-option", cwd=root).returncode))


def row_fix(tmp_path):
    def describe(tool, root):
        only = run(tool, "check", "--fix", "a.py", cwd=root)
        mixed = run(tool, "check", "--fix", "b.py", "c.py", cwd=root)
        return (only.returncode, changed(tool, root, "a.py", "fixable"), mixed.returncode,
                changed(tool, root, "b.py", "fixable"), changed(tool, root, "c.py", "unfixable"),
                "(1 fixed, 1 remaining)" in mixed.stdout)
    both(tmp_path, {"a.py": "fixable", "b.py": "fixable", "c.py": "unfixable"}, describe)


def row_unsafe_fixes(tmp_path):
    def describe(tool, root):
        safe_only = run(tool, "check", "--fix", "a.py", cwd=root)
        kept = not changed(tool, root, "a.py", "unsafe")
        unsafe = run(tool, "check", "--fix", "--unsafe-fixes", "a.py", cwd=root)
        (root / "b.py").write_text(TOOLS[tool]["unsafe"])
        key = "unsafe-fixes" if tool == "ptlint" else "unsafe-fixes"
        (root / "pyproject.toml").write_text(("[tool.ptlint]\n" if tool == "ptlint" else "[tool.ruff]\n")
                                             + f"{key} = true\n")
        refused = run(tool, "check", "--fix", "--no-unsafe-fixes", "b.py", cwd=root)
        return (safe_only.returncode, kept, unsafe.returncode, changed(tool, root, "a.py", "unsafe"),
                refused.returncode, changed(tool, root, "b.py", "unsafe"))
    both(tmp_path, {"a.py": "unsafe"}, describe)


def row_diff(tmp_path):
    def describe(tool, root):
        diff = run(tool, "check", "--diff", "a.py", cwd=root)
        nothing = run(tool, "check", "--diff", "b.py", cwd=root)
        return (diff.returncode, changed(tool, root, "a.py", "fixable"), "+++ " in diff.stdout,
                bool(re.search(r"^Would fix 1 (error|finding)\.$", diff.stdout, re.M)),
                nothing.returncode, nothing.stdout)
    both(tmp_path, {"a.py": "fixable", "b.py": "unfixable"}, describe)


def row_fix_only(tmp_path):
    def describe(tool, root):
        result = run(tool, "check", "--fix-only", "a.py", "b.py", cwd=root)
        return (result.returncode, changed(tool, root, "a.py", "fixable"), result.stdout.strip())
    seen = {}
    for tool in TOOLS:
        root = folder(tmp_path, tool, {"a.py": TOOLS[tool]["fixable"], "b.py": TOOLS[tool]["unfixable"]})
        code, wrote, stdout = describe(tool, root)
        seen[tool] = (code, wrote, re.sub(r"errors?|findings?", "N", stdout))
    assert seen["ptlint"] == seen["ruff"] == (0, True, "Fixed 1 N."), seen


def row_show_fixes(tmp_path):
    seen = {}
    for tool in TOOLS:
        root = folder(tmp_path, tool, {"a.py": TOOLS[tool]["fixable"]})
        result = run(tool, "check", "--fix", "--show-fixes", "a.py", cwd=root)
        listing = re.search(r"^Fixed 1 \w+:\n- a\.py:\n    1 × (\S+) \((\S+)\)$", result.stdout, re.M)
        seen[tool] = (result.returncode, listing.groups() if listing else None)
    assert seen["ptlint"] == (0, ("PTL302", "log-of-softmax")) and seen["ruff"] == (0, ("F401", "unused-import"))


def row_exit_non_zero_on_fix(tmp_path):
    both(tmp_path, {"a.py": "fixable", "b.py": "x = 1\n"}, lambda tool, root: (
        run(tool, "check", "--fix", "--exit-non-zero-on-fix", "a.py", cwd=root).returncode,
        run(tool, "check", "--fix", "--exit-non-zero-on-fix", "b.py", cwd=root).returncode))


def row_exit_zero(tmp_path):
    both(tmp_path, {"a.py": "unfixable"}, lambda tool, root: (
        run(tool, "check", "--exit-zero", "a.py", cwd=root).returncode,
        run(tool, "check", "-e", "a.py", cwd=root).returncode,
        bool(run(tool, "check", "-e", "a.py", cwd=root).stdout)))


def row_no_cache(tmp_path):
    cache = {"ruff": ".ruff_cache", "ptlint": ".ptlint_cache"}
    both(tmp_path, {"a.py": "unfixable"}, lambda tool, root: (
        run(tool, "check", "-n", "a.py", cwd=root).returncode,
        (root / cache[tool]).exists(),
        run(tool, "check", "--no-cache", "a.py", cwd=root).returncode,
        (root / cache[tool]).exists(),
        run(tool, "check", "a.py", cwd=root).returncode,
        (root / cache[tool]).exists()))


def row_output_file(tmp_path):
    def describe(tool, root):
        result = run(tool, "check", "-o", "out/report.txt", "--output-format", "concise", "a.py", cwd=root)
        long = run(tool, "check", "--output-file", "long.txt", "a.py", cwd=root)
        report = (root / "out" / "report.txt").read_text()
        return (result.returncode, result.stdout, TOOLS[tool]["unfixable_code"] in report, long.stdout,
                (root / "long.txt").exists())
    both(tmp_path, {"a.py": "unfixable"}, describe)


def row_quiet(tmp_path):
    def describe(tool, root):
        loud = run(tool, "check", "--output-format", "concise", "a.py", cwd=root)
        quiet = run(tool, "check", "-q", "--output-format", "concise", "a.py", cwd=root)
        also = run(tool, "check", "--quiet", "--output-format", "concise", "a.py", cwd=root)
        return (quiet.returncode, "Found 1" in loud.stdout, "Found" in quiet.stdout,
                TOOLS[tool]["unfixable_code"] in quiet.stdout, quiet.stdout == also.stdout)
    both(tmp_path, {"a.py": "unfixable"}, describe)


def row_silent(tmp_path):
    both(tmp_path, {"a.py": "unfixable", "b.py": "x = 1\n"}, lambda tool, root: (
        (result := run(tool, "check", "-s", "a.py", cwd=root)).returncode, result.stdout, result.stderr,
        (other := run(tool, "check", "--silent", "b.py", cwd=root)).returncode, other.stdout))


def row_statistics_json(tmp_path):
    def describe(tool, root):
        result = run(tool, "check", "--statistics", "--output-format", "json", "a.py", "b.py", cwd=root)
        rows = json.loads(result.stdout)
        return (result.returncode, [sorted(row) for row in rows],
                sorted((row["count"], row["fixable"], row["fixable_count"]) for row in rows))
    both(tmp_path, {"a.py": "fixable", "b.py": "unfixable"}, describe)


def row_add_noqa(tmp_path):
    def describe(tool, root):
        # ruff's RUF100 (on by default) would call E501 unused; PTL002 leaves other linters' codes alone
        result = run(tool, "check", "--add-noqa", "a.py", "b.py", "c.py", cwd=root, ruff_only=("--ignore", "RUF100"))
        code = TOOLS[tool]["fixable_code"]
        lines = {name: [line for line in (root / name).read_text().splitlines() if "noqa" in line]
                 for name in ("a.py", "b.py", "c.py")}
        return (result.returncode, result.stderr.strip().splitlines()[-1],
                {name: [line[line.index("  #"):].replace(code, "CODE") for line in found]
                 for name, found in lines.items()},
                run(tool, "check", "a.py", "b.py", "c.py", cwd=root, ruff_only=("--ignore", "RUF100")).returncode)
    seen = {}
    for tool in TOOLS:
        fixable = TOOLS[tool]["fixable"].rstrip("\n")
        root = folder(tmp_path, tool, {"a.py": fixable + "\n", "b.py": fixable + "  # keep this\n",
                                       "c.py": fixable + "  # noqa: E501\n"})
        seen[tool] = describe(tool, root)
    assert seen["ptlint"] == seen["ruff"] == (0, "Added 3 noqa directives.", {
        "a.py": ["  # noqa: CODE"], "b.py": ["  # keep this  # noqa: CODE"], "c.py": ["  # noqa: E501, CODE"]}, 0)


def row_isolated(tmp_path):
    def describe(tool, root):
        (root / "pyproject.toml").write_text(TOOLS[tool]["config"].format(
            key="ignore", value=json.dumps([TOOLS[tool]["unfixable_code"]])))
        return (run(tool, "check", "a.py", cwd=root).returncode,
                run(tool, "check", "--isolated", "a.py", cwd=root).returncode,
                run(tool, "check", "--isolated", "--config", "pyproject.toml", "a.py", cwd=root).returncode)
    both(tmp_path, {"a.py": "unfixable"}, describe)


def row_config_file(tmp_path):
    def describe(tool, root):
        (root / "elsewhere").mkdir()
        (root / "elsewhere" / "pyproject.toml").write_text(TOOLS[tool]["config"].format(
            key="ignore", value=json.dumps([TOOLS[tool]["unfixable_code"]])))
        return (run(tool, "check", "a.py", cwd=root).returncode,
                run(tool, "check", "--config", "elsewhere/pyproject.toml", "a.py", cwd=root).returncode,
                run(tool, "check", "--config", "nowhere.toml", "a.py", cwd=root).returncode)
    both(tmp_path, {"a.py": "unfixable"}, describe)


def row_config_override(tmp_path):
    def describe(tool, root):
        value = json.dumps([TOOLS[tool]["unfixable_code"]]).replace('"', "'")
        override = TOOLS[tool]["override"]
        return (run(tool, "check", "--config", override.format(key="ignore", value=value), "a.py",
                    cwd=root).returncode,
                run(tool, "check", "--config", override.format(key="ignore", value="[]"), "--config",
                    override.format(key="extend-select", value=value), "a.py", cwd=root).returncode,
                run(tool, "check", "--config", override.format(key="no-such-key", value="1"), "a.py",
                    cwd=root).returncode)
    both(tmp_path, {"a.py": "unfixable"}, describe)


def row_extend(tmp_path):
    def describe(tool, root):
        code = json.dumps([TOOLS[tool]["unfixable_code"]])
        (root / "pyproject.toml").write_text(TOOLS[tool]["config"].format(key="ignore", value=code))
        child = root / "sub" / "pyproject.toml"
        child.write_text(TOOLS[tool]["extending"].format(base="../pyproject.toml", codes="[]"))
        inherited = run(tool, "check", "sub/a.py", cwd=root).returncode  # the base's ignore holds
        child.write_text(TOOLS[tool]["extending"].format(base="../pyproject.toml", codes=code))
        overridden = run(tool, "check", "sub/a.py", cwd=root).returncode  # the child's layer comes later
        child.write_text(TOOLS[tool]["extending"].format(base="../missing.toml", codes="[]"))
        broken = run(tool, "check", "sub/a.py", cwd=root).returncode
        return inherited, overridden, broken
    both(tmp_path, {"sub/a.py": "unfixable"}, describe)


def _git_tree(root: Path, tool: str) -> None:
    """A repository whose .gitignore, .git/info/exclude and global excludes each hide a file."""
    text = TOOLS[tool]["unfixable"]
    for name in ("keep.py", "build_out/gen.py", "src/a.py", "src/a_pb2.py", "src/keep_pb2.py", "local/x.py",
                 "secret/y.py", "src/deep/b.py", "src/deep/scratch.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text("build_out/\n*_pb2.py\n")
    (root / "src" / ".gitignore").write_text("!keep_pb2.py\n")
    (root / "src" / "deep" / ".ignore").write_text("scratch.py\n")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("local/\n")


def _listed(result: subprocess.CompletedProcess, root: Path) -> list[str]:
    assert result.returncode == 0, result.stderr
    return sorted(os.path.relpath(os.path.join(root, line), root).replace(os.sep, "/")
                  for line in result.stdout.splitlines() if not line.endswith(".toml"))  # ruff lists its configs


def row_respect_gitignore(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("secret/\n")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_GLOBAL": str(home / "nothing")}

    def describe(tool, root):
        _git_tree(root, tool)
        default = _listed(run(tool, "check", "--show-files", ".", cwd=root, env=env), root)
        flag = _listed(run(tool, "check", "--show-files", "--respect-gitignore", ".", cwd=root, env=env), root)
        off = _listed(run(tool, "check", "--show-files", "--no-respect-gitignore", ".", cwd=root, env=env), root)
        named = _listed(run(tool, "check", "--show-files", "build_out", "src/a_pb2.py", cwd=root, env=env), root)
        (root / "pyproject.toml").write_text(TOOLS[tool]["config"].replace(".lint", "").format(
            key="respect-gitignore", value="false"))
        configured = _listed(run(tool, "check", "--show-files", ".", cwd=root, env=env), root)
        return default, flag, off, named, configured

    both(tmp_path, {}, describe)
    # what the files say, so that both tools agreeing on nothing would not pass
    seen = describe("ptlint", tmp_path / "again")
    assert seen[0] == ["keep.py", "src/a.py", "src/deep/b.py", "src/keep_pb2.py"]
    assert "local/x.py" in seen[2] and "secret/y.py" in seen[2] and "build_out/gen.py" in seen[2]
    assert seen[3] == ["build_out/gen.py", "src/a_pb2.py"] and seen[4] == seen[2]


def row_force_exclude(tmp_path):
    def describe(tool, root):
        (root / "pyproject.toml").write_text(TOOLS[tool]["config"].replace(".lint", "").format(
            key="extend-exclude", value='["gen"]'))
        return (run(tool, "check", "gen/a.py", cwd=root).returncode,
                run(tool, "check", "--force-exclude", "gen/a.py", cwd=root).returncode,
                run(tool, "check", ".", cwd=root).returncode)
    both(tmp_path, {"gen/a.py": "unfixable"}, describe)


def row_stdin_filename(tmp_path):
    def describe(tool, root):
        (root / "pyproject.toml").write_text(TOOLS[tool]["config"].format(
            key="per-file-ignores", value="{ " + f'"quiet.py" = {json.dumps([TOOLS[tool]["unfixable_code"]])}'
                                              + " }"))
        text = TOOLS[tool]["unfixable"]
        return (run(tool, "check", "--stdin-filename", "loud.py", "-", cwd=root, input=text).returncode,
                run(tool, "check", "--stdin-filename", "quiet.py", "-", cwd=root, input=text).returncode,
                run(tool, "check", "--stdin-filename", "loud.py", cwd=root, input=text).returncode)
    both(tmp_path, {}, describe)


def row_noqa(tmp_path):
    def describe(tool, root):
        line = TOOLS[tool]["fixable"].rstrip("\n")
        code = TOOLS[tool]["fixable_code"]
        results = []
        # (a lower-case code counts in ptlint, as in flake8; ruff wants upper case)
        for comment in ("", "  # noqa", f"  # noqa: {code}", "  # noqa: E999", f"  # NOQA:{code}, E501"):
            (root / "a.py").write_text(line + comment + "\n")
            results.append(run(tool, "check", "--select", code, "a.py", cwd=root, select=False).returncode)
        return results
    both(tmp_path, {}, describe)


def row_file_noqa(tmp_path):
    def describe(tool, root):
        results = []
        for head in ("# ruff: noqa\n", "# flake8: noqa\n", f"# ruff: noqa: {TOOLS[tool]['unfixable_code']}\n",
                     "# ruff: noqa: E999\n"):
            (root / "a.py").write_text(head + TOOLS[tool]["unfixable"])
            results.append(run(tool, "check", "a.py", cwd=root).returncode)
        return results
    both(tmp_path, {}, describe)


def row_clean(tmp_path):
    cache = {"ruff": ".ruff_cache", "ptlint": ".ptlint_cache"}

    def describe(tool, root):
        run(tool, "check", "a.py", "sub/b.py", cwd=root)
        made = (root / cache[tool]).is_dir()
        result = subprocess.run([*RUFF, "clean"] if tool == "ruff" else [sys.executable, "-m", "ptlint", "clean"],
                                cwd=root, capture_output=True, text=True, timeout=60)
        return made, result.returncode, result.stdout, (root / cache[tool]).exists(), (root / "a.py").exists()
    both(tmp_path, {"a.py": "unfixable", "sub/b.py": "unfixable"}, describe)


def _initialize(command: list[str]) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        process.stdin.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
        process.stdin.flush()
        length = None
        while (header := process.stdout.readline().strip()):
            if header.lower().startswith(b"content-length:"):
                length = int(header.split(b":")[1])
        return json.loads(process.stdout.read(length))
    finally:
        process.kill()
        process.wait(timeout=30)


def row_server(tmp_path):
    seen = {}
    for tool, command in (("ruff", [*RUFF, "server"]), ("ptlint", [sys.executable, "-m", "ptlint", "server"])):
        answer = _initialize(command)
        seen[tool] = (answer["id"], sorted(answer["result"]), "textDocumentSync" in answer["result"]["capabilities"])
    assert seen["ptlint"] == seen["ruff"] == (1, ["capabilities", "serverInfo"], True)
    assert _initialize([sys.executable, "-m", "ptlint", "lsp"])["result"]["serverInfo"]["name"] == "ptlint"


def row_version(tmp_path):
    seen = {}
    for tool in TOOLS:
        command = run(tool, "version", cwd=tmp_path, select=False)
        flag = run(tool, "--version", cwd=tmp_path, select=False)
        seen[tool] = (command.returncode, re.fullmatch(rf"{tool} \d+\.\d+\.\d+\n", command.stdout) is not None,
                      flag.stdout == command.stdout)
    assert seen["ptlint"] == seen["ruff"] == (0, True, True)


def row_rule(tmp_path):
    both(tmp_path, {}, lambda tool, root: (
        run(tool, "rule", TOOLS[tool]["fixable_code"], cwd=root, select=False).returncode,
        TOOLS[tool]["fixable_name"] in run(tool, "rule", TOOLS[tool]["fixable_code"], cwd=root, select=False).stdout,
        run(tool, "rule", "XYZ999", cwd=root, select=False).returncode))


def row_closed_pipe(tmp_path):
    def describe(tool, root):
        command = [*RUFF, "check", "--no-cache", *TOOLS[tool]["select"], "many.py"] if tool == "ruff" else \
            [sys.executable, "-m", "ptlint", "check", "--no-cache", "many.py"]
        process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = process.stdout.readline()
        process.stdout.close()  # `| head -1`
        stderr = process.stderr.read().decode()
        return bool(first), process.wait(timeout=120), "Traceback" in stderr or "Error" in stderr
    lines = {"ruff": "import os{}\n", "ptlint": "y{} = torch.log(F.softmax(x, dim=-1))\n"}
    seen = {}
    for tool in TOOLS:
        head = "" if tool == "ruff" else "import torch\nimport torch.nn.functional as F\n"
        root = folder(tmp_path, tool, {"many.py": head + "".join(lines[tool].format(i) for i in range(3000))})
        seen[tool] = describe(tool, root)
    assert seen["ptlint"] == seen["ruff"] == (True, 0, False)


ROWS = {
    "`ruff check PATH` (exit 0 clean, 1 findings, 2 usage error)": row_check,
    "`check --fix`": row_fix,
    "`check --unsafe-fixes` / `--no-unsafe-fixes`": row_unsafe_fixes,
    "`check --diff`": row_diff,
    "`check --fix-only`": row_fix_only,
    "`check --show-fixes`": row_show_fixes,
    "`check --exit-non-zero-on-fix`": row_exit_non_zero_on_fix,
    "`check --exit-zero` / `-e`": row_exit_zero,
    "`check --no-cache` / `-n`": row_no_cache,
    "`check --output-file` / `-o`": row_output_file,
    "`check --quiet` / `-q`": row_quiet,
    "`check --silent` / `-s`": row_silent,
    "`check --statistics --output-format json`": row_statistics_json,
    "`check --add-noqa`": row_add_noqa,
    "`check --isolated`": row_isolated,
    "`check --config FILE`": row_config_file,
    '`check --config "KEY = VALUE"`': row_config_override,
    '`extend = "../pyproject.toml"`': row_extend,
    "`--respect-gitignore` / `--no-respect-gitignore`, `respect-gitignore = false`": row_respect_gitignore,
    "`check --force-exclude`": row_force_exclude,
    "`check --stdin-filename PATH -`": row_stdin_filename,
    "`# noqa`, `# noqa: CODE`": row_noqa,
    "`# ruff: noqa`, `# flake8: noqa` (file-wide)": row_file_noqa,
    "`ruff clean`": row_clean,
    "`ruff server`": row_server,
    "`ruff version` / `--version`": row_version,
    "`ruff rule CODE`": row_rule,
    "`ruff check ... \\| head` (the reader stops early)": row_closed_pipe,
}


def same_rows() -> list[str]:
    text = (REPO / "docs" / "ruff.md").read_text(encoding="utf-8")
    table = text[text.index("<!-- ruff-table:start"):text.index("<!-- ruff-table:end")]
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in table.splitlines() if line.startswith("| `")]
    return [cells[0].strip() for cells in rows if cells[2].strip() == "same"]


def test_every_same_row_has_a_side_by_side_case():
    assert sorted(same_rows()) == sorted(ROWS)


@pytest.mark.parametrize("row", list(ROWS))
def test_behaves_as_ruff_does(row, tmp_path):
    ROWS[row](tmp_path)
