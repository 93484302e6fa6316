"""The progress bar shows on a terminal for long runs only: never when piped or in CI."""

import io

from ptlint.run.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def drive(stream, total, monkeypatch, ci=None):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr("ptlint.run.progress._DELAY", 0.0)
    with Progress(total, stream) as progress:
        for done in range(1, total + 1):
            progress.update(done, total)
    return stream.getvalue()


def test_bar_on_a_terminal_for_long_runs(monkeypatch):
    out = drive(Terminal(), 500, monkeypatch)
    assert "500/500 files" in out and out.endswith("\r\x1b[K")  # cleared at the end


def test_no_bar_when_piped_in_ci_or_for_short_runs(monkeypatch):
    assert drive(io.StringIO(), 500, monkeypatch) == ""
    assert drive(Terminal(), 500, monkeypatch, ci="true") == ""
    assert drive(Terminal(), 20, monkeypatch) == ""
