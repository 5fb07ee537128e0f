package native

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcript"
	"github.com/radixkv/radixkv/internal/transcripttest"
	"github.com/stretchr/testify/require"
)

var tapeDir = flag.String("tape-dir", "", "write the wire tape of each transcript (core/testdata) run on radixkv.wasm to this directory")

// tapeCall is one call of a tape: the engine (module instance) it went
// to, in creation order, and the request and response bytes in hex.
type tapeCall struct {
	Engine   int    `json:"engine"`
	Request  string `json:"request"`
	Response string `json:"response"`
}

// tapeTransport records every call through a wasm guest.
type tapeTransport struct {
	g     *wasmGuest
	n     int
	calls *[]tapeCall
}

func (t *tapeTransport) call(req []byte) ([]byte, error) {
	resp, err := t.g.call(req)
	if err == nil {
		*t.calls = append(*t.calls, tapeCall{t.n, hex.EncodeToString(req), hex.EncodeToString(resp)})
	}
	return resp, err
}

func (t *tapeTransport) close() error { return t.g.close() }

// TestWireTapes writes, with -tape-dir, the wire tapes the playground's
// browser test replays: each core transcript run on radixkv.wasm under
// wazero (checked against its recorded output as TestEngines_Transcripts
// does), with every request and response in order. Another WebAssembly
// host that sends the same requests to fresh instances of the module must
// get the same bytes back.
func TestWireTapes(t *testing.T) {
	if *tapeDir == "" {
		t.Skip("-tape-dir not set: no wire tapes to write")
	}
	if transcript.Rewriting() {
		t.Skip("the scripts are owned by core")
	}
	require.NoError(t, os.MkdirAll(*tapeDir, 0o755))
	rt, err := SharedWasmRuntime()
	require.NoError(t, err)
	paths, err := filepath.Glob("../../core/testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			script, masked := maskCoreOnly(string(data))
			require.Empty(t, unsupportedCommand(script))
			if masked > 0 {
				path = filepath.Join(t.TempDir(), filepath.Base(path))
				require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
			}
			var calls []tapeCall
			engines := 0
			ctor := func(cfg core.Config) (Engine, error) {
				g, err := rt.instantiate(context.Background())
				if err != nil {
					return nil, err
				}
				engines++
				return newWireEngine(cfg, &tapeTransport{g: g, n: engines - 1, calls: &calls})
			}
			transcripttest.Run(t, path, engineOptions(ctor))
			require.NotEmpty(t, calls)
			out, err := json.Marshal(map[string]any{"transcript": name, "engines": engines, "calls": calls})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(*tapeDir, name+".json"), out, 0o644))
		})
	}
}
