package playground

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	jscodec "github.com/radixkv/radixkv/abi/js"
	"github.com/radixkv/radixkv/wasmmod"
)

// static holds the page, its scripts and styles and the vendored WASI shim.
// Tests, the Node package files and the vendoring script stay out.
//
//go:embed index.html *.css *.mjs vendor/browser_wasi_shim
var static embed.FS

// Paths under which the handler serves the two files that live elsewhere
// in the repository. They mirror the repository layout, so that the
// page's relative imports (../abi/js/codec.mjs) resolve the same way when
// the page is served by this handler, by any static server from the
// repository root, or read by Node from disk.
const (
	CodecPath  = "/abi/js/codec.mjs"
	ModulePath = "/wasmmod/radixkv.wasm"
)

// Files lists the paths the handler serves, sorted; every one comes from
// the binary.
func Files() ([]string, error) {
	out := []string{CodecPath, ModulePath}
	err := fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		out = append(out, "/"+p)
		return nil
	})
	return out, err
}

// Handler serves the playground: the page at "/", its assets, the JS codec
// and the WebAssembly module, all from memory. It answers GET and HEAD
// only, 404 for anything else it does not hold, and never touches the
// network or the file system.
func Handler() http.Handler {
	files := http.FileServer(http.FS(static))
	modTime := time.Unix(0, 0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		p := path.Clean("/" + r.URL.Path)
		switch {
		case p == CodecPath:
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			http.ServeContent(w, r, "codec.mjs", modTime, bytes.NewReader(jscodec.Codec))
			return
		case p == ModulePath:
			w.Header().Set("Content-Type", "application/wasm")
			http.ServeContent(w, r, "radixkv.wasm", modTime, bytes.NewReader(wasmmod.Module))
			return
		case strings.HasSuffix(p, ".mjs") || strings.HasSuffix(p, ".js"):
			// Module scripts need a JavaScript type; .mjs is not in every
			// system's MIME table.
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		}
		files.ServeHTTP(w, r)
	})
}

// Listen opens addr (host:port; port 0 picks a free one) on TCP and returns
// the listener and the page's URL. An address without a host listens on
// the loopback only: the playground is a local tool.
func Listen(addr string) (net.Listener, string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("playground: address %q: %w (want host:port, e.g. 127.0.0.1:8080)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, "", fmt.Errorf("playground: %w", err)
	}
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		_ = ln.Close()
		return nil, "", errors.New("playground: listener is not TCP")
	}
	shown := host
	if a.IP.IsUnspecified() {
		shown = "127.0.0.1"
	}
	return ln, "http://" + net.JoinHostPort(shown, fmt.Sprint(a.Port)) + "/", nil
}
