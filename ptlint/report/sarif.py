"""CI output: SARIF 2.1.0 (GitHub code scanning) and GitHub Actions workflow commands."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable
from urllib.parse import quote

from ptlint import __version__
from ptlint.engine.catalogue import DOCS_URL
from ptlint.engine.finding import Finding, applicable
from ptlint.engine.registry import BUILTIN_CODES, CODE_HELP, DYNAMIC_CODES, all_rules, help_for
from ptlint.engine.rule import doc_section
from ptlint.report.evidence import via_chain, via_label, via_links, via_location
from ptlint.report.sources import Sources

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/ptlint/ptlint"
SRCROOT = "%SRCROOT%"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note", "note": "note"}
_GITHUB_COMMAND = {"error": "error", "warning": "warning", "info": "notice", "note": "notice"}


def source_root(start: str | None = None) -> str:
    """The git work tree holding `start` (default: the current folder), else that folder.

    Code scanning and annotations want paths relative to the repository root, also when ptlint
    runs in a subfolder."""
    here = os.path.abspath(start or os.getcwd())
    directory = here
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return here
        directory = parent


def repo_relative(path: str, root: str) -> str | None:
    """`path` relative to `root` with forward slashes, or None when it lies outside `root`."""
    try:
        relative = os.path.relpath(os.path.abspath(path), root)
    except ValueError:  # another drive on Windows
        return None
    if relative == ".." or relative.startswith(".." + os.sep):
        return None
    return relative.replace(os.sep, "/")


# -- SARIF -------------------------------------------------------------------------------------

def _rule_descriptors() -> list[dict[str, Any]]:
    """Every code ptlint can report: the engine's, the static rules', the dynamic pass's."""
    descriptors = []
    for code, (name, what) in BUILTIN_CODES.items():
        descriptors.append(_descriptor(code, name, what, what, f"## What it does\n{what}\n", CODE_HELP[code],
                                       "error" if code == "PTL001" else "warning", True))
    for code, cls in all_rules().items():
        full = " ".join(doc_section(cls.docs, "What it does").split()) or cls.summary()
        descriptors.append(_descriptor(code, cls.name, cls.summary(), full, cls.docs.strip() + "\n", cls.help,
                                       cls.severity, cls.default))
    for code, (name, what) in DYNAMIC_CODES.items():
        descriptors.append(_descriptor(code, name, what, what, f"## What it does\n{what}\n", CODE_HELP[code],
                                       "warning", True))
    return sorted(descriptors, key=lambda d: d["id"])


def _descriptor(code: str, name: str, short: str, full: str, markdown: str, help_text: str, severity: str,
                enabled: bool) -> dict[str, Any]:
    """A rule for SARIF viewers; its `help` (what code scanning shows under an alert) opens with
    what to change, then the rule's page."""
    markdown = f"**help:** {help_text}\n\n{markdown}"
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": _plain(markdown), "markdown": markdown},
        "helpUri": DOCS_URL.format(code=code),
        "defaultConfiguration": {"level": _SARIF_LEVEL.get(severity, "warning"), "enabled": enabled},
        "properties": {"tags": ["pytorch"]},
    }


def _plain(markdown: str) -> str:
    """The docs without markdown headings and code fences, for viewers that show plain text."""
    out = []
    for line in markdown.splitlines():
        if line.startswith("```"):
            continue
        out.append(line[3:] if line.startswith("## ") else line)
    return "\n".join(out).strip() + "\n"


def _artifact_location(path: str, root: str) -> dict[str, Any]:
    relative = repo_relative(path, root)
    if relative is None:  # outside the repository: an absolute file URI
        absolute = os.path.abspath(path).replace(os.sep, "/")
        return {"uri": "file://" + quote(absolute if absolute.startswith("/") else "/" + absolute)}
    return {"uri": quote(relative), "uriBaseId": SRCROOT}


def _region(finding: Finding, sources) -> tuple[int, int, int, int]:
    """Where the finding lies in the file: for a notebook, in the .ipynb text itself (where code
    scanning and pull-request annotations show it), the cell's source string at that line."""
    cell = finding.cell
    if cell is not None:

        notebook = (sources or Sources()).notebook(finding.path)
        if notebook is not None and notebook.cell(cell) is not None:
            line, column = notebook.raw_position(cell, finding.line, finding.column)
            end_line, end_column = notebook.raw_position(cell, finding.end_line, finding.end_column)
            return line, column, end_line, end_column
    return finding.line, finding.column, finding.end_line, finding.end_column


def _related_locations(finding: Finding, root: str, sources) -> list[dict[str, Any]]:
    """The evidence chain as SARIF related locations, ids 0, 1, ... in its order; a link in a
    notebook points into the .ipynb text as the finding's own location does."""
    sources = sources or Sources()
    out = []
    for number, link in enumerate(via_links(finding)):
        region: dict[str, Any] = {"startLine": link.line}
        location: dict[str, Any] = {"id": number, "physicalLocation": {
            "artifactLocation": _artifact_location(link.path, root), "region": region},
            "message": {"text": link.why}}
        if link.cell is not None:
            notebook = sources.notebook(link.path)
            if notebook is not None and notebook.cell(link.cell) is not None:
                region["startLine"], region["startColumn"] = notebook.raw_position(link.cell, link.line, 1)
            location["properties"] = {"cell": link.cell, "cellLine": link.line}
        out.append(location)
    return out


def _embedded_chain(finding: Finding, root: str, escape: Callable[[str], str]) -> str:
    """`[train.py:88](0) for batch in loader -> [train.py:90](1) calls train_step`: each link's
    location an embedded link to its related location (SARIF 3.11.6), its why escaped by `escape`."""
    return " -> ".join(f"[{_escape_link_text(via_location(link, _shown_path(link.path, root)))}]({number}) "
                       f"{escape(link.why)}" for number, link in enumerate(via_links(finding)))


def _escape_link_text(text: str) -> str:
    """The text of an embedded link: `\\`, `[` and `]` escaped (SARIF 3.11.6)."""
    return re.sub(r"([\\\[\]])", r"\\\1", text)


def _escape_markdown(text: str) -> str:
    """Plain text, on one line, that markdown shows as it is."""
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", " ".join(text.split()))


def _shown_path(path: str, root: str) -> str:
    """A path as annotations and code scanning show it: relative to the repository root."""
    return repo_relative(path, root) or path.replace(os.sep, "/")


def format_sarif(findings: list[Finding], unsafe_fixes: bool = False, style=None, sources=None) -> str:
    root = source_root()
    rules = _rule_descriptors()
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    results = []
    for finding in findings:
        line, column, end_line, end_column = _region(finding, sources)
        help_text = help_for(finding)
        # viewers show the text; those that render markdown (messages are markdown already: code
        # in backticks) get what to change below it. The evidence chain follows the message, its
        # links to the related locations (code scanning shows those only when linked from it).
        text, markdown = finding.message, f"{finding.message}\n\n**help:** {help_text}"
        if finding.via:
            label = via_label(finding)
            text += f"\n\n{label}: {_embedded_chain(finding, root, lambda why: ' '.join(why.split()))}"
            markdown = (f"{finding.message}\n\n**{label}:** {_embedded_chain(finding, root, _escape_markdown)}"
                        f"\n\n**help:** {help_text}")
        result: dict[str, Any] = {
            "ruleId": finding.code,
            "level": _SARIF_LEVEL.get(finding.severity, "warning"),
            "message": {"text": text, "markdown": markdown},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": _artifact_location(finding.path, root),
                    "region": {
                        "startLine": line,
                        "startColumn": column,
                        "endLine": end_line,
                        "endColumn": end_column,
                    },
                },
            }],
        }
        if finding.via:
            result["relatedLocations"] = _related_locations(finding, root, sources)
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        properties: dict[str, Any] = {"name": finding.name, "source": finding.source, "help": help_text}
        if finding.cell is not None:  # the position in the notebook's own terms
            properties.update(cell=finding.cell, cellLine=finding.line, cellColumn=finding.column)
        if finding.fix:
            properties["fix"] = {"applicability": finding.fix.applicability, "message": finding.fix.message,
                                 "applied_by_default": applicable(finding, unsafe_fixes)}
        result["properties"] = properties
        results.append(result)
    root_uri = "file://" + quote(root.replace(os.sep, "/").rstrip("/") + "/")
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "ptlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": root_uri}},
            # Finding columns count characters; SARIF viewers assume UTF-16 unless told.
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(document, indent=2) + "\n"


# -- GitHub workflow commands ------------------------------------------------------------------

def escape_data(text: str) -> str:
    """The escaping GitHub's runner applies to a workflow command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """The escaping of a property value (file=, title=): also `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(findings: list[Finding], unsafe_fixes: bool = False, style=None, sources=None) -> str:
    """`::warning file=…,line=…,col=…,endLine=…,endColumn=…,title=PTL101 sync-in-loop::message`.
    In a notebook the position is in the .ipynb file and the message starts `cell N:line:column: `.
    A finding's evidence chain ends the message: `…; runs per step: src/train.py:88 for batch in
    loader -> src/train.py:90 calls train_step` (paths as in `file=`)."""
    root = source_root()
    lines = []
    for finding in findings:
        path = _shown_path(finding.path, root)
        line, column, end_line, end_column = _region(finding, sources)
        properties = [("file", path), ("line", str(line)), ("col", str(column)), ("endLine", str(end_line))]
        if end_line == line:  # GitHub reads endColumn on single-line spans only
            properties.append(("endColumn", str(end_column)))
        properties.append(("title", f"{finding.code} {finding.name}"))
        command = _GITHUB_COMMAND.get(finding.severity, "warning")
        joined = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
        cell = finding.cell
        message = f"cell {cell}:{finding.line}:{finding.column}: {finding.message}" if cell else finding.message
        if finding.via:
            message += f"; {via_label(finding)}: {via_chain(finding, lambda link_path: _shown_path(link_path, root))}"
        lines.append(f"::{command} {joined}::{escape_data(message)}\n")
    return "".join(lines)
