#!/usr/bin/env bash
# make test (and CI): the scripts stay portable to macOS (BSD tools, bash 3.2) and MSYS2.
# Reads the Makefile, tests/*.sh but this one, tests/fuzz/*.sh and bench/run_bench.sh (or the
# FILEs given) and names, as FILE:LINE, each GNU-only or bash-4 spelling it finds: grep -P,
# date +%N, /proc, dd status=none, stat -c, readlink -f, sed -i without a suffix, timeout,
# seq, nproc, mapfile, ... with the portable way to say it (most are functions of
# tests/posix.sh). Comment lines are not read; a line that must use one where it exists
# (a fallback) says so with the mark "posix-check: allow". Last line: "posix check: ...";
# the exit status is 1 if anything is named.
set -u
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then  # not this file: its rules name what they forbid
    for f in tests/*.sh; do [ "$f" = tests/posix_check.sh ] || set -- "$@" "$f"; done
    set -- Makefile "$@" tests/fuzz/*.sh bench/run_bench.sh
fi

# one rule a line: an ERE (awk's), a tab, what to write instead. The EREs are spelled so that
# they do not match their own line (a [[:space:]] where the construct has a space).
rules=$(cat << 'EOF'
(^|[^[:alnum:]_-])grep[[:space:]]+(-[[:alnum:]]+[[:space:]]+)*-[[:alnum:]]*P	grep -P (Perl regexes) is GNU's: grep -E, or capture (tests/posix.sh) for grep -oP '\K'
(^|[^[:alnum:]_-])grep[[:space:]].*--perl-regexp	grep --perl-regexp is GNU's: grep -E, or capture (tests/posix.sh)
(^|[^[:alnum:]_-])date[[:space:]]+['"]?[+][^[:space:]]*%[0-9]*N	date +%N is GNU's (BSD's date prints N): now_ms (tests/posix.sh)
(^|[^[:alnum:]_.-])/proc([/[:space:]"';)]|$)	/proc is Linux's: a path the test makes (a regular file as a parent, readonly_dir), or cpu_count
status=none	dd status=none is GNU's: dd ... 2> /dev/null
(^|[^[:alnum:]_/.-])stat[[:space:]]+(-[[:alnum:]]*c|--)	stat -c is GNU's (BSD: stat -f): file_size (tests/posix.sh)
(^|[^[:alnum:]_-])readlink[[:space:]]+-[[:alnum:]]*[fem]	readlink -f is GNU's: (cd DIR && pwd -P)
(^|[^[:alnum:]_.-])realpath([^[:alnum:]_.-]|$)	realpath is not on older macOS: (cd DIR && pwd -P)
(^|[^[:alnum:]_-])sed[[:space:]]+(-[[:alnum:]]+[[:space:]]+)*-[[:alnum:]]*i([[:space:]]|$)	sed -i without a suffix is GNU's (BSD's sed takes the next word as the suffix): sed -i.bak, or write a copy
(^|[^[:alnum:]_-])timeout[[:space:]]+(-[[:alnum:]]+[[:space:]]+)*[0-9"$]	timeout is GNU's (macOS has none): with_timeout (tests/posix.sh)
(^|[^[:alnum:]_-])seq[[:space:]]+-?[0-9"$]	seq is not POSIX: for ((i = 1; i <= n; i++)), or awk
(^|[^[:alnum:]_-])nproc([^[:alnum:]_-]|$)	nproc is GNU's: cpu_count (tests/posix.sh)
(^|[^[:alnum:]_-])(md5|sha1|sha224|sha256|sha384|sha512|b2)sum([^[:alnum:]_-]|$)	md5sum, sha256sum are GNU's (macOS: md5, shasum): cksum, or cmp
(^|[^[:alnum:]_-])truncate[[:space:]]+-	truncate is not on macOS: head -c N, or dd
(^|[^[:alnum:]_-])xxd([^[:alnum:]_-]|$)	xxd comes with vim, not with every system: od
(^|[^[:alnum:]_-])(tac|shuf)([[:space:]]|$)	tac and shuf are GNU's: sort, awk
(^|[^[:alnum:]_-])mktemp[[:space:]]+(-[[:alnum:]]+[[:space:]]+)*(-[[:alnum:]]*[pt]|--)	mktemp -p, -t and --tmpdir differ between GNU and BSD: mktemp -d "${TMPDIR:-/tmp}/NAME.XXXXXX"
(^|[^[:alnum:]_-])find[[:space:]].*-printf	find -printf is GNU's: find ... | while read, or -exec
(^|[^[:alnum:]_-])xargs[[:space:]]+(-[[:alnum:]]+[[:space:]]+)*-[[:alnum:]]*r	xargs -r is GNU's
(^|[^[:alnum:]_-])sort[[:space:]]+(-[[:alnum:]]+[[:space:]]+)*-[[:alnum:]]*V	sort -V is GNU's
(^|[^[:alnum:]_-])ps[[:space:]].*--sort	ps --sort is procps's (Linux): ps -eo ... | sort
(^|[^[:alnum:]_-])sed[[:space:]]+(-[[:alnum:]]+[[:space:]]+)*-[[:alnum:]]*r([[:space:]]|$)	sed -r is GNU's: sed -E
(^|[^[:alnum:]_-])(grep|sed|capture)[[:space:]][^|]*\\[dswDSWbBK<>t|]	\d \s \w \b \K \< \> \t \| in a grep or sed pattern are GNU's: [0-9] [[:space:]] [[:alnum:]_] [|] (and grep -E 'a|b')
(^|[^[:alnum:]_-])(mapfile|readarray)[[:space:]]	mapfile needs bash 4 (macOS has 3.2): while IFS= read -r x; do a+=("$x"); done
(^|[^[:alnum:]_-])(declare|local|typeset)[[:space:]]+-[[:alnum:]]*[Ang]	associative arrays, namerefs and declare -g need bash 4 (macOS has 3.2): a case, or plain variables
\$\{[^}]*(,,|\^\^)\}	${x,,} and ${x^^} need bash 4 (macOS has 3.2): tr '[:upper:]' '[:lower:]'
(\|&|&>>)	|& and &>> need bash 4 (macOS has 3.2): 2>&1 |, >> FILE 2>&1
(^|[^[:alnum:]_-])(coproc[[:space:]]|wait[[:space:]]+-n)	coproc and wait -n need bash 4 (macOS has 3.2)
\$\{[[:alnum:]_]+\[-[0-9]+\]\}	a negative array index needs bash 4.3 (macOS has 3.2): ${a[${#a[@]}-1]}
EOF
)
status=0
# (the rules reach awk through the environment: awk -v would read their backslashes as escapes)
RULES=$rules awk '
    BEGIN { n = split(ENVIRON["RULES"], line, "\n")
            for (i = 1; i <= n; i++) { split(line[i], f, "\t"); re[i] = f[1]; say[i] = f[2] } }
    FNR == 1 { files++ }
    { lines++ }
    /^[[:space:]]*#/ { next }                      # a comment line (and the #! line)
    /posix-check: allow/ { allowed++; next }
    { code = $0; sub(/[[:space:]]#[[:space:]].*$/, "", code)   # a comment after the code
      for (i = 1; i <= n; i++)
          if (code ~ re[i]) {
              text = code; gsub(/^[[:space:]]+/, "", text)
              if (length(text) > 90) text = substr(text, 1, 87) "..."
              printf "%s:%d: %s: %s\n", FILENAME, FNR, say[i], text; found++
              if (!hit[i]++) kinds++
          } }
    END { printf "posix check: %d files, %d lines, %d kinds of GNU-only or bash-4 spelling looked for: %d found " \
                 "(%d kinds), %d lines marked allowed\n", files, lines, n, found, kinds, allowed
          exit (found > 0) }' "$@" || status=1
exit $status
