#!/usr/bin/env bash
# CI: every run output that README.md and doc/*.md quote, re-run and compared line by line
# (tests/quoted_runs.py; make test re-runs only the quick ones). About 15 minutes on 2 cores:
# the encoder-decoder's default run and its experiments, 2,000 steps each, one thread.
# The last line is "quoted runs: N checked, M stale"; exits 1 when a quote is stale.
set -u
cd "$(dirname "$0")/.."
make -s train_gpt2 train_seq2seq data > /dev/null || { echo "FAIL make"; exit 1; }
python3 tests/quoted_runs.py "$@"
