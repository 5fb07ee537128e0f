package native

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// threadCPU is the calling thread's CPU time (user and system). The
// caller locks its goroutine to the thread.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// splitTransport wraps a wire engine's transport and charges the CPU
// time of each call (the export call into the module, or the in-process
// dispatcher) to the guest, by op, with the bytes each way.
type splitTransport struct {
	inner transport
	guest time.Duration
	calls int64
	req   int64 // request bytes handed over as bytes (not in place)
	resp  int64
	ops   map[abi.Op]*opSplit
}

type opSplit struct {
	calls, bytes int64
	cpu          time.Duration
}

func (s *splitTransport) charge(op abi.Op, dt time.Duration, req, resp int) {
	o := s.ops[op]
	if o == nil {
		o = &opSplit{}
		s.ops[op] = o
	}
	o.calls++
	o.cpu += dt
	o.bytes += int64(req + resp)
	s.guest += dt
	s.calls++
	s.req += int64(req)
	s.resp += int64(resp)
}

func (s *splitTransport) call(req []byte) ([]byte, error) {
	var op abi.Op
	if len(req) >= 8 {
		op = abi.Op(uint16(req[6]) | uint16(req[7])<<8) // the header's op field
	}
	t0 := threadCPU()
	out, err := s.inner.call(req)
	s.charge(op, threadCPU()-t0, len(req), len(out))
	return out, err
}

func (s *splitTransport) close() error { return s.inner.close() }

// splitInPlace is a splitTransport over a guest that encodes requests
// straight into its memory; that encoding is charged to the guest.
type splitInPlace struct{ *splitTransport }

func (s splitInPlace) callInPlace(q *abi.Request) ([]byte, error) {
	t0 := threadCPU()
	out, err := s.inner.(inPlaceTransport).callInPlace(q)
	s.charge(q.Op, threadCPU()-t0, 0, len(out))
	return out, err
}

// splitKeeping is a splitTransport over the in-process dispatcher, whose
// matches go by callKeeping as without the wrapper.
type splitKeeping struct{ *splitTransport }

func (s splitKeeping) callKeeping(req []byte) ([]byte, error) {
	t0 := threadCPU()
	out, err := s.inner.(keepingTransport).callKeeping(req)
	s.charge(abi.Op(uint16(req[6])|uint16(req[7])<<8), threadCPU()-t0, len(req), len(out))
	return out, err
}

// splitKeepingInPlace is a splitInPlace over the wasm guest, whose
// matches go by radixkv_call_keeping as without the wrapper.
type splitKeepingInPlace struct{ splitInPlace }

func (s splitKeepingInPlace) canKeep() bool { return s.inner.(keepingInPlaceTransport).canKeep() }

func (s splitKeepingInPlace) callKeepingInPlace(q *abi.Request) ([]byte, error) {
	t0 := threadCPU()
	out, err := s.inner.(keepingInPlaceTransport).callKeepingInPlace(q)
	s.charge(q.Op, threadCPU()-t0, 0, len(out))
	return out, err
}

// BenchmarkStack_WasmSplit replays the shared trace as
// BenchmarkStack_Replay does, through the wasm and in-process engines
// (and direct, for the ratio), and splits each replay's thread CPU time
// into the guest's part (inside the transport's call: for wasm, the
// export call and the in-place encoding of the request) and the host's
// (the controller, its pools, the wire engine's encoding and decoding).
// CPU time, not wall time, so that other load on the machine disturbs
// the split less. Also reported: calls and bytes per request, kernel time
// and page faults per replay (a fresh module instance touches its guest
// heap page by page), and with -test.v each op's share.
//
//	go test ./host/native -run '^$' -bench 'Stack_WasmSplit' -benchtime 2x -v
func BenchmarkStack_WasmSplit(b *testing.B) {
	reqs := loadSharedTrace(b)
	var input int64
	for k := range reqs {
		input += int64(len(reqs[k].Tokens))
	}
	const page = 16
	for _, kind := range []string{"direct", "inprocess", "wasm"} {
		for _, capacity := range []int{1_000_000, 3_000_000} {
			b.Run(fmt.Sprintf("%s/%dM", kind, capacity/1_000_000), func(b *testing.B) {
				var cpu, sys, wall time.Duration
				var faults int64
				var st *splitTransport
				for b.Loop() {
					b.StopTimer()
					st = &splitTransport{ops: map[abi.Op]*opSplit{}}
					eng := splitEngine(b, kind, st)
					pool, err := NewPagedMemPool(capacity, 0, page)
					if err != nil {
						b.Fatal(err)
					}
					c, err := NewController(eng, NewPoolSet(pool), ControllerConfig{})
					if err != nil {
						b.Fatal(err)
					}
					*st = splitTransport{inner: st.inner, ops: map[abi.Op]*opSplit{}} // not the create call
					runtime.LockOSThread()
					var ru0, ru1 syscall.Rusage
					const rusageThread = 1
					_ = syscall.Getrusage(rusageThread, &ru0)
					b.StartTimer()
					t0, c0 := time.Now(), threadCPU()
					for i := range reqs {
						if err := serveOne(c, &reqs[i]); err != nil {
							b.Fatalf("request %d: %v", i, err)
						}
					}
					cpu += threadCPU() - c0
					wall += time.Since(t0)
					b.StopTimer()
					_ = syscall.Getrusage(rusageThread, &ru1)
					runtime.UnlockOSThread()
					sys += time.Duration(syscall.TimevalToNsec(ru1.Stime) - syscall.TimevalToNsec(ru0.Stime))
					faults += ru1.Minflt - ru0.Minflt
					if err := c.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				n, per := float64(len(reqs)), 1e3/float64(b.N)
				b.ReportMetric(float64(input*int64(b.N))/wall.Seconds(), "tokens/s")
				b.ReportMetric(cpu.Seconds()*per, "cpu-ms/replay")
				// st holds the last replay's calls.
				b.ReportMetric(st.guest.Seconds()*1e3, "guest-ms/replay")
				b.ReportMetric(cpu.Seconds()*per-st.guest.Seconds()*1e3, "host-ms/replay")
				b.ReportMetric(sys.Seconds()*per, "sys-ms/replay")
				b.ReportMetric(float64(faults)*per/1e3, "faults/replay")
				b.ReportMetric(float64(st.calls)/n, "calls/req")
				b.ReportMetric(float64(st.req)/n, "reqB/req")
				b.ReportMetric(float64(st.resp)/n, "respB/req")
				ops := make([]abi.Op, 0, len(st.ops))
				for op := range st.ops {
					ops = append(ops, op)
				}
				slices.Sort(ops)
				for _, op := range ops {
					o := st.ops[op]
					b.Logf("%-22s %6d calls  guest %7.1f ms  %7.0f ns/call  %7d B/call", op, o.calls,
						o.cpu.Seconds()*1e3, float64(o.cpu.Nanoseconds())/float64(o.calls), o.bytes/o.calls)
				}
			})
		}
	}
}

// splitEngine makes an engine of kind whose transport st wraps (direct:
// no transport).
func splitEngine(b *testing.B, kind string, st *splitTransport) Engine {
	cfg := core.Config{PageSize: 16}
	var eng Engine
	var err error
	switch kind {
	case "direct":
		eng, err = NewDirectEngine(cfg)
	case "inprocess":
		var ip Engine
		if ip, err = NewInProcessEngine(cfg); err == nil {
			st.inner = ip.(*wireEngine).tr
			eng, err = newWireEngine(cfg, splitKeeping{st})
		}
	case "wasm":
		var rt *WasmRuntime
		if rt, err = SharedWasmRuntime(); err != nil {
			break
		}
		var g *wasmGuest
		if g, err = rt.instantiate(context.Background()); err == nil {
			st.inner = g
			eng, err = newWireEngine(cfg, splitKeepingInPlace{splitInPlace{st}})
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	return eng
}
