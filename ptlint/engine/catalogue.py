"""Rule documentation pages, the catalogue listing, and the README's rule table.

The pages under docs/rules/, the README's table and the rule index (ptlint/rules/_index.py, see
ptlint.engine.registry) are generated from the rule modules; after adding or editing a rule, regenerate
them with one command (a test fails while they are stale):

    python -m ptlint.engine.catalogue --write
"""

from __future__ import annotations

import os

from ptlint.engine.registry import BUILTIN_CODES, DYNAMIC_CODES, SELECTABLE_BUILTIN, all_rules

# The fixes the engine's own codes carry (BUILTIN_CODES). PTL002's page is the docs beside its
# check (ptlint.engine.suppress), read only when a page is made: a run that only links to the
# pages (SARIF's helpUri, DOCS_URL) need not import them.
BUILTIN_FIXES = {"PTL002": "safe"}

# "Where it reports" of the codes that have no rule class (a rule's page has its own, in its
# docs): the engine's and the dynamic pass's.
CODE_WHERE = {
    "PTL001": """
- **Reports** every file that does not parse as Python, wherever it is (test code and standard
  input included), and each notebook code cell that does not parse (the notebook's other cells
  are still checked): where Python's parser stops. The rest of that file or cell is not checked.
- **Always on**: `--select`, `--ignore` and `# noqa: PTL001` do not hide it.
""",
    "PTL002": """
- **Reports** wherever a `# noqa` comment names a ptlint code that suppressed nothing on its line,
  or no ptlint rule at all, in any context (test code and notebook cells included), at the
  comment.
- **Silent** on the codes it leaves alone (below, "Which codes it looks at"): other linters'
  codes, a bare `# noqa`, codes of rules that are off for the file, the dynamic pass's PTL45x.
""",
    "PTL450": """
- **Reports** where the dynamic pass saw a break happen, in whatever code the run reached (the
  static pass's places, such as per step, once-code or test code, do not apply), at your line:
  the innermost frame of your code on the break's stack; one finding per place and kind of break.
  A break inside installed code (a library, torch) is reported at the line of yours that led
  there, its JSON `"origin"` naming the installed frame; a break with no frame of yours, at the
  factory or script line that started the run.
- **Silent** in code the run did not execute (a branch not taken, a function never called): the
  static PTL4xx rules read that code.
""",
    "PTL451": """
- **Reports** each function that Dynamo compiled again during the run, once per function and
  place with Dynamo's count: at the function's first line when it is your code, else at the line
  of yours that called into it (its JSON `"origin"` names the installed function).
- **Silent** on first compilations, and in code the run did not execute.
""",
    "PTL452": """
- **Reports** where a sync really happened while `--syncs` ran the target eagerly: at the
  expression of yours that made the host wait (`.item()`, `if t:`, `x[mask]`, ...), one finding
  per line naming each kind of sync on it, with its count per call (per run for a script). A sync
  inside installed code is reported at the line of yours that called it, its JSON `"origin"`
  naming the installed frame.
- **Silent** in code the run did not execute, in a factory's own set-up (the sanitized run calls
  it again and does not count its syncs), in threads other than the one that runs the target, and,
  on the CPU, on the tensors the device shadow keeps on the host (below).

## Which tensors are on the device
On CUDA (`--device cuda`) the real devices decide. On the CPU, where every tensor is on the host,
a device shadow stands in for the same run on a GPU machine: a sync counts only on a tensor that
would be on the device there. It follows the program's own placements, as the source spells them,
rather than the runtime value (`device = "cuda" if torch.cuda.is_available() else "cpu"` counts
as the device; a device passed in as a parameter is read where the caller chose it):
- **on the device**: a tensor your code moves or creates with `.cuda()`, `.to(d)` or `device=d`
  where `d` is not spelled as the CPU; a module's parameters and buffers after `model.to(d)` or
  `model.cuda()`; and what is computed from a device tensor (a gradient is where its parameter
  is; an in-place op never moves a tensor);
- **on the host**: tensors made without a device, and so the data pipeline's (a `Dataset`'s
  tensors, a `DataLoader`'s batches, a sampler's `randperm`), RNG state and torch.optim's step
  counters; tensors explicitly on the CPU (`"cpu"`, `torch.device("cpu")`, a name only ever
  assigned such a value, the `.device` of a host tensor, the result of `.cpu()` or `.to("cpu")`);
  and what is computed only from host tensors;
- **what it cannot know**: a placement in a branch the CPU run does not take (`if
  torch.cuda.is_available(): x = x.cuda()`; write `x.to(device)`), a default device set with
  `torch.set_default_device` or `with torch.device(...)`, a device held in a configuration object
  or a command-line flag (`args.device` counts as the device whatever its default), a tensor that
  a C extension or another process makes, and torch's own Python functions that read a value
  internally (on CUDA the sync debug mode sees those).
""",
    "PTL459": """
- **Reports** each target that failed to import, raised, exited (`sys.exit(n)`, `os._exit(n)`),
  crashed the interpreter, or ran past `--timeout`: at the line of yours where it failed or was
  stopped (the innermost frame of your code), else at the factory's definition, else at line 1
  of the target's file.
- **Silent** on a script that exits with `sys.exit(0)` or `os._exit(0)`: a normal end.
""",
}

DOCS_DIR = os.path.join("docs", "rules")
# Where SARIF's helpUri and the language server's codeDescription point: the generated page.
DOCS_URL = "https://github.com/ptlint/ptlint/blob/main/docs/rules/{code}.md"


def rule_page(code: str) -> str | None:
    rules = all_rules()
    if code in rules:
        cls = rules[code]
        fix = {None: "no", "safe": "safe", "unsafe": "unsafe", "sometimes": "safe or unsafe"}[cls.fixable]
        head = (f"# {cls.code} {cls.name}\n\n"
                f"Default: {'on' if cls.default else 'off'} · Fix: {fix}\n\n")
        return head + cls.docs.strip() + "\n"
    for table, kind in ((BUILTIN_CODES, "reported by the engine"), (DYNAMIC_CODES, "reported by the dynamic pass")):
        if code in table:
            name, what = table[code]
            docs = f"## What it does\n{what}\n"
            if code == "PTL002":
                from ptlint.engine.suppress import UNUSED_NOQA_DOCS

                docs = UNUSED_NOQA_DOCS
            elif code in DYNAMIC_CODES:
                docs += ("\nRun `ptlint explain file.py:factory` or `ptlint check --dynamic` "
                         "(needs `pip install \"ptlint[dynamic]\"`).\n")
            docs = with_section(docs, "Where it reports", CODE_WHERE[code])
            return (f"# {code} {name}\n\nDefault: on · Fix: {BUILTIN_FIXES.get(code, 'no')} · {kind}\n\n"
                    + docs.strip() + "\n")
    return None


def with_section(docs: str, title: str, text: str) -> str:
    """`docs` with `## <title>` and `text` added in the place DOC_SECTIONS gives the title: before
    the first section that comes after it there, else at the end."""
    from ptlint.engine.rule import DOC_SECTIONS

    later = DOC_SECTIONS[DOC_SECTIONS.index(title) + 1:]
    lines = docs.strip().splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("## ") and line[3:].strip() in later),
              len(lines))
    section = [f"## {title}", *text.strip().splitlines()]
    section = section + [""] if at < len(lines) else ["", *section]
    return "\n".join(lines[:at] + section + lines[at:]) + "\n"


def catalogue_rows() -> list[tuple[str, str, str, str, str]]:
    """(code, name, default, fix, summary) for every code, static rules and the built-in ones."""
    rows = []
    for code, (name, what) in BUILTIN_CODES.items():
        rows.append((code, name, "on" if code in SELECTABLE_BUILTIN else "always", BUILTIN_FIXES.get(code, "—"), what))
    for code, cls in all_rules().items():
        rows.append((code, cls.name, "on" if cls.default else "off", cls.fixable or "—", cls.summary()))
    for code, (name, what) in DYNAMIC_CODES.items():
        rows.append((code, name, "on", "—", what))
    return sorted(rows)


def catalogue_table() -> str:
    rows = catalogue_rows()
    width = max(len(row[1]) for row in rows)
    lines = [f"{'code':<7} {'name':<{width}} {'default':<7} {'fix':<9} summary"]
    for code, name, default, fix, what in rows:
        lines.append(f"{code:<7} {name:<{width}} {default:<7} {fix:<9} {what}")
    return "\n".join(lines) + "\n"


def catalogue_json() -> str:
    import json  # only `ptlint rule --all --output-format json` needs it

    return json.dumps([dict(zip(("code", "name", "default", "fix", "summary"), row)) for row in catalogue_rows()],
                      indent=2) + "\n"


def readme_table(link_prefix: str = DOCS_DIR.replace(os.sep, "/") + "/") -> str:
    """The markdown rule table (in the README, and as the index of docs/rules/), each code linked
    to its page."""
    lines = ["| code | name | default | fix | what it finds |", "|---|---|---|---|---|"]
    for code, name, default, fix, what in catalogue_rows():
        escaped = what.replace("|", "\\|")
        lines.append(f"| [{code}]({link_prefix}{code}.md) | {name} | {default} | {fix} | {escaped} |")
    return "\n".join(lines) + "\n"


GENERATED = "<!-- generated from the rule's module by `python -m ptlint.engine.catalogue --write`: edit it there -->\n"


def doc_page(code: str) -> str:
    """docs/rules/<code>.md: the rule's page as `ptlint rule CODE` prints it, with its examples."""
    page = rule_page(code)
    assert page is not None, code
    cls = all_rules().get(code)
    extra = ""
    if cls is not None and cls.fix_examples:
        extra += "\n## Fix examples\n"
        for example in cls.fix_examples:
            label = "unsafe fix" if example.unsafe else "safe fix"
            extra += (f"\nBefore ({label}):\n\n```python\n{example.before.strip()}\n```\n\n"
                      f"After:\n\n```python\n{example.after.strip()}\n```\n")
            if example.inputs:  # where the two ran side by side (tests/rules/test_fix_examples_run.py)
                extra += f"\nRun side by side in: {'; '.join(i.name for i in example.inputs)}.\n"
    return GENERATED + page + extra + "\n[All rules](README.md)\n"


def where_legend() -> str:
    """What the words of each page's "Where it reports" mean (the execution model of
    ptlint.semantics.where, and the families that stay silent in test code)."""
    families: dict[str, set[bool]] = {}
    for code, cls in all_rules().items():
        families.setdefault(f"{code[:4]}xx", set()).add(cls.reports_in_tests)
    silent = ", ".join(sorted(family for family, reports in families.items() if reports == {False}))
    return f"""
## Where rules report

Each page's "Where it reports" says where code must run for the rule to report it:
- **per step**: code that runs again and again — the body of a loop over data, `forward`, a
  framework step hook (`training_step`, `*_batch_end`), a function that calls `.backward()`,
  and the helpers of the same file that those call;
- **once per epoch** or every N steps: in a loop, but visibly less often than its steps (after
  an inner batch loop, under `if step % 100 == 0`);
- **once-code**: the module's top level outside loops, `if __name__ == "__main__":`, `__init__`
  and other set-up, functions that only once-code calls (`main()`), and loops there over
  settings or a model's parts (an `__init__` runs where its class is called: a helper object
  built in every forward builds what its `__init__` builds every step);
- **a function whose callers the file does not show**: it runs as often as its callers elsewhere;
- **error paths**: an `except` body, a branch that ends in `raise` or only warns or logs;
- **test code**: files matching `test-code` in `[tool.ptlint]` (test suites by default);
  {silent} rules are silent there, the numerics rules (PTL3xx) report;
- **compiled code**: code that `torch.compile` traces, as the file shows it (see PTL401).
"""


def docs_index() -> str:
    return GENERATED + "# ptlint rules\n\n" + readme_table(link_prefix="") + \
        "\n`ptlint rule CODE` prints a page in the terminal; `ptlint rule --all` lists them.\n" + where_legend()


def generated_docs(root: str) -> dict[str, str]:
    """Every generated file under `root` (the repository): path -> content."""
    folder = os.path.join(root, DOCS_DIR)
    codes = sorted(set(all_rules()) | set(BUILTIN_CODES) | set(DYNAMIC_CODES))
    files = {os.path.join(folder, f"{code}.md"): doc_page(code) for code in codes}
    files[os.path.join(folder, "README.md")] = docs_index()
    return files


def rule_index_module() -> str:
    """ptlint/rules/_index.py: what registry.rule_index reads instead of importing every rule."""
    from ptlint.engine.registry import index_from_classes, rules_fingerprint

    lines = ['"""Generated by `python -m ptlint.engine.catalogue --write` from the rule modules: do not edit.',
             "",
             "code: (name, default, module, triggers, reads_imports); FINGERPRINT is the hash of the modules",
             "it describes",
             '(registry.rules_fingerprint): when they change and this file does not, it is ignored."""',
             "",
             f'FINGERPRINT = "{rules_fingerprint()}"',
             "RULES = {"]
    for code, info in index_from_classes().items():
        lines.append(f"    {code!r}: ({info.name!r}, {info.default!r}, {info.module!r}, {info.triggers!r}, "
                     f"{info.reads_imports!r}),")
    return "\n".join(lines) + "\n}\n"


def stale_docs(root: str) -> tuple[dict[str, str], list[str]]:
    """(files to write: path -> content, pages of codes that no longer exist) for the docs, the
    README's table and the rule index (when `root` holds ptlint's own rules)."""
    wanted = generated_docs(root)
    readme = os.path.join(root, "README.md")
    wanted[readme] = _readme_with_table(readme)
    rules_folder = os.path.join(root, "ptlint", "rules")
    if os.path.isdir(rules_folder):
        wanted[os.path.join(rules_folder, "_index.py")] = rule_index_module()
    to_write = {}
    for path, content in wanted.items():
        try:
            with open(path, encoding="utf-8") as handle:
                current = handle.read()
        except OSError:
            current = None
        if current != content:
            to_write[path] = content
    folder = os.path.join(root, DOCS_DIR)
    existing = os.listdir(folder) if os.path.isdir(folder) else []
    orphans = sorted(os.path.join(folder, name) for name in existing
                     if name.endswith(".md") and os.path.join(folder, name) not in wanted)
    return to_write, orphans


def write_docs(root: str) -> list[str]:
    """Regenerate the pages and the README's table; the paths that changed (or were removed)."""
    to_write, orphans = stale_docs(root)
    os.makedirs(os.path.join(root, DOCS_DIR), exist_ok=True)
    for path, content in to_write.items():
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
    for path in orphans:
        os.remove(path)
    return sorted(to_write) + orphans


README_START = "<!-- rule-table:start (generated by `python -m ptlint.engine.catalogue --write`) -->"
README_END = "<!-- rule-table:end -->"


def _readme_with_table(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    start = text.index(README_START) + len(README_START)
    end = text.index(README_END)
    return text[:start] + "\n" + readme_table() + text[end:]


def main(argv: list[str] | None = None) -> int:
    """`python -m ptlint.engine.catalogue --write` regenerates; `--check` exits 1 while something is stale."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ptlint.engine.catalogue", description=main.__doc__)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        help="the repository (default: the one this ptlint lives in)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true",
                       help="regenerate docs/rules/, the README's table and ptlint/rules/_index.py")
    group.add_argument("--check", action="store_true", help="list what is stale; exit 1 if anything is")
    args = parser.parse_args(argv)
    if args.write:
        changed = write_docs(args.root)
        print("\n".join(f"updated {os.path.relpath(p, args.root)}" for p in changed) or "up to date")
        return 0
    to_write, orphans = stale_docs(args.root)
    for path in sorted(to_write) + orphans:
        print(f"stale: {os.path.relpath(path, args.root)}")
    return 1 if to_write or orphans else 0


if __name__ == "__main__":
    raise SystemExit(main())
