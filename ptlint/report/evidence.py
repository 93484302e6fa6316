"""A finding's evidence chain (`Finding.via`), as every format shows it: why its line runs where
it runs. Kept apart from SARIF so the text output does not import json and the SARIF tables."""

from __future__ import annotations

from typing import Callable, NamedTuple

from ptlint.engine.finding import Finding

# What a chain shows, by where the finding's code runs (`Finding.context`).
CONTEXT_WORDS = {"per-step": "runs per step", "per-outer-iteration": "runs once per outer iteration",
                 "once": "runs once", "called": "runs as often as its callers"}


class ViaLink(NamedTuple):
    """One link of a finding's evidence chain; `cell` and a line counted in that cell for a link
    in the finding's own notebook (ptlint.run.notebook.locate)."""

    path: str
    line: int
    why: str
    cell: int | None = None


def via_links(finding: Finding) -> list[ViaLink]:
    """The finding's evidence chain, outermost first, with the cell of each link in a notebook."""
    cells = finding.extra.get("via_cells")
    if not isinstance(cells, (list, tuple)) or len(cells) != len(finding.via):
        cells = [None] * len(finding.via)
    return [ViaLink(path, line, why, cell if isinstance(cell, int) else None)
            for (path, line, why), cell in zip(finding.via, cells)]


def via_label(finding: Finding) -> str:
    """`runs per step`, ...: what the chain shows."""
    if finding.context is None:
        return "via"
    return CONTEXT_WORDS.get(finding.context, f"runs {finding.context}")


def via_location(link: ViaLink, path: str | None = None) -> str:
    """`train.py:88`, or `nb.ipynb:cell 4:12` in a notebook; `path`: another spelling of its path."""
    path = link.path if path is None else path
    return f"{path}:cell {link.cell}:{link.line}" if link.cell is not None else f"{path}:{link.line}"


def via_chain(finding: Finding, path: Callable[[str], str] = str) -> str:
    """The chain on one line: `train.py:88 for batch in loader -> train.py:90 calls train_step`;
    `path` spells each link's path (default: as the finding gives it)."""
    return " -> ".join(f"{via_location(link, path(link.path))} {' '.join(link.why.split())}"
                       for link in via_links(finding))
