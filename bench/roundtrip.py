"""Real code at scale: check and fix a copy of the corpus, then verify nothing was lost.

    python bench/roundtrip.py [CORPUS] [--keep] [--select CODES]

Copies CORPUS (default ${PTLINT_CORPUS:-~/.cache/ptlint-corpus}) to a temporary folder and runs
`ptlint check`, then `ptlint fix --apply --unsafe-fixes --diff`, then the same fix again. Counts:
- crashes: tracebacks, "internal error" lines, or exit 2 with no input to blame (ptlint's fault,
  not the input's: undecodable files and syntax errors are the input's);
- broken files: a fixed file that no longer compiles (and did before);
- structural failures written: a changed file whose fix passes, made again in this process and
  each checked again from scratch by the structural check (bench/fuzz.py's verify_passes), fail;
- non-idempotent files: files the second fix run changed;
- stray changes: files that the fix did not report as changed but whose bytes differ.
Exit status 1 when any of these is not zero.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path


def ptlint(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "ptlint", *args], cwd=cwd, capture_output=True, text=True)
    return result, time.monotonic() - start


def snapshot(root: Path) -> dict[str, bytes]:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def compiles(data: bytes, name: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, name, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


# stderr lines that blame the input, not ptlint
INPUT_ERRORS = re.compile(r"cannot decode|binary content|bad encoding|broken symbolic link|symbolic link loop|"
                          r"not a regular file|cannot read|nested too deeply")
CRASH = re.compile(r"Traceback|internal error|Error:|Exception", re.I)


def crashes(result: subprocess.CompletedProcess) -> list[str]:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    bad = [line for line in lines if CRASH.search(line) and not INPUT_ERRORS.search(line)]
    if result.returncode == 2 and not bad and not any(INPUT_ERRORS.search(line) for line in lines):
        bad.append(f"exit 2 with nothing to blame: {lines[-3:]}")
    if result.returncode not in (0, 1, 2):
        bad.append(f"exit status {result.returncode}")
    return bad


def structural_failures(root: Path, original: dict[str, bytes], changed: set[str], select: str) -> list[str]:
    """The changed files whose fix passes, made again here, fail the structural check run again
    from scratch on each pass."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fuzz import verify_passes

    from ptlint.engine.registry import all_rules
    from ptlint.engine.source import decode_source
    from ptlint.run.config import expand
    from ptlint.run.fix import fix_source

    codes = tuple(code for code in all_rules() if code in expand(select.split(","), source="--select"))
    failures = []
    for name in sorted(changed):
        if not name.endswith(".py"):
            continue
        result = fix_source(decode_source(original[name], name), codes, unsafe=True)
        failure = verify_passes(result)
        if failure:
            failures.append(f"{name}: {failure}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=os.environ.get(
        "PTLINT_CORPUS", os.path.expanduser("~/.cache/ptlint-corpus")))
    parser.add_argument("--select", default="PTL")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ptlint-roundtrip-"))
    root = work / "corpus"
    shutil.copytree(corpus, root, symlinks=True)
    original = snapshot(root)
    py_files = [name for name in original if name.endswith(".py")]
    lines = sum(original[name].count(b"\n") for name in py_files)
    print(f"corpus: {corpus} ({len(py_files)} .py files, {lines} lines)")

    check, check_s = ptlint("check", "--no-cache", "--select", args.select, "--output-format", "json", ".", cwd=root)
    findings = json.loads(check.stdout) if check.stdout.strip() else []
    check_crashes = crashes(check)
    syntax = sum(1 for f in findings if f["code"] == "PTL001")
    input_errors = [line for line in check.stderr.splitlines() if INPUT_ERRORS.search(line)]
    print(f"check: exit {check.returncode}, {len(findings)} findings ({syntax} PTL001), "
          f"{len(input_errors)} unreadable inputs, {len(check_crashes)} crashes, {check_s:.1f} s")

    fix, fix_s = ptlint("fix", "--apply", "--unsafe-fixes", "--diff", "--no-cache", "--select", args.select,
                        "--output-format", "json", ".", cwd=root)
    fix_crashes = crashes(fix)
    reported = {line[len("+++ b/"):].strip() for line in fix.stdout.splitlines() if line.startswith("+++ b/")}
    reported = {os.path.normpath(p) for p in reported}
    summary = re.search(r"Fixed (\d+) finding\(s\) in (\d+) file\(s\); (\d+) remaining", fix.stderr)
    applied = int(summary.group(1)) if summary else -1
    after = snapshot(root)
    changed = {name for name in original if after.get(name) != original[name]}
    stray = sorted(changed - reported)
    unreported = sorted(reported - changed)
    broken = sorted(name for name in changed
                    if compiles(original[name], name) and not compiles(after[name], name))
    extra = sorted(set(after) - set(original))
    dropped = [line for line in fix.stderr.splitlines() if "dropped" in line or "did not converge" in line]
    print(f"fix: exit {fix.returncode}, {applied} fixes applied in {len(changed)} files, "
          f"{len(fix_crashes)} crashes, {len(dropped)} dropped/unconverged notices, {fix_s:.1f} s")

    second, second_s = ptlint("fix", "--apply", "--unsafe-fixes", "--diff", "--no-cache", "--select", args.select,
                              ".", cwd=root)
    again = snapshot(root)
    non_idempotent = sorted(name for name in after if again.get(name) != after[name])
    second_crashes = crashes(second)
    print(f"second fix: exit {second.returncode}, {len(non_idempotent)} files changed again, {second_s:.1f} s")
    structural = structural_failures(root, original, changed, args.select)

    all_crashes = check_crashes + fix_crashes + second_crashes
    print()
    print(f"files                 {len(py_files)}")
    print(f"files changed         {len(changed)}")
    print(f"fixes applied         {applied}")
    print(f"crashes               {len(all_crashes)}")
    print(f"broken files          {len(broken)}")
    print(f"structural failures   {len(structural)}")
    print(f"non-idempotent files  {len(non_idempotent)}")
    print(f"stray changes         {len(stray) + len(extra)}")
    for label, items in (("crash", all_crashes), ("broken", broken), ("structural", structural),
                         ("non-idempotent", non_idempotent),
                         ("stray", stray + extra), ("reported but unchanged", unreported), ("notice", dropped)):
        for item in items[:20]:
            print(f"  {label}: {item}")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if all_crashes or broken or structural or non_idempotent or stray or extra else 0


if __name__ == "__main__":
    sys.exit(main())
