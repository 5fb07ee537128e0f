#!/usr/bin/env bash
# gpu-check.sh: the GPU part of radixkv's checks, as one prepared script.
#
#   scripts/gpu-check.sh --build-only   # here (Go, gcc): build the binaries into bin/gpu-check
#   scripts/gpu-check.sh                # on the GPU machine: run them and print a table
#   GPU_CHECK_FAKE=1 scripts/gpu-check.sh   # a dry run of the script on the fake driver (no GPU
#                                           # figures: host memcpy speeds at 1/64 of the sizes)
#
# The GPU machine needs no Go toolchain and no network: the binaries are
# built here with cgo on for linux/amd64 (`go test -c` for host/cuda, `go
# build` for the CLI) and need only libc and the CUDA driver at run time
# (libcuda.so.1 is dlopened). Carry bin/gpu-check with the tree. Outputs go
# to $OUT (the device runner's folder) or bin/gpu-check/out. Under 5
# minutes on one H100/H200: every step has its own timeout (90 + 60 + 75 +
# 60 s at most). Rebuild with --build-only after changing the code: a run
# uses the binaries it finds.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${GPU_CHECK_BIN:-bin/gpu-check}
OUTDIR=${OUT:-$BIN/out}
FAKE=${GPU_CHECK_FAKE:-}
POOLS=cuda
if [ -n "$FAKE" ]; then
	export RADIXKV_CUDA_BENCH_FAKE=1
	POOLS=cuda-fake
	echo "gpu-check: DRY RUN on the fake driver; nothing below is a GPU figure"
fi

build() {
	mkdir -p "$BIN"
	export PATH=/usr/local/go/bin:$PATH
	CGO_ENABLED=1 GOOS=linux GOARCH=amd64 go test -c -o "$BIN/cuda.test" ./host/cuda &&
		CGO_ENABLED=1 GOOS=linux GOARCH=amd64 go build -o "$BIN/radixkv" ./cmd/radixkv || return 1
	echo "built $BIN/cuda.test and $BIN/radixkv; run-time libraries:"
	ldd "$BIN/cuda.test" | sed 's/^/  /'
}

if [ "${1:-}" = "--build-only" ]; then
	build || exit 1
	exit 0
fi
if [ ! -x "$BIN/cuda.test" ] || [ ! -x "$BIN/radixkv" ]; then
	if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
		build || exit 1
	else
		echo "gpu-check: no binaries in $BIN and no Go toolchain; run scripts/gpu-check.sh --build-only first" >&2
		exit 1
	fi
fi
mkdir -p "$OUTDIR"
status=0
step() { echo; echo "== $*"; }

step "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"

step "GPU tests (kernel JIT, transfer model, controller workload with the canary)"
timeout 90 "$BIN/cuda.test" -test.run 'TestLoad_RealDriver|TestGPU_' -test.v -test.count=1 >"$OUTDIR/tests.txt" 2>&1
rc=$?
grep -E '^(=== RUN|--- |    --- |PASS|FAIL|ok)|skipped|mismatch' "$OUTDIR/tests.txt" | grep -v '=== RUN' | head -40
[ $rc -eq 0 ] || { echo "GPU tests failed (rc $rc): see $OUTDIR/tests.txt"; status=1; }
if [ -z "$FAKE" ] && grep -q 'GPU test skipped' "$OUTDIR/tests.txt"; then
	echo "GPU tests skipped: no driver or device here"; status=1
fi

if command -v compute-sanitizer >/dev/null; then
	step "compute-sanitizer memcheck (transfer model, kernel)"
	timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/cuda.test" -test.short -test.run 'TestGPU_Kernel|TestGPU_TransferModel' >"$OUTDIR/sanitizer.txt" 2>&1
	rc=$?
	tail -3 "$OUTDIR/sanitizer.txt"
	[ $rc -eq 0 ] || { echo "compute-sanitizer: rc $rc"; status=1; }
else
	step "compute-sanitizer: not on this machine"
fi

step "transfer benchmark (512 MiB batches; GB/s by wall time, the batch vs one contiguous copy of the same bytes)"
timeout 75 "$BIN/cuda.test" -test.run '^$' -test.bench 'BenchmarkTransfer' -test.benchtime 10x >"$OUTDIR/bench.txt" 2>&1
rc=$?
awk '/^BenchmarkTransfer\// {
	split($1, p, "/"); sub(/-[0-9]+$/, "", p[6])
	gb = ""; cg = ""; pc = ""; ev = ""
	for (i = 2; i <= NF; i++) {
		if ($i == "GB/s") gb = $(i-1)
		if ($i == "contig-GB/s") cg = $(i-1)
		if ($i == "%contig") pc = $(i-1)
		if ($i == "event-GB/s") ev = $(i-1)
	}
	if (!hdr) { printf "%-4s %-9s %-8s %-11s %-7s %9s %12s %9s %11s\n", "dir", "page", "per-tok", "list", "mode", "GB/s", "contig GB/s", "% contig", "event GB/s"; hdr = 1 }
	printf "%-4s %-9s %-8s %-11s %-7s %9.2f %12.2f %9.1f %11s\n", p[2], p[3], p[4], p[5], p[6], gb, cg, pc, ev
}' "$OUTDIR/bench.txt"
[ $rc -eq 0 ] || { echo "benchmark failed (rc $rc): see $OUTDIR/bench.txt"; tail -5 "$OUTDIR/bench.txt"; status=1; }

step "radixkv replay --pools $POOLS (llama-3-8b geometry, or tiny on the fake; host tier, canary on device)"
timeout 60 "$BIN/radixkv" replay --pools $POOLS --engine direct --requests 300 --capacity 50000 --host-capacity 150000 --cuda-copy auto --quiet >"$OUTDIR/replay.txt" 2>&1
rc=$?
grep -E 'hit rate|host tier|bytes moved|pools|geometry|batched|bandwidth|synchronous|canary|^time' "$OUTDIR/replay.txt"
[ $rc -eq 0 ] || { echo "replay failed (rc $rc)"; tail -5 "$OUTDIR/replay.txt"; status=1; }

echo
[ $status -eq 0 ] && echo "gpu-check: ok" || echo "gpu-check: FAILED (details in $OUTDIR)"
exit $status
