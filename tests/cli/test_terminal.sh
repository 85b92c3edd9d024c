#!/bin/sh
# The progress display in a real terminal (tmux): at 80 columns, and in a
# terminal narrowed while the bar is drawn, a run leaves only its summary
# on screen: no stale bar rows, no summary wrapped by the terminal.
# Ends with "N passed, N failed"; exits non-zero on any failure.
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
BK="$BUILD/bloomkit"
export LC_ALL=C
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-test-term.XXXXXX")
export TMUX_TMPDIR="$W"
# Each run has a tmux server of its own (socket bkt-$S): a new session
# started while the last run's server was still shutting down once failed
# ("server exited unexpectedly"), and the narrowed run then waited forever
# to hand its paused input a line.
S=0
tm() { tmux -L "bkt-$S" -f /dev/null "$@"; }
trap 'for s in 1 2 3; do tmux -L "bkt-$s" kill-server 2>/dev/null; done; rm -rf "$W"' EXIT
trap 'exit 1' INT TERM
cd "$W" || exit 1

if ! command -v tmux >/dev/null; then
    bad "tmux is needed for these tests (make test installs it as root: apt-get install tmux)"
    finish
    exit 1
fi

# run NAME COLS COMMAND: runs COMMAND in a fresh COLS-wide pane and waits
# for it; the pane is left in pane.txt (rows as shown) and joined.txt
# (rows the terminal wrapped joined back).
run() {
    rm -f marker
    tm new-session -d -s p -x "$2" -y 30 "$3; echo done >marker; sleep 60"
    i=0
    while [ ! -f marker ] && [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    tm capture-pane -p -t p | sed '/^$/d' >pane.txt
    tm capture-pane -p -J -t p | sed '/^$/d' >joined.txt
    tm kill-server 2>/dev/null
}

seq 1 3000000 >lines
S=1
run "80 columns" 80 "BLOOMKIT_PROGRESS_INTERVAL=0.02 '$BK' dedup lines >/dev/null"
check "80 columns: the summary is on screen" grep -q '^bloomkit dedup: 3000000 items, 3000000 new' pane.txt
check "80 columns: no bar left behind" sh -c '! grep -q "ETA\|/s " pane.txt'
check "80 columns: nothing wrapped by the terminal" cmp -s pane.txt joined.txt
check "80 columns: only the summary's two lines" test "$(wc -l <pane.txt)" -eq 2

# common: a live count on a terminal, then only its summary.
seq 1 3000000 >a
seq 1500000 4000000 >b
S=2
run "common" 80 "BLOOMKIT_PROGRESS_INTERVAL=0.02 '$BK' common -c a b >/dev/null"
check "common on a terminal: its summary on screen" grep -q '^bloomkit common: 1500001 common lines' pane.txt
check "common on a terminal: nothing else left" test "$(wc -l <pane.txt)" -eq 1

# Narrowed from 120 to 40 columns while the bar of a paused input shows;
# the re-wrapped bar is erased whole by the next redraw.
rm -f go
mkfifo go
S=3
run "narrowed" 120 "{ seq 1 600000; cat go; seq 600001 1200000; } | BLOOMKIT_PROGRESS_INTERVAL=0 '$BK' dedup --progress >/dev/null" &
runner=$!
sleep 1.5
tm resize-window -t p -x 40 2>/dev/null
sleep 0.5
# bounded: a pane that never started never opens the fifo to read
check "narrowed: the paused input was read on" timeout 30 sh -c 'echo >go'
wait $runner
check "narrowed: the summary is on screen" grep -q 'bloomkit dedup: 1200001 items' joined.txt
check "narrowed: no bar left behind" sh -c '! grep -q "/s " joined.txt'
finish
