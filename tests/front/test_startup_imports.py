"""What a one-file check imports, as pre-commit and editors run it: nothing a check does not use.
Start-up is measured by bench/startup.py; this pins the imports that once cost a fifth of it:
`dataclasses` (with `inspect`, `dis`, `tokenize`), and the SARIF tables with `json` for a text
report. A module that needs a record on this path writes it as a NamedTuple or a plain class."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers import SYNC_LOSS_ITEM

HEAVY = ("dataclasses", "inspect", "json", "ptlint.report.sarif", "torch")

PROBE = textwrap.dedent("""\
    import contextlib, io, sys
    from ptlint.front import cli
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            cli.main(sys.argv[1:])
        except SystemExit:
            pass
    assert "PTL101" in out.getvalue(), out.getvalue()
    print(" ".join(sorted(name for name in {heavy} if name in sys.modules)))
""").format(heavy=HEAVY)

STEP = SYNC_LOSS_ITEM  # a training loop with one PTL101 finding


@pytest.mark.parametrize("output", ["full", "concise"])
def test_a_one_file_check_without_a_cache_imports_none_of_the_heavy_modules(tmp_path, output):
    (tmp_path / "train.py").write_text(STEP)
    probe = subprocess.run([sys.executable, "-c", PROBE, "check", "--no-cache", "--output-format", output,
                            "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == []


def test_a_warm_cache_adds_only_json(tmp_path):
    (tmp_path / "train.py").write_text(STEP)
    for _ in range(2):  # the second run reads the cache the first one wrote
        probe = subprocess.run([sys.executable, "-c", PROBE, "check", "train.py"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
        assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["json"]
