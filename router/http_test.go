package router

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
)

func TestHTTP(t *testing.T) {
	r, err := New(Config{})
	require.NoError(t, err)
	toks := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	hs, err := events.BlockHashes(nil, core.HashSGLang, "", toks, 4)
	require.NoError(t, err)
	require.NoError(t, r.AddWorker("a"))
	_, err = r.Ingest(Message{Worker: "b", Batch: events.Batch{Events: []events.Event{
		{Kind: events.BlockStored, BlockHashes: hs, BlockSize: 4, Medium: "GPU"}}}})
	require.NoError(t, err)
	h, err := Handler(r, HTTPOptions{PageSize: 4})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	post := func(path string, body any) (*http.Response, map[string]any) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp, out
	}
	resp, out := post("/route", map[string]any{"tokens": toks, "start": true})
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "b", out["worker"])
	require.EqualValues(t, 2, out["scores"].([]any)[0].(map[string]any)["overlap_blocks"])
	resp, _ = post("/complete", map[string]any{"worker": "b", "blocks": 2})
	require.Equal(t, 200, resp.StatusCode)
	resp, out = post("/complete", map[string]any{"worker": "b", "blocks": 2})
	require.Equal(t, 400, resp.StatusCode)
	require.Contains(t, out["error"], "active blocks")
	resp, _ = post("/route", map[string]any{"tokens": toks, "block_hashes": hs})
	require.Equal(t, 400, resp.StatusCode)

	g, err := http.Get(srv.URL + "/stats")
	require.NoError(t, err)
	var st Stats
	require.NoError(t, json.NewDecoder(g.Body).Decode(&st))
	g.Body.Close()
	require.Equal(t, 2, st.Blocks)
	g, err = http.Get(srv.URL + "/route")
	require.NoError(t, err)
	g.Body.Close()
	require.Equal(t, 405, g.StatusCode)
}
