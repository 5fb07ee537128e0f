package wasmmod_test

import (
	"context"
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
)

// trivialCalls are the requests of BenchmarkCall: a version query, the
// cheapest command, and an error reply, the cheapest failure.
func trivialCalls() map[string][]byte {
	return map[string][]byte{
		"version": abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion}),
		"stats":   abi.AppendRequest(nil, &abi.Request{Op: abi.OpStats, Instance: 1}),
		"error":   abi.AppendRequest(nil, &abi.Request{Op: abi.OpStats, Instance: 99}),
		"match16": abi.AppendRequest(nil, &abi.Request{Op: abi.OpMatch, Instance: 1,
			Insert: core.InsertParams{Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}}),
	}
}

var createReq = abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1}})

// BenchmarkCall is the fixed cost of one call: through a long-lived
// module instance (request copied in, response copied out, as every
// embedder does) and through the native dispatcher.
func BenchmarkCall(b *testing.B) {
	for name, req := range trivialCalls() {
		b.Run("wasm/"+name, func(b *testing.B) {
			g := newFastGuest(b)
			g.roundTrip(createReq)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				g.roundTrip(req)
			}
		})
		b.Run("native/"+name, func(b *testing.B) {
			d := dispatch.New()
			d.Call(createReq)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				d.Call(req)
			}
		})
	}
}

// fastGuest is a module instance driven the way an embedder should: one
// request buffer for every call, CallWithStack, no allocation per call.
type fastGuest struct {
	g     *guest
	ctx   context.Context
	buf   uint32
	cap   uint32
	stack []uint64
	out   []byte
}

func newFastGuest(t testing.TB) *fastGuest {
	ctx := context.Background()
	g := instantiate(t)
	f := &fastGuest{g: g, ctx: ctx, stack: make([]uint64, 2)}
	f.ensure(64 << 10)
	return f
}

func (f *fastGuest) ensure(n uint32) {
	if n <= f.cap {
		return
	}
	if f.buf != 0 {
		f.stack[0] = uint64(f.buf)
		if err := f.g.free.CallWithStack(f.ctx, f.stack); err != nil {
			panic(err)
		}
	}
	f.stack[0] = uint64(n)
	if err := f.g.alloc.CallWithStack(f.ctx, f.stack); err != nil {
		panic(err)
	}
	f.buf, f.cap = uint32(f.stack[0]), n
}

// roundTrip returns the response, valid until the next call; it panics
// on a trap or an out-of-range response (callers recover or report).
func (f *fastGuest) roundTrip(req []byte) []byte {
	f.ensure(uint32(len(req)))
	if !f.g.mod.Memory().Write(f.buf, req) {
		panic("request write out of range")
	}
	f.stack[0], f.stack[1] = uint64(f.buf), uint64(len(req))
	if err := f.g.call.CallWithStack(f.ctx, f.stack); err != nil {
		panic(err)
	}
	out, ok := f.g.mod.Memory().Read(uint32(f.stack[0]>>32), uint32(f.stack[0]))
	if !ok {
		panic("response out of range")
	}
	return out
}
