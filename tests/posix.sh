# Sourced by the test scripts: the few things that GNU, BSD (macOS) and MSYS2 tools spell
# differently, written once. The scripts run on bash 3.2 (macOS's /bin/bash) and newer, with
# POSIX tools plus what every one of these systems has beyond POSIX: grep -o and -m, sed -E,
# head -c, mktemp -d, fractional sleep, perl 5 (macOS ships it, MSYS2 and Git for Windows too).
# tests/posix_check.sh keeps GNU-only spellings out of make test's scripts; the lines here
# that must name one (to use it where it is) carry its mark, "posix-check: allow".

# capture ERE [FILE...]: the text matched by ERE's first group (...) in each line's first match
# of ERE: GNU's grep -oP 'A\KB(?=C)' is capture 'A(B)C'. An ERE has no \d, \s or \w: [0-9],
# [[:space:]] and [[:alnum:]_] say them; a literal | ( ) + is [|] [(] [)] [+]. The first sed
# command puts the group of the leftmost match between two \001 marks, the second keeps it.
capture() {
    local re=$1 m=$'\001' d=$'\002'; shift  # d: a delimiter that no pattern holds, not even '/'
    sed -nE "s${d}${re}${d}${m}\\1${m}${d}; s${d}^[^${m}]*${m}([^${m}]*)${m}.*\$${d}\\1${d}p" "$@"
}

# now_ms: wall-clock milliseconds (date +%N is GNU's: BSD date prints a literal N)
now_ms() {
    if [ -n "${EPOCHREALTIME:-}" ]; then  # bash 5; its separator follows the locale
        local t=${EPOCHREALTIME/[.,]/}
        echo $((t / 1000))
    else
        perl -MTime::HiRes=time -e 'printf "%.0f\n", time() * 1000'
    fi
}

# file_size FILE: its bytes (stat -c %s is GNU's, stat -f %z BSD's; BSD wc pads with spaces)
file_size() { local n; n=$(wc -c < "$1") && echo $((n)); }

# with_timeout SECONDS COMMAND...: COMMAND, sent SIGTERM after SECONDS; exit status 124 then,
# as GNU's timeout (macOS has none). COMMAND runs in the background: its stdin is not the
# terminal's. The watchdog looks every 0.1 s (bash 3.2 has no wait -n to wake on either one).
with_timeout() {
    local secs=$1 mark; shift
    mark=$(mktemp "${TMPDIR:-/tmp}/with_timeout.XXXXXX") || return 125
    "$@" &
    local pid=$!
    ( ticks=$((secs * 10))
      while kill -0 $pid; do
          if [ $ticks -le 0 ]; then echo timeout > "$mark"; kill -TERM $pid; exit 0; fi
          sleep 0.1; ticks=$((ticks - 1))
      done ) 2> /dev/null &
    local watchdog=$!
    wait $pid; local rc=$?
    wait $watchdog
    [ -s "$mark" ] && rc=124
    rm -f "$mark"
    return $rc
}

# readonly_dir DIR: prints a directory in which no file can be created: DIR made read-only, or,
# for root (whom permissions do not stop), Linux's /proc/sys (procfs refuses new files to all)
readonly_dir() {
    mkdir -p "$1" && chmod a-w "$1"
    [ "$(id -u)" -eq 0 ] && [ -d /proc/sys ] && { echo /proc/sys; return; }  # posix-check: allow
    echo "$1"
}

# cpu_count: the CPUs online (nproc is GNU's; getconf's name is in glibc, macOS and the BSDs)
cpu_count() { getconf _NPROCESSORS_ONLN 2> /dev/null || sysctl -n hw.ncpu 2> /dev/null || echo 1; }

# cpu_model: the processor's name (Linux's /proc/cpuinfo, macOS's sysctl), or "unknown"
cpu_model() {
    local name
    name=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2> /dev/null | head -n 1)  # posix-check: allow
    [ -n "$name" ] || name=$(sysctl -n machdep.cpu.brand_string 2> /dev/null)
    echo "${name:-unknown}"
}
