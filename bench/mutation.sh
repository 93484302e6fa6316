#!/usr/bin/env bash
# Mutation testing (mutmut 3) of chosen ptlint modules, with the tests that cover them; prints the
# score per module and the mutants that survived.
#
#   bench/mutation.sh ptlint/run/cache.py ptlint/engine/suppress.py     # tests from the table below
#   bench/mutation.sh ptlint/engine/traversal.py -- tests/rules/test_rule_examples.py tests/run/test_fix.py
#   MUTANTS='*x__bindings__* *_compute_intrinsic__*' bench/mutation.sh ptlint/semantics/where.py -- tests/semantics/test_where.py
#     (only the functions a change touched, in modules too large to mutate whole: mutmut's name patterns)
#
# Runs in a scratch copy (build/mutation/, wiped first) so that the work tree and its pyproject.toml
# stay as they are; needs the test and mutation extras (`pip install -e ".[test,mutation]"`).
# Score = killed / (killed + survived + no tests): a mutant no test reaches counts against the score.
# Timeouts count as killed (the mutant made a test hang), and are listed apart.
# Only tests that run ptlint in the test process can kill a mutant: mutmut maps tests to the
# functions they call in-process, so tests that run `python -m ptlint` in a child do not count.
# Inspect one survivor afterwards: (cd build/mutation && mutmut show NAME)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

modules=()
tests=()
while (($#)); do
    if [[ $1 == -- ]]; then shift; tests=("$@"); break; fi
    modules+=("$1"); shift
done
if ((${#modules[@]} == 0)); then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi

# The tests that exercise each module in-process (used when no tests are given after --).
tests_for() {
    case $1 in
        ptlint/run/cache.py) echo tests/run/test_cache.py ;;
        ptlint/engine/suppress.py) echo tests/engine/test_suppress.py tests/rules/test_rule_examples.py ;;
        ptlint/run/config.py) echo tests/run/test_config.py ;;
        ptlint/engine/edits.py) echo tests/engine/test_edits.py tests/rules/test_rule_examples.py tests/run/test_fix.py ;;
        ptlint/engine/structure.py) echo tests/engine/test_structure.py tests/run/test_fix.py ;;
        ptlint/run/fix.py) echo tests/run/test_fix.py tests/engine/test_structure.py tests/run/test_notebook.py ;;
        *) echo "bench/mutation.sh: no default tests for $1; name them after --" >&2; exit 2 ;;
    esac
}
if ((${#tests[@]} == 0)); then
    for module in "${modules[@]}"; do
        for test in $(tests_for "$module"); do
            [[ -e $test ]] && tests+=("$test")
        done
    done
fi
if ((${#tests[@]} == 0)); then
    echo "bench/mutation.sh: no test files for ${modules[*]}; name them after --" >&2
    exit 2
fi
for path in "${modules[@]}" "${tests[@]}"; do
    [[ -e $path ]] || { echo "bench/mutation.sh: $path: no such file" >&2; exit 2; }
done

work=$repo/build/mutation
rm -rf "$work"
mkdir -p "$work"
# tracked and untracked files, as the tests see them (fixtures, README, .ci), without ignored ones
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work"

toml_list() { printf '"%s", ' "$@" | sed 's/, $//'; }
cat >>"$work/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["ptlint"]
only_mutate = [$(toml_list "${modules[@]}")]
also_copy = ["fixtures", "README.md", ".ci", "docs", "bench"]
pytest_add_cli_args = ["-p", "no:xdist", "-p", "no:cacheprovider"]
pytest_add_cli_args_test_selection = [$(toml_list "${tests[@]}")]
EOF

cd "$work"
echo "mutating: ${modules[*]}"
echo "tests:    ${tests[*]}"
read -r -a patterns <<<"${MUTANTS:-}"
if ! mutmut run "${patterns[@]}" >mutmut-run.log 2>&1; then
    # mutmut stops with an error when no selected test reaches any mutant: that is a score of 0
    grep -q "could not find any test case for any mutant" mutmut-run.log || { tail -40 mutmut-run.log; exit 1; }
fi

MUTANTS="${MUTANTS:-}" python3 - "${modules[@]}" <<'EOF'
import json
import os
import sys
from fnmatch import fnmatch
from pathlib import Path

patterns = os.environ["MUTANTS"].split()

KILLED = {1, 3, 36, 24, -24, 152, 255}  # failed tests, pytest internal error, timeouts
TIMEOUT = {36, 24, -24, 152, 255}
worst = 0.0
for module in sys.argv[1:]:
    meta = json.loads(Path("mutants", module + ".meta").read_text())
    codes = meta["exit_code_by_key"]
    if patterns:  # (the other functions' mutants were not run)
        codes = {name: code for name, code in codes.items() if any(fnmatch(name, p) for p in patterns)}
    killed = [name for name, code in codes.items() if code in KILLED]
    survived = sorted(name for name, code in codes.items() if code == 0)
    untested = sorted(name for name, code in codes.items() if code in (5, 33, None))
    timeouts = [name for name, code in codes.items() if code in TIMEOUT]
    other = sorted(f"{name} (exit {code})" for name, code in codes.items()
                   if code not in KILLED and code not in (0, 5, 33, None))
    scored = len(killed) + len(survived) + len(untested)
    score = 100.0 * len(killed) / scored if scored else 0.0
    print(f"{module}: {len(killed)} killed ({len(timeouts)} by timeout), {len(survived)} survived, "
          f"{len(untested)} not reached by a test, of {len(codes)} mutants; score {score:.1f}%")
    for title, names in (("survived", survived), ("no test reaches", untested), ("other", other)):
        for name in names:
            print(f"  {title}: {name}")
EOF
