"""bench/precision.py without the real corpus: seeded stable sampling, verdict reuse, report arithmetic,
and one end-to-end run of the real ptlint on a tiny fake corpus built in tmp_path."""

from __future__ import annotations

import datetime
import importlib.util
import json
import subprocess
import sys

import pytest
from helpers import REPO

_spec = importlib.util.spec_from_file_location("precision", REPO / "bench" / "precision.py")
precision = importlib.util.module_from_spec(_spec)
sys.modules["precision"] = precision  # dataclasses look their module up by name
_spec.loader.exec_module(precision)
Finding = precision.Finding

CORPUS_SH = """#!/bin/bash
if [[ ${1:-} == --training ]]; then
  pins="loop-kit==1.2.0 Absent.Pkg==3.0
        other_kit==0.1"
else
  pins="libby==2.0.1"
fi
"""


def findings(code: str, count: int, package: str = "pkg") -> list[Finding]:
    return [Finding(package, "1.0", f"m{i % 7}.py", 10 + i, code) for i in range(count)]


def record(finding: Finding, verdict: str, reason: str = "why") -> dict:
    return {"package": finding.package, "version": finding.version, "path": finding.path,
            "line": finding.line, "code": finding.code, "verdict": verdict, "reason": reason}


def test_pins_are_read_per_corpus_with_wheel_folder_names():
    pins = precision.read_pins(CORPUS_SH)
    assert pins == {"training": {"loop_kit": "1.2.0", "absent_pkg": "3.0", "other_kit": "0.1"},
                    "libraries": {"libby": "2.0.1"}}
    assert precision.choose_packages(pins, "all", None) == {"libby": "2.0.1", "loop_kit": "1.2.0",
                                                            "absent_pkg": "3.0", "other_kit": "0.1"}
    assert precision.choose_packages(pins, "all", "loop-kit") == {"loop_kit": "1.2.0"}
    with pytest.raises(precision.HarnessError, match="nope"):
        precision.choose_packages(pins, "all", "nope")


def test_sample_is_seeded_and_independent_of_order_and_other_rules():
    pool = findings("PTL101", 30) + findings("PTL201", 4)
    sample = precision.draw_sample(pool, seed=1, per_rule=10)
    assert len(sample["PTL101"]) == 10
    assert sample["PTL201"] == sorted(sample["PTL201"], key=lambda f: precision.rank(1, f))
    assert set(sample["PTL201"]) == set(findings("PTL201", 4))  # all of them when fewer than per_rule
    assert precision.draw_sample(list(reversed(pool)), seed=1, per_rule=10) == sample
    again = precision.draw_sample(findings("PTL101", 30) + findings("PTL402", 9), seed=1, per_rule=10)
    assert again["PTL101"] == sample["PTL101"]
    assert set(precision.draw_sample(pool, seed=2, per_rule=10)["PTL101"]) != set(sample["PTL101"])


def test_one_new_finding_changes_at_most_one_member_of_the_sample():
    pool = findings("PTL101", 30)
    before = set(precision.draw_sample(pool, seed=1, per_rule=10)["PTL101"])
    after = set(precision.draw_sample(pool + [Finding("pkg", "1.0", "new.py", 3, "PTL101")], 1, 10)["PTL101"])
    assert len(before - after) <= 1 and len(after) == 10


def test_a_line_reported_twice_is_sampled_once():
    twice = [Finding("pkg", "1.0", "a.py", 5, "PTL101", "`.item()`"), Finding("pkg", "1.0", "a.py", 5, "PTL101", "`.cpu()`")]
    assert len(precision.draw_sample(twice, 1, 10)["PTL101"]) == 1
    rows = precision.tally(["PTL101"], twice, precision.draw_sample(twice, 1, 10), {})
    assert (rows[0]["findings"], rows[0]["repeated"], rows[0]["sampled"]) == (1, 1, 1)


def test_a_verdict_is_kept_once_per_key_and_replaced(tmp_path):
    path = tmp_path / "judgements.jsonl"
    one, two = findings("PTL101", 2)
    assert precision.save_judgement(path, record(one, "false", "loop over ranks")) is False
    assert precision.save_judgement(path, record(two, "true")) is False
    assert precision.save_judgement(path, record(one, "true", "per step after all")) is True
    loaded = precision.load_judgements(path)
    assert loaded[one.key]["verdict"] == "true" and loaded[one.key]["reason"] == "per step after all"
    assert len(path.read_text().splitlines()) == 2
    assert all(set(json.loads(line)) == set(precision.FIELDS) for line in path.read_text().splitlines())
    newer = Finding(one.package, "2.0", one.path, one.line, one.code)
    assert newer.key not in loaded  # a new version of the package is judged afresh


def test_a_bad_judgement_line_is_skipped_on_read_and_blocks_a_rewrite(tmp_path, capsys):
    path = tmp_path / "judgements.jsonl"
    good = record(findings("PTL101", 1)[0], "true")
    path.write_text(json.dumps(good) + "\n{not json\n" + json.dumps({**good, "verdict": "maybe"}) + "\n")
    assert list(precision.load_judgements(path)) == [precision.judgement_key(good)]
    assert "judgements.jsonl:2: bad judgement" in capsys.readouterr().err
    before = path.read_text()
    with pytest.raises(precision.HarnessError, match=":2: bad judgement"):
        precision.save_judgement(path, record(findings("PTL201", 1)[0], "false"))
    assert path.read_text() == before


def test_report_counts_the_sample_and_computes_precision():
    pool = findings("PTL101", 12) + findings("PTL201", 3) + findings("PTL402", 2)
    sample = precision.draw_sample(pool, seed=1, per_rule=10)
    s101, s201 = sample["PTL101"], sample["PTL201"]
    outside = sorted(set(findings("PTL101", 12)) - set(s101), key=str)[0]  # judged, but not in the sample
    verdicts = ["true"] * 6 + ["false"] * 2 + ["debatable"]  # the tenth sampled PTL101 is unjudged
    judgements = {f.key: record(f, v) for f, v in zip(s101, verdicts)}
    judgements.update({s201[0].key: record(s201[0], "false"), s201[1].key: record(s201[1], "debatable"),
                       outside.key: record(outside, "false")})
    rows = {row["rule"]: row for row in precision.tally(["PTL101", "PTL201", "PTL402", "PTL501"], pool, sample,
                                                         judgements)}
    assert rows["PTL101"] == {"rule": "PTL101", "findings": 12, "repeated": 0, "sampled": 10, "judged": 9,
                              "true": 6, "false": 2, "debatable": 1, "precision": "75%"}
    assert (rows["PTL201"]["judged"], rows["PTL201"]["true"], rows["PTL201"]["precision"]) == (2, 0, "0%")
    assert (rows["PTL402"]["sampled"], rows["PTL402"]["precision"]) == (2, "—")
    assert rows["PTL501"]["findings"] == 0
    assert rows["pooled"] == {"rule": "pooled", "findings": 17, "repeated": 0, "sampled": 15, "judged": 11,
                              "true": 6, "false": 3, "debatable": 2, "precision": "67%"}
    table = precision.markdown_table(list(rows.values()), {"pkg": "1.0"}, 1, 10, datetime.date(2026, 1, 2))
    assert "pkg 1.0" in table and "2026-01-02" in table
    assert "| PTL101 | 12 | 9 | 6 | 2 | 1 | 75% |" in table
    assert "| **pooled** | 17 | 11 | 6 | 3 | 2 | 67% |" in table
    assert "| PTL501 |" not in table and "no findings: PTL501." in table


def test_vanished_verdicts_are_listed_not_dropped():
    kept, gone = findings("PTL101", 2)
    old = Finding("pkg", "0.9", "m0.py", 10, "PTL101")
    unselected = Finding("pkg", "1.0", "x.py", 1, "PTL201")
    judgements = {f.key: record(f, "false") for f in (kept, gone, old, unselected)}
    vanished, other_version = precision.vanished([kept], judgements, {"pkg": "1.0"}, ["PTL101"])
    assert [r["line"] for r in vanished] == [gone.line]
    assert [r["version"] for r in other_version] == ["0.9"]


def test_show_marks_the_line_and_keeps_the_enclosing_headers(tmp_path):
    body = "\n".join(f"        x{i} = {i}" for i in range(30))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("class Trainer:\n    def fit(self, loader):\n      if loader:\n"
                                           "        pass\n      else:\n       for b in loader:\n" + body + "\n")
    text = precision.show(tmp_path, Finding("pkg", "1.0", "m.py", 28, "PTL101"))
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[:5]] == ["1", "2", "3", "5", "6"] and lines[5].strip() == "..."
    assert lines[6].startswith("    21") and lines[-1].startswith("    35")
    assert [line for line in lines if ">>" in line] == ["    28>>        x21 = 21"]


TRAIN = """import torch


def train(model, loader, opt):
    total = 0.0
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    return total
"""


def harness(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "bench" / "precision.py"), "--root", str(tmp_path / "corpus"),
                           "--corpus-script", str(tmp_path / "corpus.sh"),
                           "--judgements", str(tmp_path / "judgements.jsonl"), *args],
                          capture_output=True, text=True, timeout=300)


def test_end_to_end_on_a_fake_corpus(tmp_path):
    (tmp_path / "corpus.sh").write_text(CORPUS_SH)
    (tmp_path / "corpus" / "loop_kit" / "kit").mkdir(parents=True)
    (tmp_path / "corpus" / "loop_kit" / "kit" / "train.py").write_text(TRAIN)
    (tmp_path / "corpus" / "other_kit").mkdir()
    (tmp_path / "corpus" / "other_kit" / "quiet.py").write_text("x = 1\n")

    shown = harness(tmp_path, "sample", "--corpus", "training", "--rules", "PTL101")
    assert shown.returncode == 0, shown.stderr
    assert "PTL101 loop_kit 1.2.0 kit/train.py:10" in shown.stdout
    assert "    10>>        total += loss.item()" in shown.stdout
    assert "absent_pkg" in shown.stderr and "corpus.sh --training" in shown.stderr
    assert "1 sampled, 0 judged, 1 to judge" in shown.stdout

    judged = harness(tmp_path, "judge", "loop-kit", "kit/train.py", "10", "PTL101", "true", "per-step sync")
    assert judged.returncode == 0, judged.stderr
    assert json.loads((tmp_path / "judgements.jsonl").read_text()) == {
        "package": "loop_kit", "version": "1.2.0", "path": "kit/train.py", "line": 10, "code": "PTL101",
        "verdict": "true", "reason": "per-step sync"}
    assert "1 sampled, 1 judged, 0 to judge" in harness(tmp_path, "sample", "--corpus", "training",
                                                         "--rules", "PTL101").stdout

    (tmp_path / "corpus" / "loop_kit" / "kit" / "train.py").write_text(TRAIN.replace("loss.item()", "1.0"))
    report = harness(tmp_path, "report", "--corpus", "training", "--rules", "PTL101")
    assert report.returncode == 0, report.stderr
    assert "verdicts whose finding ptlint no longer reports (1" in report.stdout
    assert "true      PTL101 loop_kit kit/train.py:10  per-step sync" in report.stdout


def test_judge_refuses_bad_input_with_one_line(tmp_path):
    (tmp_path / "corpus.sh").write_text(CORPUS_SH)
    (tmp_path / "corpus" / "loop_kit").mkdir(parents=True)
    (tmp_path / "corpus" / "loop_kit" / "t.py").write_text(TRAIN)
    for args, message in ((("nope", "t.py", "1", "PTL101", "true", "r"), "nope is not in corpus.sh's pins"),
                          (("loop_kit", "t.py", "99", "PTL101", "true", "r"), "has no line 99"),
                          (("loop_kit", "t.py", "3", "E501", "true", "r"), "not a rule code"),
                          (("loop_kit", "t.py", "3", "PTL101", "true", "  "), "one-line reason")):
        result = harness(tmp_path, "judge", *args)
        assert result.returncode == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "judgements.jsonl").exists()
