package native

import (
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
)

// dispatchTransport calls a dispatcher of its own directly. On
// little-endian hosts the dispatcher reads the requests' token and slot
// arrays in place (requestViewer), and keeps a match's tokens as a view
// of the request the engine keeps until its next match (callKeeping), so
// each token crosses from the host to the tree once, in the request.
type dispatchTransport struct{ d *dispatch.Dispatcher }

func newDispatchTransport() *dispatchTransport {
	d := dispatch.New()
	if requestViewer != nil {
		d.SetRequestViewer(requestViewer)
	}
	return &dispatchTransport{d: d}
}

func (t *dispatchTransport) call(req []byte) ([]byte, error) { return t.d.Call(req), nil }

func (t *dispatchTransport) callKeeping(req []byte) ([]byte, error) {
	return t.d.CallKeeping(req), nil
}

func (t *dispatchTransport) close() error {
	t.d = nil
	return nil
}

// NewInProcessEngine returns an Engine that runs the wire protocol of
// package abi in this process: each call is encoded into a request,
// answered by a dispatcher of its own (the very code the WebAssembly
// module runs) and decoded back into core's types. It costs the encoding
// and decoding over [NewDirectEngine], and gives the same results,
// actions and errors as the WebAssembly engine, byte for byte, which
// makes it the fast side of differential tests.
//
// Node ids are opaque and specific to the engine (see [RemoteError] for
// errors). The engine is not safe for concurrent use.
// Errors: those of core.New (a *RemoteError wrapping core.ErrInvalidConfig
// or core.ErrUnknownPolicy).
func NewInProcessEngine(cfg core.Config) (Engine, error) {
	e, err := newWireEngine(cfg, newDispatchTransport())
	if err != nil {
		return nil, err
	}
	return e, nil
}
