package playground_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/radixkv/radixkv/playground"
)

// The handler serves the page and everything it loads from the binary.
func ExampleHandler() {
	srv := httptest.NewServer(playground.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + playground.ModulePath)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	// Output: 200 application/wasm
}
