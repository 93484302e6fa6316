"""Blind precision and recall on code the rules were never tuned on.

    python bench/blind.py export NAME=FOLDER ... --out DIR      findings to judge, with their evidence
    python bench/blind.py record VERDICTS.csv --measurement M   keep a judge's verdicts, as given
    python bench/blind.py report [--set SET] [--measurement M] [--recall CSV ...] [--markdown]

Every source used for a measurement is listed in bench/sources.jsonl (repository and commit, or
package and version, with the set it belongs to): the tuning corpora (`tuning`), sources used to
develop a change (`dev-...`) and sources held out for a measurement (`heldout-...`). A claim of
precision comes only from a held-out set, judged blind: the judge gets ../shared/JUDGE.md,
../shared/JUDGING.md and the files `export` writes (each finding's code, message and evidence
chain), never a rule's documentation or the author's reasoning. `record` stores the verdicts
exactly as the judge returned them (bench/blind_verdicts.jsonl).

`export` runs the default rules from inside each folder (paths relative to the repository root)
and writes, per repository, DIR/NAME.md (every finding with the code around it and the chain
that places it) and DIR/NAME.csv (one row per finding to fill in: verdict true/false/debatable
and a one-line reason), plus DIR/NAME.findings.json (the raw findings, for recall).

Recall: a reviewer who never saw ptlint's output lists, per repository, the lines of per-step code
a demanding performance reviewer would flag (`repo,path,line,category,severity,why`). A listed
line counts as reported when some finding of that repository starts on it, or, where its `why`
names the range of lines the problem spans ("lines 62-66", holding the listed line), on a line
of that range.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "bench" / "sources.jsonl"
VERDICTS_FILE = REPO / "bench" / "blind_verdicts.jsonl"
VERDICTS = ("true", "false", "debatable")
WINDOW = 7


class BlindError(Exception):
    """A problem the user must fix: one line, exit 2."""


def load_sources(path: Path | None = None) -> dict[str, dict]:
    """name -> source row; `name` is the short name used in exports and verdicts."""
    path = path or SOURCES
    out = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if row["name"] in out:
                raise BlindError(f"{path}:{number}: {row['name']} is listed twice")
            out[row["name"]] = row
    return out


def findings_of(folder: Path) -> list[dict]:
    """The default rules' findings in `folder`, run from inside it (not the PTL0xx reports of a
    file that could not be read or parsed)."""
    result = subprocess.run([sys.executable, "-m", "ptlint", "check", "--no-cache", "--output-format", "json",
                             "--exit-zero", "."], cwd=folder, capture_output=True, text=True)
    if result.returncode != 0:
        raise BlindError(f"ptlint failed in {folder}: {(result.stderr.strip().splitlines() or ['?'])[-1]}")
    # PTL0xx say a file (or a notebook cell) could not be read or parsed: not a rule's finding
    findings = [f for f in json.loads(result.stdout) if not f["code"].startswith("PTL0")]
    for finding in findings:
        finding["path"] = os.path.normpath(finding["path"]).replace(os.sep, "/")
    findings.sort(key=lambda f: (f["path"], f["line"], f["column"], f["code"]))
    return findings


def headers_above(tree: ast.AST, line: int) -> list[int]:
    """First lines of the blocks around `line` (def, class, loops, branches)."""
    out, node = [], tree
    while True:
        inner = [c for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.excepthandler))
                 and c.lineno <= line <= (c.end_lineno or c.lineno)]
        if not inner:
            return out
        node = inner[0]
        if isinstance(getattr(node, "body", None), list):
            out.append(node.lineno)


def excerpt(folder: Path, path: str, line: int, window: int = WINDOW, cell: int | None = None) -> str:
    """The lines around `line` of the file, or of a notebook's `cell` (where a notebook finding's
    line counts)."""
    try:
        text = (folder / path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"    (cannot read: {error.strerror})"
    if cell is not None:
        text = cell_text(text, cell)
    lines = text.splitlines()
    first, last = max(1, line - window), min(len(lines), line + window)
    try:
        headers = [h for h in headers_above(ast.parse(text), line) if h < first]
    except SyntaxError:
        headers = []
    out = [f"{n:>6}  {lines[n - 1]}" for n in headers] + (["   ..."] if headers else [])
    out += [f"{n:>6}{'>>' if n == line else '  '}{lines[n - 1]}" for n in range(first, last + 1)]
    return "\n".join(out)


def chain_text(finding: dict, folder: Path | None = None) -> str:
    """Where the finding runs and the chain that places it, outermost first, each link with its
    source line (read from `folder`) so the judge can follow it without opening the files."""
    context = finding.get("context")
    if not isinstance(context, dict):
        return f"runs: {context}" if context else "runs: (no evidence given)"
    out = [f"runs: {context.get('where')}" + (", because:" if context.get("via") else "")]
    cells = finding.get("via_cells") or []
    for index, step in enumerate(context.get("via", [])):
        cell = cells[index] if index < len(cells) else None
        if cell is not None:  # a link in a notebook: its line is in that cell
            code = notebook_line(folder, step["path"], cell, step["line"]) if folder else ""
            where = f"{step['path']}:cell {cell}:{step['line']}"
        else:
            code = source_line(folder, step["path"], step["line"]) if folder else ""
            where = f"{step['path']}:{step['line']}"
        out.append(f"- `{where}` {step['why']}" + (f": `{code}`" if code else ""))
    return "\n".join(out)


def cell_text(notebook: str, cell: int) -> str:
    """The source of a notebook's cell (1-based), as the judge reads it in Jupyter ("" when there is none)."""
    try:
        source = json.loads(notebook)["cells"][cell - 1]["source"]
        return "".join(source) if isinstance(source, list) else source
    except (ValueError, KeyError, IndexError, TypeError):
        return ""


def notebook_line(folder: Path, path: str, cell: int, line: int) -> str:
    """A line of a notebook's cell (both 1-based)."""
    try:
        return cell_text((folder / path).read_text(encoding="utf-8", errors="replace"), cell).splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return ""


def source_line(folder: Path, path: str, line: int) -> str:
    try:
        return (folder / path).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return ""


def command_export(args) -> int:
    sources = load_sources()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for item in args.repos:
        name, _, folder = item.partition("=")
        if name not in sources:
            raise BlindError(f"{name} is not in {SOURCES}: list it (with its commit) before measuring")
        folder_path = Path(folder)
        findings = findings_of(folder_path)
        (out / f"{name}.findings.json").write_text(json.dumps(findings, indent=1))
        source = sources[name]
        lines = [f"# {name} ({source['source']} at {source.get('commit') or source.get('version')})", "",
                 f"Folder: `{folder_path.resolve()}`. {len(findings)} findings.", ""]
        with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "repo", "path", "line", "code", "verdict", "reason"])
            for number, finding in enumerate(findings, 1):
                ident = f"{name}-{number}"
                writer.writerow([ident, name, finding["path"], finding["line"], finding["code"], "", ""])
                cell = finding.get("cell")
                where = f"{finding['path']}:" + (f"cell {cell}:" if cell else "") + f"{finding['line']}"
                lines += [f"## {ident}: `{where}` {finding['code']}", "",
                          finding["message"], "", chain_text(finding, folder_path), "", "```",
                          excerpt(folder_path, finding["path"], finding["line"], cell=cell), "```", ""]
        (out / f"{name}.md").write_text("\n".join(lines), encoding="utf-8")
        print(f"{name}: {len(findings)} findings -> {out / (name + '.md')}")
    return 0


def read_verdicts(path: Path | None = None) -> list[dict]:
    path = path or VERDICTS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def command_record(args) -> int:
    sources = load_sources()
    # a line reported twice by one rule is two findings (JUDGING.md: duplicates count against
    # precision): a key is recorded as often as the file holds it, and recording again adds none
    known = Counter((v.get("measurement"), v["repo"], v["path"], v["line"], v["code"]) for v in read_verdicts())
    seen: Counter = Counter()
    added = 0
    with open(args.csv, newline="", encoding="utf-8") as handle, open(VERDICTS_FILE, "a", encoding="utf-8") as out:
        for row in csv.DictReader(handle):
            verdict = row["verdict"].strip().lower()
            if verdict not in VERDICTS:
                raise BlindError(f"{args.csv}: {row['id']}: verdict must be one of {', '.join(VERDICTS)}")
            repo = row["repo"]
            if repo not in sources:
                raise BlindError(f"{repo} is not in {SOURCES}")
            key = (args.measurement, repo, row["path"], int(row["line"]), row["code"])
            seen[key] += 1
            if seen[key] <= known[key]:
                continue
            record = {"repo": repo, "commit": sources[repo].get("commit") or sources[repo].get("version"),
                      "set": sources[repo]["set"], "path": row["path"], "line": int(row["line"]),
                      "code": row["code"], "verdict": verdict, "reason": row["reason"].strip(),
                      "judge": args.judge, "measurement": args.measurement}
            out.write(json.dumps(record) + "\n")
            added += 1
    print(f"recorded {added} verdict(s)")
    return 0


def precision(true: int, false: int) -> str:
    return f"{100 * true / (true + false):.0f}%" if true + false else "-"


def command_report(args) -> int:
    verdicts = [v for v in read_verdicts() if (not args.set or v["set"] == args.set)
                and (not args.measurement or v.get("measurement") == args.measurement)]
    if any(v["set"] == "tuning" for v in verdicts):
        raise BlindError("a tuning-corpus source has blind verdicts: those are not claims")
    by_rule: dict[str, Counter] = defaultdict(Counter)
    for v in verdicts:
        by_rule[v["code"]][v["verdict"]] += 1
    total = Counter()
    rows = []
    for code in sorted(by_rule):
        counts = by_rule[code]
        total.update(counts)
        rows.append((code, counts["true"], counts["false"], counts["debatable"], precision(counts["true"], counts["false"])))
    rows.append(("all", total["true"], total["false"], total["debatable"], precision(total["true"], total["false"])))
    repos = sorted({v["repo"] for v in verdicts})
    if args.markdown:
        print(f"Sources: {', '.join(repos)}\n")
        print("| rule | true | false | debatable | precision |\n|---|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(str(x) for x in row) + " |")
    else:
        print(f"sources: {', '.join(repos)}")
        for row in rows:
            print(f"{row[0]:<8} {row[1]:>4} true {row[2]:>4} false {row[3]:>4} debatable  {row[4]}")
    for recall_csv in args.recall or []:
        report_recall(Path(recall_csv), Path(args.findings))
    return 0


def report_recall(recall_csv: Path, findings_dir: Path) -> None:
    """Share of the reviewer's listed lines that some finding starts on, by severity."""
    with open(recall_csv, newline="", encoding="utf-8") as handle:
        listed = list(csv.DictReader(handle))
    reported: dict[str, set[tuple[str, int]]] = {}
    for repo in {row["repo"] for row in listed}:
        path = findings_dir / f"{repo}.findings.json"
        if not path.exists():
            raise BlindError(f"no findings exported for {repo} in {findings_dir}")
        reported[repo] = {(f["path"], line) for f in json.loads(path.read_text()) for line in finding_lines(f)}
    for severity in ("major", "minor"):
        rows = [r for r in listed if r["severity"] == severity]
        hit = [r for r in rows if any((r["path"], line) in reported[r["repo"]] for line in listed_lines(r))]
        share = f"{100 * len(hit) / len(rows):.0f}%" if rows else "-"
        print(f"recall ({recall_csv.name}, {severity}): {len(hit)} of {len(rows)} listed lines reported ({share})")


NAMED_LINE = re.compile(r"\(line (\d+)\)")


def finding_lines(finding: dict) -> list[int]:
    """The lines a finding points at: its own, and one its message names as where the problem
    starts ("`torch.arange(...)` is built on the CPU (line 42) and copied here")."""
    return [finding["line"], *(int(n) for n in NAMED_LINE.findall(finding.get("message", "")))]


LINE_RANGE = re.compile(r"\blines? (\d+)\s*[-\u2013]\s*(\d+)")


def listed_lines(row: dict) -> list[int]:
    """The lines a listed problem covers: its line, and a range its `why` names for the same code
    ("softmax ... `@ v` (lines 62-66)": a finding on the product's line reports it)."""
    line = int(row["line"])
    for match in LINE_RANGE.finditer(row.get("why", "")):
        first, last = int(match.group(1)), int(match.group(2))
        if first <= line <= last and last - first <= 20:
            return list(range(first, last + 1))
    return [line]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="blind.py", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="write the findings to judge")
    export.add_argument("repos", nargs="+", metavar="NAME=FOLDER")
    export.add_argument("--out", required=True)
    record = commands.add_parser("record", help="keep a judge's verdicts")
    record.add_argument("csv")
    record.add_argument("--judge", default="blind-helper", help="who judged (kept with each verdict)")
    record.add_argument("--measurement", required=True,
                        help="which measurement the verdicts belong to (e.g. the commit measured): the same "
                             "line judged again in another measurement is a verdict of its own")
    report = commands.add_parser("report", help="precision (and recall) from the kept verdicts")
    report.add_argument("--set", help="only verdicts of this set of sources")
    report.add_argument("--measurement", help="only verdicts of this measurement")
    report.add_argument("--recall", nargs="*", help="reviewers' lists (repo,path,line,category,severity,why)")
    report.add_argument("--findings", default=".", help="the folder `export` wrote (for recall)")
    report.add_argument("--markdown", action="store_true")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return {"export": command_export, "record": command_record, "report": command_report}[args.command](args)
    except BlindError as error:
        print(f"blind: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
