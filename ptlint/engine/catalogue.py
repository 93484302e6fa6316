"""Rule documentation pages, the catalogue listing, and the README's rule table.

The pages under docs/rules/, the README's table and the rule index (ptlint/rules/_index.py, see
ptlint.engine.registry) are generated from the rule modules; after adding or editing a rule, regenerate
them with one command (a test fails while they are stale):

    python -m ptlint.engine.catalogue --write
"""

from __future__ import annotations

import json
import os

from ptlint.engine.registry import BUILTIN_CODES, DYNAMIC_CODES, SELECTABLE_BUILTIN, all_rules
from ptlint.engine.suppress import UNUSED_NOQA, UNUSED_NOQA_DOCS

# The pages of the engine's own codes that say more than their one line (BUILTIN_CODES), and the
# fixes they carry.
BUILTIN_DOCS = {UNUSED_NOQA: UNUSED_NOQA_DOCS}
BUILTIN_FIXES = {UNUSED_NOQA: "safe"}

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
    if code in BUILTIN_DOCS:
        name, _ = BUILTIN_CODES[code]
        return (f"# {code} {name}\n\nDefault: on · Fix: {BUILTIN_FIXES.get(code, 'no')} · reported by the engine\n\n"
                + BUILTIN_DOCS[code].strip() + "\n")
    for table, kind in ((BUILTIN_CODES, "reported by the engine"), (DYNAMIC_CODES, "reported by the dynamic pass")):
        if code in table:
            name, what = table[code]
            extra = ""
            if code in DYNAMIC_CODES:
                extra = ("\nRun `ptlint explain file.py:factory` or `ptlint check --dynamic` "
                         "(needs `pip install \"ptlint[dynamic]\"`).\n")
            return f"# {code} {name}\n\nDefault: on · Fix: no · {kind}\n\n## What it does\n{what}\n{extra}"
    return None


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
  settings or a model's parts;
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
