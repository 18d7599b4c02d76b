#!/usr/bin/env bash
# Mutation check: inside every *_backward function of train_gpt2.c (and add_weighted_rows,
# which the bias gradients use), one line at a time,
#   - flips the sign of each accumulation (+= to -=), and
#   - negates the value of each assignment to a gradient (a variable whose name starts
#     with d: "dinp[i] = e;" becomes "dinp[i] = -(e);"), except assignments of constants,
# and requires test_gpt2 to fail on every mutant. Loop increments and comments are left
# alone. Last line: "N passed, M failed" (passed = the tests caught it).
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp test_gpt2.c "$work/"
# prints "LINE<TAB>mutated line" for every accumulation in the functions of interest
candidates() {
    perl -ne '
        $inside = 1 if /^(static )?(inline )?void ([a-z_]+_backward(_plain)?|add_weighted_rows)\(|^#define ADD_WEIGHTED_ROWS_BLOCK/;
        if ($inside) {
            my ($code, $comment) = split(m{//}, $_, 2);
            my ($head, $body) = $code =~ /^(\s*for\s*\(.*?\)\s*)(.*)$/s ? ($1, $2) : ("", $code);
            my $mutated = 0;
            if ($body =~ /\+=/) {
                $body =~ s/(.*)\+=/$1-=/s; $mutated = 1;
            } elsif ($body =~ /^(\s*)(d\w*(?:\[[^\]]*\])?)\s*=\s*(.+);\s*$/s && $3 !~ /^[-+0-9.ef]+$/) {
                $body = "$1$2 = -($3);\n"; $mutated = 1;
            }
            if ($mutated) {
                my $line = $head . $body . (defined $comment ? "//" . $comment : "");
                chomp $line; print "$.\t$line\n";
            }
        }
        $inside = 0 if /^}/;' train_gpt2.c
}
pass=0; fail=0
while IFS=$'\t' read -r n mutated; do
    awk -v n="$n" -v m="$mutated" 'NR == n { print m; next } { print }' train_gpt2.c > "$work/train_gpt2.c"
    what=$(echo "$mutated" | sed 's/^ *//')
    if ! ${CC:-cc} -O1 -march=native -fopenmp -std=c11 -o "$work/test_gpt2" "$work/test_gpt2.c" -lm 2> "$work/cc.log"; then
        echo "FAIL line $n does not compile when mutated: $what"; fail=$((fail + 1)); continue
    fi
    if (cd "$root" && timeout 120 "$work/test_gpt2" > "$work/out.log" 2>&1); then
        echo "FAIL line $n: sign flip not caught: $what"; fail=$((fail + 1))
    else
        echo "PASS line $n caught ($(grep -c '^FAIL' "$work/out.log") checks fail): $what"; pass=$((pass + 1))
    fi
done < <(candidates)
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
