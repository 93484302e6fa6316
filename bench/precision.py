"""Precision harness: run ptlint on the pinned corpus, read a seeded sample of findings, keep verdicts.

    python bench/precision.py sample  [--corpus training] [--rules PTL101,PTL201] [--seed 1] [--per-rule 10]
    python bench/precision.py judge   PACKAGE PATH LINE CODE true|false|debatable "one-line reason"
    python bench/precision.py report  [--corpus training] [--markdown]

`sample` prints each sampled finding that has no verdict yet, with the code around it (the headers
of the blocks that enclose it, and about 15 lines with the finding's line marked) and the `judge`
command to record a verdict. Verdicts live in bench/judgements.jsonl, one JSON object per line,
keyed by package, version, path (inside the package folder), line and code: a finding is judged
once, and every later run reuses its verdict. `report` prints per-rule precision over the sample,
true / (true + false), with debatable beside it, and lists the verdicts whose finding is gone.

The sample ranks each rule's findings by a hash of (seed, finding key) and keeps the first
`--per-rule`: the same seed gives the same sample, and a finding appearing or vanishing elsewhere
does not reshuffle it. It downloads nothing: `../shared/tools/corpus.sh [--training]` unpacks the
corpus into ~/.cache/ptlint-corpus (or $PTLINT_CORPUS); package versions are read from its pins.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JUDGEMENTS = REPO / "bench" / "judgements.jsonl"
CORPUS_SCRIPTS = (REPO.parent / "shared" / "tools" / "corpus.sh", REPO / "shared" / "tools" / "corpus.sh")
VERDICTS = ("true", "false", "debatable")
FIELDS = ("package", "version", "path", "line", "code", "verdict", "reason")
WINDOW = 7  # lines shown on each side of a finding


class HarnessError(Exception):
    """A problem the user must fix (missing corpus, bad judgement file): one line, exit 2."""


@dataclass(frozen=True)
class Finding:
    package: str  # corpus folder name, e.g. "pytorch_ignite"
    version: str
    path: str  # inside the package folder, with "/"
    line: int
    code: str
    message: str = ""

    @property
    def key(self) -> tuple[str, str, str, int, str]:
        return (self.package, self.version, self.path, self.line, self.code)


# --- corpus ------------------------------------------------------------------------------------------

def folder_name(distribution: str) -> str:
    """The folder corpus.sh unpacks a distribution into: its wheel's name (`pytorch-ignite` -> `pytorch_ignite`)."""
    return re.sub(r"[-_.]+", "_", distribution).lower()


def read_pins(script_text: str) -> dict[str, dict[str, str]]:
    """{"libraries"|"training": {folder: version}} from the `pins="..."` lines of corpus.sh, in order:
    the first pins line is the training corpus (the `--training` branch), the other the libraries."""
    blocks = re.findall(r'pins="([^"]*)"', script_text)
    if len(blocks) != 2:
        raise HarnessError(f"expected two pins=\"...\" lists in corpus.sh, found {len(blocks)}")
    corpora = {}
    for kind, block in zip(("training", "libraries"), blocks):
        corpora[kind] = {folder_name(name): version
                         for name, version in re.findall(r"([A-Za-z0-9_.-]+)==(\S+)", block)}
    return corpora


def find_corpus_script(explicit: str | None) -> Path:
    candidates = [Path(explicit)] if explicit else list(CORPUS_SCRIPTS)
    for script in candidates:
        if script.is_file():
            return script
    raise HarnessError("corpus.sh not found (looked at " + ", ".join(map(str, candidates))
                       + "); pass --corpus-script")


def corpus_root(explicit: str | None) -> Path:
    return Path(explicit or os.environ.get("PTLINT_CORPUS") or Path.home() / ".cache" / "ptlint-corpus")


def choose_packages(pins: dict[str, dict[str, str]], corpus: str, packages: str | None) -> dict[str, str]:
    """{folder: version} for the chosen corpus (libraries, training or all) or the named packages."""
    every = {**pins["libraries"], **pins["training"]}
    if packages:
        names = [name.strip() for name in packages.split(",") if name.strip()]
        unknown = [name for name in names if folder_name(name) not in every]
        if unknown:
            raise HarnessError(f"not in corpus.sh's pins: {', '.join(unknown)} (known: {', '.join(sorted(every))})")
        return {folder_name(name): every[folder_name(name)] for name in names}
    return every if corpus == "all" else dict(pins[corpus])


def present_packages(root: Path, wanted: dict[str, str], pins: dict[str, dict[str, str]]) -> dict[str, str]:
    """The wanted packages that are unpacked; says on stderr how to get the missing ones."""
    present = {name: version for name, version in wanted.items() if (root / name).is_dir()}
    missing = sorted(set(wanted) - set(present))
    if missing:
        commands = [f"bash ../shared/tools/corpus.sh{flag}" for flag, kind in (("", "libraries"), (" --training", "training"))
                    if any(name in pins[kind] for name in missing)]
        print(f"precision: not unpacked under {root}: {', '.join(missing)}; "
              f"get them with: {' and '.join(commands)}", file=sys.stderr)
    if not present:
        raise HarnessError(f"no corpus package found under {root}")
    return present


# --- running ptlint ---------------------------------------------------------------------------------

def ptlint(*args: str, cwd: Path | None = None) -> str:
    """Stdout of the ptlint of this checkout's environment (`python -m ptlint`), run as a child process."""
    result = subprocess.run([sys.executable, "-m", "ptlint", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise HarnessError(f"ptlint {' '.join(args[:1])} failed (exit {result.returncode}): {last}")
    return result.stdout


def catalogue() -> list[dict]:
    return json.loads(ptlint("rule", "--all", "--output-format", "json"))


def choose_rules(rules: str | None, entries: list[dict]) -> list[str]:
    """Codes of the default-on rules, or those the comma list of codes or prefixes names."""
    if not rules:
        return [entry["code"] for entry in entries if entry["default"] == "on"]
    prefixes = [part.strip().upper() for part in rules.split(",") if part.strip()]
    chosen = [entry["code"] for entry in entries if any(entry["code"].startswith(p) for p in prefixes)]
    if not chosen:
        raise HarnessError(f"--rules {rules} names no rule of the catalogue")
    return chosen


def check_package(root: Path, package: str, version: str, codes: list[str]) -> list[Finding]:
    """ptlint's findings on one package folder, run from inside it, so paths (and test-code patterns)
    are relative to the package as they would be in its own repository."""
    output = ptlint("check", "--no-cache", "--select", ",".join(codes), "--output-format", "json",
                    "--exit-zero", "--quiet", ".", cwd=root / package)
    findings = []
    for item in json.loads(output):
        path = os.path.normpath(item["path"]).replace(os.sep, "/")
        findings.append(Finding(package, version, path, item["line"], item["code"], item.get("message", "")))
    return findings


def collect(root: Path, packages: dict[str, str], codes: list[str]) -> list[Finding]:
    findings: list[Finding] = []
    for package, version in packages.items():
        try:
            findings += check_package(root, package, version, codes)
        except HarnessError as error:  # one broken package does not hide the others
            print(f"precision: {package}: {error}", file=sys.stderr)
    return findings


# --- sampling ---------------------------------------------------------------------------------------

def rank(seed: int, finding: Finding) -> str:
    text = "\0".join(map(str, (seed, *finding.key)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def draw_sample(findings: list[Finding], seed: int, per_rule: int) -> dict[str, list[Finding]]:
    """{code: up to per_rule findings}, one per (package, version, path, line, code), in sample order.
    The choice depends only on the seed and each finding's own key, not on the input's order."""
    unique = {finding.key: finding for finding in findings}
    by_code: dict[str, list[Finding]] = {}
    for finding in unique.values():
        by_code.setdefault(finding.code, []).append(finding)
    return {code: sorted(group, key=lambda finding: rank(seed, finding))[:per_rule]
            for code, group in sorted(by_code.items())}


# --- judgements -------------------------------------------------------------------------------------

def judgement_key(record: dict) -> tuple[str, str, str, int, str]:
    return (record["package"], record["version"], record["path"], record["line"], record["code"])


def parse_judgement(text: str) -> dict:
    record = json.loads(text)
    if not isinstance(record, dict) or set(record) != set(FIELDS):
        raise ValueError(f"needs exactly the fields {', '.join(FIELDS)}")
    if record["verdict"] not in VERDICTS or not isinstance(record["line"], int):
        raise ValueError("verdict must be true, false or debatable and line an integer")
    return record


def load_judgements(path: Path, strict: bool = False) -> dict[tuple, dict]:
    """{key: record}. A malformed line is reported and skipped, or (strict, before a rewrite) refused,
    so that rewriting the file never drops it."""
    records: dict[tuple, dict] = {}
    if not path.exists():
        return records
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            record = parse_judgement(text)
        except (ValueError, KeyError) as error:
            message = f"{path}:{number}: bad judgement ({error})"
            if strict:
                raise HarnessError(message + "; fix that line first") from None
            print(f"precision: {message}; skipped", file=sys.stderr)
            continue
        records[judgement_key(record)] = record
    return records


def save_judgement(path: Path, record: dict) -> bool:
    """Adds the verdict, or replaces the one with the same key; True when it replaced one. The file
    is rewritten sorted (stable diffs) through a temporary file, so it is never left half-written."""
    record = parse_judgement(json.dumps(record))
    records = load_judgements(path, strict=True)
    replaced = judgement_key(record) in records
    records[judgement_key(record)] = record
    lines = [json.dumps({field: records[key][field] for field in FIELDS}, ensure_ascii=False)
             for key in sorted(records)]
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".judgements-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write("\n".join(lines) + "\n")
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return replaced


# --- report -----------------------------------------------------------------------------------------

def precision(true: int, false: int) -> str:
    return f"{true / (true + false):.0%}" if true + false else "—"


def tally(codes: list[str], findings: list[Finding], sample: dict[str, list[Finding]],
          judgements: dict[tuple, dict]) -> list[dict]:
    """One row per code, then the pooled row: findings (one per line), lines reported more than once,
    sampled, judged, true, false, debatable, precision."""
    lines_per_code = Counter(finding.code for finding in {f.key: f for f in findings}.values())
    all_per_code = Counter(finding.code for finding in findings)
    rows = []
    for code in codes:
        verdicts = Counter(judgements[f.key]["verdict"] for f in sample.get(code, []) if f.key in judgements)
        rows.append({"rule": code, "findings": lines_per_code[code],
                     "repeated": all_per_code[code] - lines_per_code[code],
                     "sampled": len(sample.get(code, [])), "judged": sum(verdicts.values()),
                     "true": verdicts["true"], "false": verdicts["false"], "debatable": verdicts["debatable"]})
    pooled = {"rule": "pooled"}
    for column in ("findings", "repeated", "sampled", "judged", "true", "false", "debatable"):
        pooled[column] = sum(row[column] for row in rows)
    for row in (*rows, pooled):
        row["precision"] = precision(row["true"], row["false"])
    return rows + [pooled]


def vanished(findings: list[Finding], judgements: dict[tuple, dict], packages: dict[str, str],
             codes: list[str]) -> tuple[list[dict], list[dict]]:
    """(verdicts on this run's packages, versions and rules whose finding ptlint no longer reports,
    verdicts on a package version other than the pinned one). Both are kept in the file."""
    current = {finding.key for finding in findings}
    gone, other_version = [], []
    for key, record in sorted(judgements.items()):
        package, version, _, _, code = key
        if package not in packages or code not in codes:
            continue
        if version != packages[package]:
            other_version.append(record)
        elif key not in current:
            gone.append(record)
    return gone, other_version


def text_table(rows: list[dict]) -> str:
    header = f"{'rule':<8}{'findings':>9}{'repeated':>9}{'sampled':>8}{'judged':>7}{'true':>6}{'false':>6}" \
             f"{'debat.':>7}{'precision':>10}"
    lines = [header]
    for row in rows:
        lines.append(f"{row['rule']:<8}{row['findings']:>9}{row['repeated']:>9}{row['sampled']:>8}{row['judged']:>7}"
                     f"{row['true']:>6}{row['false']:>6}{row['debatable']:>7}{row['precision']:>10}")
    return "\n".join(lines)


def markdown_table(rows: list[dict], packages: dict[str, str], seed: int, per_rule: int,
                   date: datetime.date) -> str:
    versions = ", ".join(f"{name} {version}" for name, version in sorted(packages.items()))
    lines = [f"Corpus: {versions}. Sample: seed {seed}, up to {per_rule} findings per rule; {date.isoformat()}.",
             "",
             "| rule | findings | judged | true | false | debatable | precision |",
             "|---|---|---|---|---|---|---|"]
    silent = [row["rule"] for row in rows if row["rule"] != "pooled" and not row["findings"] and not row["judged"]]
    for row in rows:
        if row["rule"] in silent:
            continue
        name = "**pooled**" if row["rule"] == "pooled" else row["rule"]
        lines.append(f"| {name} | {row['findings']} | {row['judged']} | {row['true']} | {row['false']} | "
                     f"{row['debatable']} | {row['precision']} |")
    notes = ["Findings count distinct lines per rule"]
    if rows[-1]["repeated"]:
        notes[0] += f" ({rows[-1]['repeated']} more findings repeat a line already reported)"
    if silent:
        notes.append(f"no findings: {', '.join(silent)}")
    return "\n".join(lines) + "\n\n" + "; ".join(notes) + "."


# --- showing a finding ------------------------------------------------------------------------------

def enclosing_headers(tree: ast.AST, lines: list[str], line: int) -> list[int]:
    """First lines of the blocks (def, class, for, while, with, if, else, try, except) around `line`."""
    headers: list[int] = []
    node = tree
    while True:
        inner = [child for child in ast.iter_child_nodes(node)
                 if isinstance(child, (ast.stmt, ast.excepthandler))
                 and child.lineno <= line <= (child.end_lineno or child.lineno)]
        if not inner:
            return headers
        node = inner[0]
        if isinstance(getattr(node, "body", None), list):
            headers.append(node.lineno)
        orelse = getattr(node, "orelse", None)
        if orelse and orelse[0].lineno <= line:  # inside the `else:` part: show that line too
            number = orelse[0].lineno - 1
            while number > node.lineno and not lines[number - 1].lstrip().startswith("else"):
                number -= 1
            if number > node.lineno:  # an `elif` is itself an If, and shows as its own header
                headers.append(number)


def show(root: Path, finding: Finding, window: int = WINDOW) -> str:
    """The finding's enclosing headers above the window, then the window with the line marked `>>`."""
    try:
        source = (root / finding.package / finding.path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"    (cannot read: {error.strerror})"
    lines = source.splitlines()
    first, last = max(1, finding.line - window), min(len(lines), finding.line + window)
    try:
        headers = [h for h in enclosing_headers(ast.parse(source), lines, finding.line) if h < first]
    except SyntaxError:
        headers = []
    out = [f"{number:>6}  {lines[number - 1]}" for number in headers]
    if headers:
        out.append("   ...")
    for number in range(first, last + 1):
        mark = ">>" if number == finding.line else "  "
        out.append(f"{number:>6}{mark}{lines[number - 1]}")
    return "\n".join(out)


# --- commands ---------------------------------------------------------------------------------------

def gather(args) -> tuple[Path, dict[str, str], list[str], list[Finding], dict[str, list[Finding]]]:
    pins = read_pins(find_corpus_script(args.corpus_script).read_text(encoding="utf-8"))
    root = corpus_root(args.root)
    packages = present_packages(root, choose_packages(pins, args.corpus, args.packages), pins)
    codes = choose_rules(args.rules, catalogue())
    findings = collect(root, packages, codes)
    return root, packages, codes, findings, draw_sample(findings, args.seed, args.per_rule)


def command_sample(args) -> int:
    root, _, codes, _, sample = gather(args)
    judgements = load_judgements(Path(args.judgements))
    chosen = [finding for code in codes for finding in sample.get(code, [])]
    shown = [finding for finding in chosen if args.all or finding.key not in judgements]
    for number, finding in enumerate(shown, 1):
        record = judgements.get(finding.key)
        print(f"=== [{number}/{len(shown)}] {finding.code} {finding.package} {finding.version} "
              f"{finding.path}:{finding.line}  {finding.message}")
        print(show(root, finding))
        if record:
            print(f"    verdict: {record['verdict']} — {record['reason']}")
        else:
            print(f"    python bench/precision.py judge {finding.package} {finding.path} {finding.line} "
                  f"{finding.code} true|false|debatable \"...\"")
        print()
    print(f"{len(chosen)} sampled, {sum(f.key in judgements for f in chosen)} judged, "
          f"{sum(f.key not in judgements for f in chosen)} to judge")
    return 0


def command_judge(args) -> int:
    pins = read_pins(find_corpus_script(args.corpus_script).read_text(encoding="utf-8"))
    package = folder_name(args.package)
    versions = {**pins["libraries"], **pins["training"]}
    if package not in versions:
        raise HarnessError(f"{args.package} is not in corpus.sh's pins")
    reason = " ".join(args.reason.split())
    if not reason:
        raise HarnessError("give a one-line reason")
    if not re.fullmatch(r"PTL\d{3}", args.code):
        raise HarnessError(f"{args.code} is not a rule code (PTLnnn)")
    path = os.path.normpath(args.path).replace(os.sep, "/")
    source = corpus_root(args.root) / package / path
    if source.is_file() and not 1 <= args.line <= len(source.read_bytes().splitlines()):
        raise HarnessError(f"{package}/{path} has no line {args.line}")
    if not source.is_file():
        print(f"precision: warning: {source} is not in the corpus; recorded anyway", file=sys.stderr)
    record = {"package": package, "version": versions[package], "path": path, "line": args.line,
              "code": args.code, "verdict": args.verdict, "reason": reason}
    replaced = save_judgement(Path(args.judgements), record)
    print(f"{'replaced' if replaced else 'added'}: {package} {path}:{args.line} {args.code} {args.verdict}")
    return 0


def command_report(args) -> int:
    _, packages, codes, findings, sample = gather(args)
    judgements = load_judgements(Path(args.judgements))
    rows = tally(codes, findings, sample, judgements)
    if args.markdown:
        print(markdown_table(rows, packages, args.seed, args.per_rule, datetime.date.today()))
    else:
        print(text_table(rows))
        print("(findings: distinct lines per rule; repeated: extra findings on a line already reported)")
    unjudged = sum(f.key not in judgements for group in sample.values() for f in group)
    if unjudged:
        print(f"\n{unjudged} sampled findings have no verdict yet: python bench/precision.py sample")
    gone, other_version = vanished(findings, judgements, packages, codes)
    if gone:
        print(f"\nverdicts whose finding ptlint no longer reports ({len(gone)}; kept in the file):")
        for record in gone:
            print(f"  {record['verdict']:<9} {record['code']} {record['package']} {record['path']}:{record['line']}"
                  f"  {record['reason']}")
    if other_version:
        print(f"\nverdicts on other versions than the pinned ones ({len(other_version)}; kept in the file):")
        for record in other_version:
            print(f"  {record['package']} {record['version']} {record['path']}:{record['line']} {record['code']}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="precision", description=__doc__.split("\n\n")[0])
    top.add_argument("--judgements", default=str(JUDGEMENTS), help="judgement file (default bench/judgements.jsonl)")
    top.add_argument("--root", help="corpus folder (default $PTLINT_CORPUS or ~/.cache/ptlint-corpus)")
    top.add_argument("--corpus-script", help="corpus.sh to read the pinned versions from (default ../shared/tools)")
    commands = top.add_subparsers(dest="command", required=True)
    for name, help_text in (("sample", "show the sampled findings that have no verdict yet"),
                            ("report", "per-rule precision over the sample, and the vanished verdicts")):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("--corpus", choices=("all", "libraries", "training"), default="all")
        command.add_argument("--packages", help="comma list of corpus packages (instead of --corpus)")
        command.add_argument("--rules", help="comma list of codes or prefixes (default: the default-on rules)")
        command.add_argument("--seed", type=int, default=1)
        command.add_argument("--per-rule", type=int, default=10)
        if name == "sample":
            command.add_argument("--all", action="store_true", help="also show judged findings, with their verdict")
        else:
            command.add_argument("--markdown", action="store_true", help="the README's table")
    judge = commands.add_parser("judge", help="record (or replace) the verdict on one finding")
    judge.add_argument("package")
    judge.add_argument("path", help="inside the package folder, as `sample` prints it")
    judge.add_argument("line", type=int)
    judge.add_argument("code")
    judge.add_argument("verdict", choices=VERDICTS)
    judge.add_argument("reason")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "per_rule", 1) < 1:
        print("precision: --per-rule must be at least 1", file=sys.stderr)
        return 2
    handlers = {"sample": command_sample, "judge": command_judge, "report": command_report}
    try:
        return handlers[args.command](args)
    except HarnessError as error:
        print(f"precision: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
