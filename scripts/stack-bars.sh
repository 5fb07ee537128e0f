#!/usr/bin/env bash
# stack-bars.sh measures the full stack against its core on a Mooncake trace
# and prints each figure beside the bar it is held to:
#
#   - BenchmarkStack_Replay (host/native): core alone and the controller on
#     each engine, wall-clock tokens/s, medians of COUNT runs; the ratios
#     are of medians measured in this one run
#   - BenchmarkStack_RequestAllocs: allocations per request in steady state
#     (direct engine)
#   - `radixkv replay --canary=false` per engine: tokens/s (medians of COUNT)
#     and, for second runs with the compiled module cached, the time from
#     the command's start to its first request, measured from outside
#
# Usage: scripts/stack-bars.sh [trace]   (default ../shared/traces/...)
#        COUNT=5 CAPACITIES="1000000 3000000" scripts/stack-bars.sh
#
# The machine should be quiet: wall-clock figures move with every other
# process. BenchmarkStack_ReplayCPU and BenchmarkStack_CanaryCPU compare
# CPU time instead, which load disturbs less.
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:-../shared/traces/mooncake_synthetic_trace.jsonl}
count=${COUNT:-5}
capacities=${CAPACITIES:-1000000 3000000}
if [ ! -f "$trace" ]; then
	echo "stack-bars: no trace at $trace (give its path as the first argument)" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/native.test" ./host/native
go build -o "$tmp/radixkv" ./cmd/radixkv

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) {print "nan"; exit} if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" -v bar="$3" 'BEGIN {r = a / b; printf "%.2f (bar %.2f: %s)", r, bar, (r >= bar ? "met" : "NOT met")}'; }

echo "== BenchmarkStack_Replay, -benchtime 3x -count $count (trace: the benchmark's own, ../shared)"
(cd host/native && "$tmp/native.test" -test.run '^$' -test.bench 'Stack_Replay$' -test.benchtime 3x -test.count "$count") >"$tmp/bench.txt"
med() { awk -v name="BenchmarkStack_Replay/$1/$2-" 'index($1, name) == 1 && substr($1, length(name) + 1) ~ /^[0-9]+$/ {for (i = 2; i < NF; i++) if ($(i+1) == "tokens/s") print $i}' "$tmp/bench.txt" | median; }
for m in 1M 3M; do
	core=$(med core $m) direct=$(med direct $m) canary=$(med direct+canary $m) inproc=$(med inprocess $m) wasm=$(med wasm $m)
	printf '%s  M tokens/s: core %.0f  direct %.0f  direct+canary %.0f  inprocess %.0f  wasm %.0f\n' "$m" \
		"$(awk -v x="$core" 'BEGIN{print x/1e6}')" "$(awk -v x="$direct" 'BEGIN{print x/1e6}')" "$(awk -v x="$canary" 'BEGIN{print x/1e6}')" \
		"$(awk -v x="$inproc" 'BEGIN{print x/1e6}')" "$(awk -v x="$wasm" 'BEGIN{print x/1e6}')"
	echo "    direct/core       $(ratio "$direct" "$core" 0.50)"
	echo "    inprocess/direct  $(ratio "$inproc" "$direct" 0.70)"
	echo "    wasm/direct       $(ratio "$wasm" "$direct" 0.40)"
	echo "    canary on/off     $(ratio "$canary" "$direct" 0.50)"
done

echo "== BenchmarkStack_RequestAllocs, 16000 requests after a warm-up pass (bar: 0)"
(cd host/native && "$tmp/native.test" -test.run '^$' -test.bench 'Stack_RequestAllocs' -test.benchtime 16000x) |
	awk '/^BenchmarkStack_RequestAllocs/ {for (i = 2; i < NF; i++) if ($(i+1) == "allocs/request") printf "    %s  %s allocs/request\n", $1, $i}'

echo "== radixkv replay --canary=false, $count runs each (second runs: compiled module cached)"
field() { grep -o "\"$1\": *[-0-9.e+]*" | head -1 | cut -d: -f2 | tr -d " "; }
for c in $capacities; do
	for e in direct inprocess wasm; do
		"$tmp/radixkv" replay --engine "$e" --trace "$trace" --capacity "$c" --canary=false --json --quiet >/dev/null # fills the cache
		: >"$tmp/tps" && : >"$tmp/first"
		for _ in $(seq "$count"); do
			t0=$(date +%s%N)
			out=$("$tmp/radixkv" replay --engine "$e" --trace "$trace" --capacity "$c" --canary=false --json --quiet)
			echo "$out" | field tokens_per_sec >>"$tmp/tps"
			awk -v a="$(echo "$out" | field first_request_unix_ns)" -v b="$t0" 'BEGIN {printf "%.1f\n", (a - b) / 1e6}' >>"$tmp/first"
		done
		tps=$(median <"$tmp/tps") first=$(median <"$tmp/first")
		eval "tps_$e=$tps"
		printf '    capacity %-8s %-10s %6.1f M tokens/s   first request after %6.1f ms (bar 100)\n' "$c" "$e" "$(awk -v x="$tps" 'BEGIN{print x/1e6}')" "$first"
	done
	echo "    capacity $c: inprocess/direct $(ratio "$tps_inprocess" "$tps_direct" 0.70), wasm/direct $(ratio "$tps_wasm" "$tps_direct" 0.40)"
done
