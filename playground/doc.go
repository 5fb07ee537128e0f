// Package playground is the browser playground: a static page that runs the
// very radixkv.wasm the Go hosts embed, in a Web Worker through the
// @bjorn3/browser_wasi_shim WASI shim (vendored under vendor/, MIT or
// Apache-2.0), speaking the ABI with the shared JS codec
// (abi/js/codec.mjs), against JS mock pools that store real bytes.
//
// Serve it with
//
//	radixkv playground [--addr 127.0.0.1:8080]
//
// which prints the URL. Every asset is embedded in the binary ([Handler]):
// the page works offline, with no CDN.
//
// # Files
//
//   - index.html, style.css: the page.
//   - app.mjs: the UI (controls, stepping, drag and drop of a
//     `radixkv record` log); render.mjs draws the tree, the pools, the
//     logs and the hit-rate chart as SVG and DOM.
//   - worker.mjs: the Web Worker that owns the module and the session.
//   - wasi.mjs: instantiates the module through the shim (browser and
//     Node alike); engine.mjs: one cache instance over the ABI.
//   - pools.mjs: mock KV pools (device and host) with real slot bytes and
//     the KV canary.
//   - driver.mjs: the controller, a port of the host duties of
//     host/native's Controller: match and lock, allocation with eviction,
//     resumable inserts, every action kind, the Full→SWA slot mapping,
//     window slides and early SWA unlocks, Mamba state forks, checkpoints
//     and donations, write-through and write-back backups, load-backs and
//     host eviction for every component, decode (extend), and an
//     asynchronous transfer mode whose copies complete a user-set number
//     of steps later. Six recorded Go runs (testdata/go-run.log,
//     go-hybrid.log; counters in go-run.json, kept true by
//     cmd/radixkv's TestPlayground_GoRunFixture) replay to Go's counters.
//   - session.mjs: a deterministic, replayable list of steps (scenario
//     requests, manual operations, a command log) over a driver; stepping
//     back replays from the start.
//   - scenarios.mjs: the built-in scenarios; cmdlog.mjs parses command logs.
//
// Tests: `node --test playground/test/` (pools, driver, golden vectors,
// a recorded Go run, the transcript tapes) and the browser test
// playground/test/browser.mjs (Chromium through playwright-core), both
// run by .ci/run. The vendored shim is refreshed with
// playground/vendor/update.sh.
package playground
