# Developer entry points. CI runs .ci/run, which calls `make check`.

GO ?= go

.PHONY: test race bench check binaries-check fuzz fuzz-abi simulate soak demo

test:
	$(GO) test ./...

race:
	$(GO) test -race ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt

# check fails on unformatted files, vet findings, a core that does not build
# for wasip1, a go.mod/go.sum that `go mod tidy` would change, or a tracked
# binary file other than the committed module (binaries-check).
check: binaries-check
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) build ./core/...
	$(GO) mod tidy
	git diff --exit-code -- go.mod go.sum

# binaries-check fails when a tracked file other than the committed module
# is binary (git's --eol reports i/-text for a file with binary content).
binaries-check:
	@bins="$$(git ls-files --eol | awk '$$1 == "i/-text" { sub(/^[^\t]*\t/, ""); print }' | grep -vx 'wasmmod/radixkv.wasm' || true)"; \
	if [ -n "$$bins" ]; then echo "binary files are tracked (only wasmmod/radixkv.wasm may be; build outputs belong in .gitignore):"; echo "$$bins"; exit 1; fi

fuzz:
	$(GO) test ./core -run '^$$' -fuzz '^FuzzOps$$' -fuzztime 20s -fuzzminimizetime 5s
	$(GO) test ./core -run '^$$' -fuzz '^FuzzHybridOps$$' -fuzztime 20s -fuzzminimizetime 5s
	$(GO) test ./events -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 20s -fuzzminimizetime 5s
	$(GO) test ./router -run '^$$' -fuzz '^FuzzRestoreBody$$' -fuzztime 20s -fuzzminimizetime 5s
	$(GO) test ./wasmmod -run '^$$' -fuzz '^FuzzModuleCall$$' -fuzztime 20s -fuzzminimizetime 5s

# fuzz-abi drives long-lived radixkv.wasm instances with CALLS random and
# mutated calls (split over WORKERS instances, one per CPU by default),
# checking every answer against abi/SPEC.md and the in-process dispatcher
# (internal/abifuzz). make fuzz-abi CALLS=10000000 runs 10^7 calls.
CALLS ?= 1000000
WORKERS ?= 0
SEED ?= 1
fuzz-abi:
	$(GO) test ./internal/abifuzz -run '^TestABIFuzz$$' -count=1 -v -timeout 0 \
		-abifuzz.calls=$(CALLS) -abifuzz.workers=$(WORKERS) -abifuzz.seed=$(SEED)

demo:
	$(GO) run ./cmd/radixkv replay

# simulate runs the deterministic simulator with every fault on every
# component set and engine (OPS steps each); soak keeps running new seeds
# until DURATION has passed (make soak DURATION=2h), stopping at the first
# violation with its shrunk reproduction.
OPS ?= 100000
DURATION ?= 10m
simulate:
	$(GO) run ./cmd/radixkv simulate --seed $(SEED) --ops $(OPS) --faults all --engine all --components all
soak:
	$(GO) run ./cmd/radixkv simulate --seed $(SEED) --ops $(OPS) --faults all --engine direct --components all --duration $(DURATION)

# wasm rebuilds the committed WebAssembly module. The flags make the build
# reproducible for a given Go version; wasm-check rebuilds into a
# temporary file and fails when it differs from the committed module.
WASM_BUILD = GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -buildvcs=false -ldflags='-s -buildid='

.PHONY: wasm wasm-check

wasm:
	$(WASM_BUILD) -o wasmmod/radixkv.wasm ./wasm

wasm-check:
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	$(WASM_BUILD) -o "$$tmp/radixkv.wasm" ./wasm && \
	if cmp -s "$$tmp/radixkv.wasm" wasmmod/radixkv.wasm; then echo "wasmmod/radixkv.wasm is up to date ($$($(GO) env GOVERSION))"; \
	else echo "wasmmod/radixkv.wasm differs from a fresh build with $$($(GO) env GOVERSION); run make wasm"; exit 1; fi
