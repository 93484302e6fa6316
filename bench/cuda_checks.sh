#!/usr/bin/env bash
# Every check that needs a CUDA device, in one run (a lent GPU machine's time is short): the
# foreach fixes on CUDA, the host-sync sanitizer against the GPU's own clock, and the tests that
# skip on a machine without CUDA (dynamic pass, fix examples run side by side).
#   bash bench/cuda_checks.sh [OUTDIR]      # OUTDIR gets one log per check
# Uses the python3 that holds torch; needs nbformat and pathspec importable (see README).
set -u
out=${1:-/tmp/cuda_checks}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# the pytest plugin (ptlint.testing's reports) loads through ptlint's installed entry point
if ! python3 -c 'import importlib.metadata as m; m.distribution("ptlint")' 2>/dev/null; then
    python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/ptlint-site . \
        && export PYTHONPATH=$PYTHONPATH:/tmp/ptlint-site
fi
status=0
nvidia-smi -L 2>&1 | tee "$out/device.log"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tee -a "$out/device.log"
python3 bench/cuda_fix_check.py 2>&1 | tee "$out/fix_check.log"; [ "${PIPESTATUS[0]}" = 0 ] || status=1
python3 bench/cuda_sanitizer_check.py 2>&1 | tee "$out/sanitizer_check.log"; [ "${PIPESTATUS[0]}" = 0 ] || status=1
timeout 300 python3 -m pytest -q -p no:cacheprovider -n 8 -rs tests/dynamic tests/rules/test_fix_runs.py \
    tests/rules/test_fix_examples_run.py 2>&1 | tee "$out/tests.log"; [ "${PIPESTATUS[0]}" = 0 ] || status=1
echo "cuda checks: $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
