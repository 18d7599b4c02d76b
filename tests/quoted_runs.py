#!/usr/bin/env python3
"""tests/quoted_runs.py: every run output that README.md and doc/*.md quote, re-run and compared.

tests/doc_check.py checks that quoted code is the code; this checks that quoted output is what
the programs print. A quote of a run carries the command that prints it, in a comment the
reader does not see, in one of two forms:

  <!-- run: COMMAND -->           before a fenced block: every line of the block is a line
                                  of COMMAND's output, in order; "..." stands for any lines
                                  and a line starting "$ " is the reader's command, not output
  <!-- runs: PATTERN              before a table: row k's cells after the first are, in
  COMMAND 1                       order, the captures of PATTERN (a regular expression with
  COMMAND 2 ...                   one group) in the output of COMMAND k; a row with "=" in
  -->                             place of a command repeats a row above ("= 1": row 1's run)

What differs from run to run is masked on both sides before comparing: durations ("42.4 ms",
"0.6s", "1m25s", "ETA ..."), rates ("755 pairs/s"), and a block's first "$ " line.
Each command runs with bash in a fresh temporary directory that holds links to the
programs and to data/, so its output directories never meet a reader's.

Usage: tests/quoted_runs.py [--quick] [--list] [--self-test] [FILE.md ...]
  (default README.md doc/*.md). --quick runs only markers written "run (quick):" (seconds
  each; make test), --list prints the commands, --self-test checks the checker: a quoted
  short run passes, and the same quote with one digit changed fails. Prints one line per
  quote, then "quoted runs: N checked, M stale"; exits 1 when M > 0. Python 3 alone.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ["train_gpt2", "train_seq2seq", "test_gpt2", "test_seq2seq"]
# what changes between two runs of the same command: masked before comparing
VARIABLE = [
    (re.compile(r"\b\d+ (tok|pairs)/s\b"), "<rate>"),      # 755 pairs/s
    (re.compile(r"ETA \S+"), "ETA <t>"),                  # ETA 1m25s
    (re.compile(r"\b\d+m\d+(\.\d+)?s\b"), "<t>"),          # 1m25s
    (re.compile(r"\b\d+(\.\d+)? ?ms\b"), "<t>"),           # 42.4 ms, 27.9 ms/step
    (re.compile(r"\b\d+(\.\d+)?s\b"), "<t>"),              # 0.6s
]


def mask(line):
    for pattern, repl in VARIABLE:
        line = pattern.sub(repl, line)
    return line.rstrip()


OUTPUTS = {}  # command -> its output: a run quoted in two places runs once


def run(command, timeout=3600):
    """COMMAND's stdout and stderr, run by bash in a fresh directory beside the programs (once
    per command: the programs print the same for the same flags)"""
    if command not in OUTPUTS:
        OUTPUTS[command] = run_once(command, timeout)
    return OUTPUTS[command]


def run_once(command, timeout):
    with tempfile.TemporaryDirectory(prefix="quoted_runs_") as d:
        for name in PROGRAMS + ["data", "tests"]:
            if os.path.exists(os.path.join(ROOT, name)):
                os.symlink(os.path.join(ROOT, name), os.path.join(d, name))
        p = subprocess.run(["bash", "-c", command], cwd=d, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        return p.stdout.decode("utf-8", "replace")


def parse(path):
    """the quotes of one file: (line, kind, command(s), pattern, quoted lines or rows, quick)"""
    lines = open(path, encoding="utf-8").read().split("\n")
    quotes, i = [], 0
    while i < len(lines):
        m = re.match(r"^<!-- run( \(quick\))?: (.*) -->$", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j >= len(lines) or not lines[j].startswith("```"):
                quotes.append((i + 1, "error", None, None, "a run: marker not followed by a fenced block",
                               False))
                i += 1
                continue
            k = j + 1
            while k < len(lines) and not lines[k].startswith("```"):
                k += 1
            quotes.append((i + 1, "block", m.group(2), None, lines[j + 1:k], bool(m.group(1))))
            i = k + 1
            continue
        m = re.match(r"^<!-- runs( \(quick\))?: (.*)$", lines[i])
        if m:
            commands, k = [], i + 1
            while k < len(lines) and lines[k].strip() != "-->":
                commands.append(lines[k].strip())
                k += 1
            j = k + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            rows = []
            while j < len(lines) and lines[j].startswith("|"):
                cells = [c.strip() for c in lines[j].strip().strip("|").split("|")]
                if not all(re.match(r"^:?-+:?$", c) for c in cells):
                    rows.append(cells)
                j += 1
            rows = rows[1:]  # the header
            quotes.append((i + 1, "table", commands, m.group(2), rows, bool(m.group(1))))
            i = j
            continue
        i += 1
    return quotes


def check_block(command, quoted, output):
    """'' when every quoted line is an output line, in order; else what is missing"""
    out = [mask(x) for x in output.split("\n")]
    pos, first = 0, True
    for q in quoted:
        if first and q.startswith("$ "):
            first = False
            continue
        first = False
        if q.strip() in ("...", ""):
            continue
        want = mask(q)
        while pos < len(out) and out[pos] != want:
            pos += 1
        if pos == len(out):
            return "not printed (in this order): " + q.strip()
        pos += 1
    return ""


def check_table(commands, pattern, rows, outputs):
    """'' when row k's cells after the first are the captures of pattern in its command's output"""
    if len(commands) != len(rows):
        return "%d commands for %d rows" % (len(commands), len(rows))
    for k, row in enumerate(rows):
        captured = re.findall(pattern, outputs[k], re.M)
        cells = [c for c in row[1:] if c]
        if cells != captured[:len(cells)] or len(captured) < len(cells):
            return "row %d (%s): the table says %s, the run prints %s" % (
                k + 1, row[0], " ".join(cells), " ".join(captured) or "nothing that matches")
    return ""


def check_file(path, quick, listing, report):
    """checks (or lists) the quotes of path; returns (checked, stale)"""
    checked = stale = 0
    rel = os.path.relpath(path, ROOT)
    for line, kind, command, pattern, body, is_quick in parse(path):
        if kind == "error":
            report("%s:%d: %s" % (rel, line, body))
            stale += 1
            continue
        if quick and not is_quick:
            continue
        if listing:
            for c in [command] if kind == "block" else command:
                print("%s:%d: %s" % (rel, line, c))
            continue
        if kind == "block":
            why = check_block(command, body, run(command))
        else:
            outputs = []
            for k, c in enumerate(command):
                m = re.match(r"^= (\d+)$", c)
                outputs.append(outputs[int(m.group(1)) - 1] if m else run(c))
            why = check_table(command, pattern, body, outputs)
        checked += 1
        if why:
            stale += 1
        report("%s:%d: %s%s" % (rel, line, "STALE: " + why if why else "ok",
                                "" if why else " (" + (command if kind == "block" else
                                                        "%d runs" % len(command)) + ")"))
    return checked, stale


def self_test():
    """the checker can fail: a short run quoted as printed passes; one digit changed fails"""
    command = "OMP_NUM_THREADS=1 ./train_seq2seq -x 4 -v 2 -ne 40 -g 0 -o ''"
    output = run(command)
    quoted = [x for x in output.split("\n") if x.startswith("step")]
    table_out = run(command)
    pattern = r"exact match (\S+%)"
    row = ["run"] + re.findall(pattern, table_out)
    ok_block = check_block(command, ["$ ./train_seq2seq -x 4"] + quoted, output) == ""
    ok_table = check_table([command], pattern, [row], [table_out]) == ""
    # one digit of a number changed: in the loss of the step-1 line, and in the table
    k = next(i for i, x in enumerate(quoted) if "loss" in x and "/4" in x)
    m = re.search(r"loss (\d+\.\d*)(\d)", quoted[k])
    edited = quoted[:]
    edited[k] = quoted[k][:m.start(2)] + str((int(m.group(2)) + 1) % 10) + quoted[k][m.end(2):]
    fails_block = check_block(command, edited, output) != ""
    edited_row = row[:-1] + [re.sub(r"(\d)%$", lambda d: str((int(d.group(1)) + 1) % 10) + "%", row[-1])]
    fails_table = check_table([command], pattern, [edited_row], [table_out]) != ""
    # timings masked: the same block with other durations passes
    retimed = [re.sub(r"\d+\.\d ms", "999.9 ms", x) for x in quoted]
    ok_retimed = check_block(command, retimed, output) == ""
    results = [(ok_block, "a quoted transcript of %d lines, as printed, passes" % len(quoted)),
               (fails_block, "the same with one digit of a loss changed fails: " + edited[k].strip()),
               (ok_table, "a quoted table row %s passes" % " | ".join(row)),
               (fails_table, "the row with one digit changed fails: %s" % " | ".join(edited_row)),
               (ok_retimed, "other durations (999.9 ms a step) are not a difference")]
    for good, what in results:
        print("%s %s" % ("PASS" if good else "FAIL", what))
    return all(good for good, _ in results)


def main(argv):
    quick = "--quick" in argv
    listing = "--list" in argv
    files = [a for a in argv if not a.startswith("--")]
    if "--self-test" in argv:
        return 0 if self_test() else 1
    if not files:
        files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "doc", "*.md")))
    checked = stale = 0
    for f in files:
        c, s = check_file(f, quick, listing, lambda line: print(line, flush=True))
        checked += c
        stale += s
    if not listing:
        print("quoted runs: %d checked, %d stale" % (checked, stale))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
