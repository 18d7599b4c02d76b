#!/usr/bin/env bash
# CI: every run output that README.md and doc/*.md quote, re-run and compared line by line
# (tests/quoted_runs.py; make test runs only its self-test and the quick ones). About 15
# minutes on 2 idle cores: the default runs of both programs and the encoder-decoder's
# experiments, 1,000-2,000 steps each, one thread. The last line is "N passed, M failed"
# (.ci/run's stage format): a passed quote is one whose every line or cell the run printed.
set -u
cd "$(dirname "$0")/.."
make -s train_gpt2 train_seq2seq test_gpt2 data > /dev/null || { echo "FAIL make"; echo "0 passed, 1 failed"; exit 1; }
out=$(python3 tests/quoted_runs.py "$@"); rc=$?
echo "$out"
if [[ "$(tail -n 1 <<< "$out")" =~ ^quoted\ runs:\ ([0-9]+)\ checked,\ ([0-9]+)\ stale$ ]]; then
    echo "$((BASH_REMATCH[1] - BASH_REMATCH[2])) passed, ${BASH_REMATCH[2]} failed"
else
    echo "0 passed, 1 failed"
fi
exit $rc
