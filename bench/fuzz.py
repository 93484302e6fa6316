"""Fuzzing the fixes at scale: layout mutations of the rules' fix examples and of corpus files, each
fixed with every rule (`--unsafe-fixes`), and every result verified.

    python bench/fuzz.py                          # 5,000 mutated inputs: examples and corpus files
    python bench/fuzz.py --count 500 --corpus ~/.cache/ptlint-corpus/timm --seed 3

Each input is a fix example (every rule's, with its inputs when it has them) or a corpus file,
through one to three mutations of tests/layout_mutations.py (a keyword glued to a parenthesised
operand, extra parentheses, a parameter shadowing a module, loops over starred tuples, renamed
torch alias, nesting, comments, line breaks, odd spacing, tabs), kept when it still parses. The
fixer (ptlint.run.fix.fix_source) runs on it; then, independently of it:

- unparsable: the fixed text does not parse;
- structural failures written: a pass whose edits, checked again from scratch (the structural
  check on the pass's text, without the fixer's tree), fail, or do not give the next text;
- tracebacks: any exception out of the fixer;
- disagreements: a fix example mutated in a way that keeps it runnable, fixed, that behaves
  otherwise than its original in the example's first input (run side by side, torch on the CPU).

Also counted: fixes applied, and fixes the structural check dropped (by reason): what it caught.
Exit status 1 when an unparsable result, a structural failure written, a traceback or a
disagreement is found.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fix_runs import run, side_by_side  # noqa: E402
from layout_mutations import LAYOUT_ONLY, MUTATIONS, nest, parses  # noqa: E402

from ptlint.engine.edits import apply_edits  # noqa: E402
from ptlint.engine.registry import all_rules  # noqa: E402
from ptlint.engine.source import SourceFile  # noqa: E402
from ptlint.engine.structure import FixRejected, checked_text  # noqa: E402
from ptlint.run.fix import fix_source  # noqa: E402

CODES = tuple(all_rules())


def corpus_files(folder: Path, rng: random.Random, limit: int) -> list[Path]:
    files = sorted(p for p in folder.rglob("*.py") if p.is_file() and p.stat().st_size < 200_000)
    rng.shuffle(files)
    return files[:limit]


def mutate(text: str, rng: random.Random, allowed) -> tuple[str, list[str]]:
    applied = []
    for mutation in rng.sample(allowed, k=rng.randint(1, 3)):
        candidate = mutation(text, rng)
        if candidate != text and parses(candidate):
            text = candidate
            applied.append(mutation.__name__)
    return text, applied


def verify_passes(result) -> str | None:
    """None when every pass of the fixer, checked again from scratch, holds; else what fails."""
    expected = [text for text, _ in result.passes[1:]] + [result.fixed]
    for (text, edits), following in zip(result.passes, expected):
        try:
            fixed = checked_text(SourceFile("fuzz.py", text), edits)
        except FixRejected as exc:
            return f"a written pass fails the structural check: {exc}"
        if fixed != following or fixed != apply_edits(SourceFile("fuzz.py", text), edits):
            return "a written pass does not give the text that followed it"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--corpus", default=os.environ.get("PTLINT_CORPUS", os.path.expanduser("~/.cache/ptlint-corpus")))
    parser.add_argument("--corpus-share", type=float, default=0.3, help="part of the inputs made from corpus files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    examples = [(code, example) for code, rule in all_rules().items() for example in rule.fix_examples
                if example.before != example.after]
    corpus = Path(args.corpus)
    files = corpus_files(corpus, rng, 2000) if corpus.is_dir() else []
    # what keeps an example runnable and its meaning: no nesting, no comments (a comment in the code a
    # fix rewrites rightly stops that fix, and the example's inputs expect every fix made)
    runnable = [m for m in LAYOUT_ONLY if m is not nest]

    counts = collections.Counter()
    dropped: collections.Counter = collections.Counter()
    problems: list[str] = []
    start = time.monotonic()
    while counts["inputs"] < args.count:
        kind = "file" if files and rng.random() < args.corpus_share else "example"
        item = rng.choice(files) if kind == "file" else rng.choice(examples)
        if kind == "example":
            code, example = item
            original = example.before
            keep_runnable = bool(example.inputs) and example.inputs[0].device == "cpu" and rng.random() < 0.5
            text, applied = mutate(original, rng, runnable if keep_runnable else MUTATIONS)
            label = f"{code} example"
        else:
            try:
                original = item.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if not parses(original):
                continue
            text, applied = mutate(original, rng, MUTATIONS)
            label = str(item.relative_to(corpus))
        if not applied:
            continue
        counts["inputs"] += 1
        counts[kind + " inputs"] += 1
        try:
            result = fix_source(SourceFile("fuzz.py", text), CODES, unsafe=True)
        except Exception:  # noqa: BLE001 - counted and shown
            counts["tracebacks"] += 1
            problems.append(f"traceback on {label} ({', '.join(applied)}):\n{traceback.format_exc()}")
            continue
        counts["fixes applied"] += len(result.applied)
        counts["inputs changed"] += result.changed
        for message in result.messages:
            if "dropped" in message:
                reason = re.sub(r"`[^`]*`|line \d+|\d+", "_", message.split(": ", 2)[-1])
                dropped[reason] += 1
        if not parses(result.fixed):
            counts["unparsable"] += 1
            problems.append(f"unparsable result for {label} ({', '.join(applied)})")
        failure = verify_passes(result)
        if failure:
            counts["structural failures written"] += 1
            problems.append(f"{failure}: {label} ({', '.join(applied)})")
        if kind == "example" and keep_runnable and result.changed and all(m != "nest" for m in applied):
            fix_input = example.inputs[0]
            if run(text, fix_input.code).error != run(example.before, fix_input.code).error:
                counts["mutations that broke the example"] += 1  # (the mutated original no longer runs)
                continue
            counts["run side by side"] += 1
            try:
                agree, outcomes = side_by_side(text, result.fixed, example.inputs[0])
            except Exception as exc:  # noqa: BLE001 - an input claim that failed on the mutated code
                agree, outcomes = False, f"{type(exc).__name__}: {exc}"
            if not agree:
                counts["disagreements"] += 1
                problems.append(f"disagreement: {label} ({', '.join(applied)}): {outcomes}")

    elapsed = time.monotonic() - start
    print(f"mutated inputs        {counts['inputs']} ({counts['example inputs']} from fix examples, "
          f"{counts['file inputs']} from corpus files), {elapsed:.0f} s")
    print(f"inputs changed        {counts['inputs changed']} ({counts['fixes applied']} fixes applied)")
    print(f"run side by side      {counts['run side by side']} "
          f"({counts['mutations that broke the example']} mutated originals that no longer ran left out)")
    print(f"unparsable results    {counts['unparsable']}")
    print(f"structural failures written  {counts['structural failures written']}")
    print(f"tracebacks            {counts['tracebacks']}")
    print(f"disagreements         {counts['disagreements']}")
    print(f"fixes the structural check dropped: {sum(dropped.values())}")
    for reason, number in dropped.most_common(12):
        print(f"  {number:5d}  {reason}")
    for problem in problems[:20]:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
