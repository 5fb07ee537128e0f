# Developer entry points. CI runs .ci/run, which calls `make check`.

GO ?= go

.PHONY: test race bench check fuzz demo

test:
	$(GO) test ./...

race:
	$(GO) test -race ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt

# check fails on unformatted files, vet findings, a core that does not build
# for wasip1, or a go.mod/go.sum that `go mod tidy` would change.
check:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) build ./core/...
	$(GO) mod tidy
	git diff --exit-code -- go.mod go.sum

fuzz:
	$(GO) test ./core -run '^$$' -fuzz '^FuzzOps$$' -fuzztime 20s

demo:
	$(GO) run ./examples/quickstart
