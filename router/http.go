package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
)

// HTTPOptions tell the HTTP endpoint how workers hash tokens, for
// queries that send tokens instead of block hashes.
type HTTPOptions struct {
	PageSize   int
	Convention core.HashConvention
	// MaxBody bounds a request body in bytes (0 means 8 MiB).
	MaxBody int64
}

// routeQuery is the body of POST /route.
type routeQuery struct {
	BlockHashes []int64  `json:"block_hashes"`
	Tokens      []uint32 `json:"tokens"`
	CacheSalt   string   `json:"cache_salt"`
	Workers     []string `json:"workers"`
	// Start adds the request's blocks to the chosen worker's load.
	Start bool `json:"start"`
}

type loadUpdate struct {
	Worker string `json:"worker"`
	Blocks int64  `json:"blocks"`
}

// Handler serves the router over HTTP with JSON bodies:
//
//	POST /route     {"block_hashes":[...]} or {"tokens":[...], "cache_salt":""},
//	                optional "workers":[...], "start":true → a Decision
//	POST /complete  {"worker":"w0","blocks":12} → {} (ends in-flight load)
//	GET  /stats     → Stats
//	GET  /snapshot  → the binary snapshot (application/octet-stream)
//
// Errors answer {"error": "..."} with status 400 (bad input) or 405.
func Handler(r *Router, opt HTTPOptions) (http.Handler, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: nil router", ErrInvalid)
	}
	if opt.PageSize < 0 || opt.MaxBody < 0 {
		return nil, fmt.Errorf("%w: negative page size or body limit", ErrInvalid)
	}
	if opt.MaxBody == 0 {
		opt.MaxBody = 8 << 20
	}
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter, code int, err error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	decode := func(w http.ResponseWriter, req *http.Request, v any) bool {
		if req.Method != http.MethodPost {
			fail(w, http.StatusMethodNotAllowed, errors.New("use POST"))
			return false
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, opt.MaxBody))
		if err == nil {
			err = json.Unmarshal(body, v)
		}
		if err != nil {
			fail(w, http.StatusBadRequest, fmt.Errorf("bad JSON body: %w", err))
			return false
		}
		return true
	}
	mux.HandleFunc("/route", func(w http.ResponseWriter, req *http.Request) {
		var q routeQuery
		if !decode(w, req, &q) {
			return
		}
		hashes := q.BlockHashes
		if len(q.Tokens) > 0 {
			if len(hashes) > 0 {
				fail(w, http.StatusBadRequest, errors.New("give block_hashes or tokens, not both"))
				return
			}
			if opt.PageSize < 1 {
				fail(w, http.StatusBadRequest, errors.New("this router was started without a page size; send block_hashes"))
				return
			}
			var err error
			if hashes, err = events.BlockHashes(nil, opt.Convention, q.CacheSalt, q.Tokens, opt.PageSize); err != nil {
				fail(w, http.StatusBadRequest, err)
				return
			}
		}
		d, err := r.Route(Request{BlockHashes: hashes, Workers: q.Workers})
		if err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		if q.Start {
			if err := r.Start(d.Worker, int64(len(hashes))); err != nil {
				fail(w, http.StatusBadRequest, err)
				return
			}
		}
		reply(w, d)
	})
	mux.HandleFunc("/complete", func(w http.ResponseWriter, req *http.Request) {
		var u loadUpdate
		if !decode(w, req, &u) {
			return
		}
		if err := r.Complete(u.Worker, u.Blocks); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		reply(w, struct{}{})
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, req *http.Request) {
		reply(w, r.Stats())
	})
	mux.HandleFunc("/snapshot", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(r.Snapshot())
	})
	return mux, nil
}
