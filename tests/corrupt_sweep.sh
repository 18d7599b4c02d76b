#!/usr/bin/env bash
# CI: one-byte corruptions of the files a run writes and reads back in our own formats
# (doc/formats.md): the training state (version 3), the checkpoint of block variants (104) and
# the encoder-decoder's checkpoint (201). Every byte of each header, and 32 bytes spread over each
# payload, is changed in turn (XOR with a value that varies with the offset), and the run is
# resumed from the damaged file (-y 1). Each must be refused with one line naming the file, exit
# status 1, or be provably harmless: resumed with the undamaged run's loss. None may crash or
# resume with another loss. About 3,300 runs of a tiny model; OMP_NUM_THREADS=1.
# The last line is "N passed, M failed" (one check per file swept).
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # now_ms
export OMP_NUM_THREADS=1
make train_gpt2 train_seq2seq > /dev/null || { echo "0 passed, 1 failed"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/corrupt_sweep.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
GPT=(./train_gpt2 -nl 1 -nh 2 -nc 16 -kv 1 -b 2 -t 16 -g 0 -v 0 -j "" -n 2 -o "$T/g")
S2S=(./train_seq2seq -nl 1 -nh 2 -nc 16 -b 4 -ne 8 -g 0 -v 0 -n 1 -o "$T/s")
"${GPT[@]}" -x 2 > /dev/null && "${S2S[@]}" -x 1 > /dev/null || { echo "the runs to corrupt failed"; echo "0 passed, 1 failed"; exit 1; }

# sweep FILE HEADER_STRIDE NEW_STEP COMMAND...: each corruption of FILE, then COMMAND, which resumes
# from it and saves step NEW_STEP beside it (those files are removed after each run)
sweep() {
    local file=$1 stride=$2 new=$3; shift 3
    perl - "$file" "$stride" "$new" "$T/out" "$T/err" "$@" <<'PERL'
use strict; use warnings;
my ($file, $stride, $new, $out, $err, @cmd) = @ARGV;
my $size = -s $file;
my @offsets = grep { $_ % $stride == 0 } 0 .. 1023;
push @offsets, map { 1024 + int($_ * ($size - 1025) / 31) } 0 .. 31;
(my $dir = $file) =~ s{/[^/]*$}{};
(my $name = $file) =~ s{^.*/}{};
my $run = sub {
    system(join(" ", map { "'$_'" } @cmd) . " > '$out' 2> '$err'");
    my $rc = $? == -1 ? -1 : $? & 127 ? 128 + ($? & 127) : $? >> 8;
    unlink glob(sprintf("%s/*_%08d.bin", $dir, $new));
    local $/; open(my $o, "<", $out) or die; my $o_text = <$o>; open(my $e, "<", $err) or die; my $e_text = <$e>;
    my ($loss) = $o_text =~ /^(step +\d+\/\d+ \| loss [0-9.]+)/m;
    return ($rc, $loss // "", $e_text);
};
my ($rc0, $base, $e0) = $run->();
die "the undamaged resume failed (exit $rc0): $e0" if $rc0 != 0 || $base eq "";
my ($refused, $harmless, @bad) = (0, 0);
open(my $f, "+<:raw", $file) or die;
for my $at (@offsets) {
    sysseek($f, $at, 0); sysread($f, my $byte, 1);
    my $flip = (($at * 167) % 255) + 1;
    sysseek($f, $at, 0); syswrite($f, chr(ord($byte) ^ $flip));
    my ($rc, $loss, $e) = $run->();
    sysseek($f, $at, 0); syswrite($f, $byte);
    my @lines = split /\n/, $e;
    if ($rc == 1 && @lines == 1 && $lines[0] =~ /^train_(gpt2|seq2seq): error: .*\Q$name\E/) { $refused++ }
    elsif ($rc == 0 && $loss eq $base && $e !~ /runtime error|Sanitizer/) { $harmless++ }
    else { push @bad, sprintf("byte %d ^ 0x%02x: exit %d, %s", $at, $flip, $rc, $rc == 0 ? "'$loss', not '$base'" : $lines[0] // "no line") }
}
printf "%s: %d corruptions (%d header bytes, 32 of the payload): %d refused in one line naming it, %d harmless%s\n",
    $name, scalar @offsets, scalar @offsets - 32, $refused, $harmless, @bad ? ", " . scalar(@bad) . " BAD" : "";
print "  $_\n" for @bad[0 .. ($#bad < 9 ? $#bad : 9)];
exit(@bad ? 1 : 0);
PERL
}
check() {  # check NAME FILE STRIDE COMMAND...
    local name=$1; shift
    local t0; t0=$(now_ms)
    if sweep "$@"; then pass=$((pass + 1)); echo "PASS $name ($(( ($(now_ms) - t0) / 1000 )) s)"
    else fail=$((fail + 1)); echo "FAIL $name"; fi
}
check "training state (version 3) of train_gpt2: every header byte" "$T/g/state_00000002.bin" 1 3 "${GPT[@]}" -x 3 -y 1
check "checkpoint version 104 (block variants): every header byte" "$T/g/model_00000002.bin" 1 3 "${GPT[@]}" -x 3 -y 1
check "checkpoint version 201 (encoder-decoder): every header byte" "$T/s/model_00000001.bin" 1 2 "${S2S[@]}" -x 2 -y 1
check "training state of train_seq2seq: every 8th header byte" "$T/s/state_00000001.bin" 8 2 "${S2S[@]}" -x 2 -y 1
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
