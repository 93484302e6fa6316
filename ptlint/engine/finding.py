"""What the engine reports: findings, their fixes, and the text edits a fix is made of."""

from __future__ import annotations

from typing import Any, NamedTuple

SAFE = "safe"
SAME_FILE = ""  # the path of an evidence link in the finding's own file, in the cache
UNSAFE = "unsafe"


class Edit(NamedTuple):
    """Replace the text from (line, column) up to (end_line, end_column) with `content`.
    Lines are 1-based; columns are 1-based characters, the end one past the span (like findings).
    An insertion has an empty span."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> dict[str, Any]:  # ruff's shape
        return {"content": self.content, "location": {"row": self.line, "column": self.column},
                "end_location": {"row": self.end_line, "column": self.end_column}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Edit":
        return cls(data["location"]["row"], data["location"]["column"], data["end_location"]["row"],
                   data["end_location"]["column"], data["content"])


class Fix(NamedTuple):
    applicability: str  # SAFE or UNSAFE
    message: str
    edits: tuple[Edit, ...] = ()  # applied together or not at all

    def to_json(self) -> dict[str, Any]:
        return {"applicability": self.applicability, "message": self.message,
                "edits": [edit.to_json() for edit in self.edits]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Fix":
        return cls(data["applicability"], data["message"], tuple(Edit.from_json(e) for e in data.get("edits", [])))


class Finding:
    """One reported span. A plain class, not a dataclass: the records on the path of every check
    are written out, since `dataclasses` (with `inspect`) and the methods it generates cost a
    one-file check about a fifth of its start-up."""

    def __init__(self, code: str, name: str, message: str, path: str,
                 line: int, column: int, end_line: int, end_column: int,
                 severity: str = "warning", fix: Fix | None = None, source: str = "static",
                 context: str | None = None, via: tuple[tuple[str, int, str], ...] = (),
                 extra: dict[str, Any] | None = None, help: str | None = None) -> None:
        self.code = code
        self.name = name
        self.message = message
        self.path = path
        self.line = line  # 1-based
        self.column = column  # 1-based, in characters
        self.end_line = end_line
        self.end_column = end_column  # 1-based, one past the last character
        self.severity = severity
        self.fix = fix
        self.source = source
        self.context = context  # where the reported code runs (static findings)
        # The evidence for `context`, outermost first: (path, line, why) triples
        # (ptlint.semantics.where.Via; read back from JSON as plain tuples).
        self.via = via
        self.extra: dict[str, Any] = {} if extra is None else extra  # e.g. the dynamic pass's "confirmed"
        self.help = help  # what to change (the rule's `help`, or one for this finding)

    def __eq__(self, other: object) -> bool:
        return type(other) is Finding and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment] - mutable, like the dataclass it was

    def __repr__(self) -> str:
        return f"Finding({', '.join(f'{key}={value!r}' for key, value in vars(self).items())})"

    @property
    def cell(self) -> int | None:
        """The notebook cell the finding is in (1-based among all cells), or None outside notebooks."""
        cell = self.extra.get("cell")
        return cell if isinstance(cell, int) else None

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "severity": self.severity,
            "fix": self.fix.to_json() if self.fix else None,
            "source": self.source,
            "help": self.help,
        }
        if self.context is not None:
            out["context"] = {"where": self.context, "via": [{"path": path, "line": line, "why": why} for path, line, why in self.via]}
        out.update(self.extra)
        return out

    def to_cache(self) -> dict[str, Any]:
        out = self.to_json()
        out["extra"] = self.extra
        if "context" in out:  # a link in the file itself: the same text may be read back at another path
            for link in out["context"]["via"]:
                if link["path"] == self.path:
                    link["path"] = SAME_FILE
        return out

    @classmethod
    def from_cache(cls, data: dict[str, Any], path: str | None = None) -> "Finding":
        """A finding the cache kept, read back for the file at `path` (default: where it was made)."""
        fix = data.get("fix")
        path = path if path is not None else data["path"]
        context = data.get("context")
        if isinstance(context, dict):
            context = {**context, "via": [{**link, "path": path if link["path"] == SAME_FILE else link["path"]}
                                          for link in context["via"]]}
        return cls(
            code=data["code"], name=data["name"], message=data["message"], path=path,
            line=data["line"], column=data["column"], end_line=data["end_line"],
            end_column=data["end_column"], severity=data["severity"],
            fix=Fix.from_json(fix) if fix else None,
            source=data["source"], extra=data.get("extra", {}),
            help=data.get("help"), **_context_from_json(context),
        )


# `unsafe_fixes` below: one answer for the run (--unsafe-fixes), or one per file path (each
# file's config may say `unsafe-fixes = true`).

def unsafe_for(unsafe_fixes: bool | dict[str, bool], finding: Finding) -> bool:
    if isinstance(unsafe_fixes, dict):
        return unsafe_fixes.get(finding.path, False)
    return bool(unsafe_fixes)


def applicable(finding: Finding, unsafe_fixes: bool | dict[str, bool]) -> bool:
    """True when `ptlint fix --apply` (with --unsafe-fixes when given) would apply its fix."""
    fix = finding.fix
    return fix is not None and bool(fix.edits) and (fix.applicability == SAFE or unsafe_for(unsafe_fixes, finding))


def _context_from_json(context: Any) -> dict[str, Any]:
    """`context` and `via` from a finding's JSON "context" object."""
    if not isinstance(context, dict):
        return {}
    return {"context": context["where"], "via": tuple((v["path"], v["line"], v["why"]) for v in context["via"])}
