#!/bin/sh
# A fleet of W tool workers (1, 4, 8) on one seen-set: one redis-server
# against a local 3-master cluster, same machine, same URLs (N, default
# 4M; a tenth with BK_BENCH_QUICK=1), URLs/s as the median of 3 rounds.
# The servers are REDIS_SERVER / REDIS_CLI (default redis-server and
# redis-cli on PATH) with MODULE (default BUILD/bloomkit.so) on four ports
# from BK_FLEET_PORT (default 7000; the cluster's bus on each + 10000),
# skipped with a message when one is taken. On 2 cores the servers
# and workers share the cores; docs/BENCHMARKS.md has a 16-core run.
set -u
BUILD=${BUILD:-build}
BK=${BK:-$BUILD/bloomkit}
MODULE=${MODULE:-$(cd "$BUILD" && pwd)/bloomkit.so}
N=${N:-4000000}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && N=$((N / 10))
command -v "${REDIS_SERVER:-redis-server}" >/dev/null || { echo "bench/fleet_workers.sh: no redis-server, skipped"; exit 0; }
T=/tmp/fleet; rm -rf $T; mkdir -p $T
srv() { ${REDIS_SERVER:-redis-server} "$@"; }
cli() { ${REDIS_CLI:-redis-cli} "$@"; }
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "https://www.example%d.com/dir%d/page-%d.html\n", i % 997, i % 1000, i }' >$T/all
for W in 1 4 8; do mkdir -p $T/w$W; (cd $T/w$W && split -n l/$W -d ../all part); done
P0=${BK_FLEET_PORT:-7000} P1=$((${BK_FLEET_PORT:-7000} + 1))
P2=$((P1 + 1)) P3=$((P1 + 2))
for p in $P0 $P1 $P2 $P3; do
    if cli -p $p ping >/dev/null 2>&1; then echo "bench/fleet_workers.sh: port $p is taken (set BK_FLEET_PORT), skipped"; exit 0; fi
done
for p in $P0 $P1 $P2 $P3; do
    mkdir -p $T/n$p
    extra=""; [ $p != $P0 ] && extra="--cluster-enabled yes --cluster-config-file nodes.conf"
    srv --port $p --dir $T/n$p --save '' --appendonly no --daemonize yes --logfile $T/n$p/log \
        --loadmodule "$MODULE" $extra || { echo "server $p failed"; cat $T/n$p/log; exit 1; }
done
sleep 1
cli --cluster create 127.0.0.1:$P1 127.0.0.1:$P2 127.0.0.1:$P3 --cluster-replicas 0 --cluster-yes >/dev/null 2>&1
i=0; while [ $i -lt 100 ] && ! cli -p $P1 cluster info | grep -q cluster_state:ok; do sleep 0.1; i=$((i+1)); done
rate() { # URL W: seconds for W workers on the split input
    t0=$(date +%s.%N)
    for f in $T/w$2/part*; do "$BK" dedup -q --normalize url --redis "$1" "$f" >/dev/null & done
    wait
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN { printf "%.0f\n", n / (b - a) }'
}
echo "## A fleet of workers: one server against a 3-master cluster (bench/fleet_workers.sh)"
echo
echo "$N URLs split among the workers, $(nproc) CPUs, median of 3"
echo
echo "| workers | one server (URLs/s) | 3-master cluster (URLs/s) | cluster / server |"
echo "|---:|---:|---:|---:|"
for W in 1 4 8; do
    : >$T/s; : >$T/c
    for r in 1 2 3; do
        "$BK" dedup --redis redis://127.0.0.1:$P0/s$W$r -n 1e8 -p 0.001 </dev/null
        rate redis://127.0.0.1:$P0/s$W$r $W >>$T/s
        "$BK" dedup --redis redis://127.0.0.1:$P1/c$W$r -n 1e8 -p 0.001 </dev/null
        rate redis://127.0.0.1:$P1/c$W$r $W >>$T/c
        for p in $P0 $P1 $P2 $P3; do cli -p $p flushall >/dev/null; done
    done
    s=$(sort -n $T/s | sed -n 2p); c=$(sort -n $T/c | sed -n 2p)
    awk -v w=$W -v s=$s -v c=$c 'BEGIN { printf "| %d | %.0fk | %.0fk | %.2fx |\n", w, s / 1e3, c / 1e3, c / s }'
done
for p in $P0 $P1 $P2 $P3; do cli -p $p shutdown nosave >/dev/null 2>&1; done
