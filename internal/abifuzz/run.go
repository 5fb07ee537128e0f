package abifuzz

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/abi/dispatch"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/wasmmod"
)

// Config configures [Run].
type Config struct {
	// Seed chooses the call stream; the same seed makes the same calls.
	Seed uint64
	// Calls is how many calls to make (at least 1).
	Calls int64
	// ProbeEvery is how often (in calls) the known commands are checked;
	// 0 means every 1000 calls.
	ProbeEvery int64
	// MaxMemory bounds the module's linear memory in bytes; 0 means
	// 1 GiB.
	MaxMemory uint32
	// ErrorStream is the length of the closing stream of error replies
	// that must not grow linear memory (by more than 1 MiB) after its
	// first 20,000 (the warm-up); 0 means 100,000, negative none. Streams under 40,000
	// measure too short a stretch to mean much.
	ErrorStream int64
	// NoDifferential skips comparing every response with the in-process
	// dispatcher's (about a third of the time goes there).
	NoDifferential bool
	// Progress, when set, is called every ProgressEvery calls (0: every
	// 1,000,000) with the calls made, the linear memory size and the live
	// cache instances.
	Progress      func(calls int64, memory uint32, live int)
	ProgressEvery int64
}

// Report is what a run did.
type Report struct {
	Seed      uint64
	Calls     int64
	PerKind   [numKinds]int64
	OK        int64              // calls answered with status ok
	Codes     map[abi.Code]int64 // error replies per code
	Probes    int64              // probe rounds passed
	MaxMemory uint32             // largest linear memory seen, bytes
	// ErrorStreamMemory is the linear memory before and after the
	// closing error stream.
	ErrorStreamMemory [2]uint32
	Elapsed           time.Duration
}

// CallsPerSecond is the run's rate over every call it made.
func (r *Report) CallsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// Failure is a violation: the call that caused it, its number and why.
type Failure struct {
	Seed    uint64
	Call    int64
	Kind    string
	Request []byte
	Reason  string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("abifuzz: seed %d, call %d (%s): %s\nrequest: %s", f.Seed, f.Call, f.Kind, f.Reason, hex.EncodeToString(f.Request))
}

// Module is a compiled radixkv.wasm in a runtime with WASI, shared by any
// number of runs (each instantiates its own module instance).
type Module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

// Compile compiles the embedded module; cacheDir, when not empty, keeps
// the compiled code on disk for later processes.
func Compile(ctx context.Context, cacheDir string) (*Module, error) {
	cfg := wazero.NewRuntimeConfig()
	if cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return nil, err
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	c, err := rt.CompileModule(ctx, wasmmod.Module)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return &Module{rt: rt, compiled: c}, nil
}

// Close releases the runtime.
func (m *Module) Close(ctx context.Context) error { return m.rt.Close(ctx) }

// instance is one module instance driven through one request buffer.
type instance struct {
	ctx               context.Context
	mod               api.Module
	mem               api.Memory
	alloc, free, call api.Function
	stack             []uint64
	buf, cap          uint32
}

func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
	if err != nil {
		return nil, err
	}
	in := &instance{ctx: ctx, mod: mod, mem: mod.Memory(), stack: make([]uint64, 2),
		alloc: mod.ExportedFunction("radixkv_alloc"), free: mod.ExportedFunction("radixkv_free"),
		call: mod.ExportedFunction("radixkv_call")}
	if in.mem == nil || in.alloc == nil || in.free == nil || in.call == nil {
		_ = mod.Close(ctx)
		return nil, errors.New("radixkv.wasm lacks its memory or a radixkv_* export")
	}
	if err := in.ensure(64 << 10); err != nil {
		_ = mod.Close(ctx)
		return nil, err
	}
	return in, nil
}

func (in *instance) ensure(n uint32) error {
	if n <= in.cap {
		return nil
	}
	size := max(n, 2*in.cap)
	in.stack[0] = uint64(size)
	if err := in.alloc.CallWithStack(in.ctx, in.stack); err != nil {
		return fmt.Errorf("radixkv_alloc(%d) trapped: %w", size, err)
	}
	ptr := uint32(in.stack[0])
	if _, ok := in.mem.Read(ptr, size); !ok || ptr == 0 {
		return fmt.Errorf("radixkv_alloc(%d) returned 0x%x, outside memory", size, ptr)
	}
	if in.buf != 0 {
		in.stack[0] = uint64(in.buf)
		if err := in.free.CallWithStack(in.ctx, in.stack); err != nil {
			return fmt.Errorf("radixkv_free trapped: %w", err)
		}
	}
	in.buf, in.cap = ptr, size
	return nil
}

// roundTrip runs req at ptr (the request buffer unless given) and returns
// the response, valid until the next call.
func (in *instance) roundTrip(req []byte) ([]byte, error) {
	if err := in.ensure(uint32(len(req))); err != nil {
		return nil, err
	}
	if !in.mem.Write(in.buf, req) {
		return nil, errors.New("request write out of range")
	}
	return in.rawCall(in.buf, uint32(len(req)))
}

func (in *instance) rawCall(ptr, n uint32) ([]byte, error) {
	in.stack[0], in.stack[1] = uint64(ptr), uint64(n)
	if err := in.call.CallWithStack(in.ctx, in.stack); err != nil {
		return nil, fmt.Errorf("radixkv_call trapped: %w", err)
	}
	out, ok := in.mem.Read(uint32(in.stack[0]>>32), uint32(in.stack[0]))
	if !ok {
		return nil, fmt.Errorf("response 0x%x+%d lies outside the %d bytes of memory", in.stack[0]>>32, uint32(in.stack[0]), in.mem.Size())
	}
	return out, nil
}

// Run drives one long-lived module instance of m with cfg.Calls calls
// and checks every response (see the package doc). It returns the report
// and, on the first violation, a *Failure.
func Run(ctx context.Context, m *Module, cfg Config, seedCorpus [][]byte) (*Report, error) {
	if cfg.Calls < 1 {
		return nil, fmt.Errorf("abifuzz: Calls %d: want at least 1", cfg.Calls)
	}
	if cfg.ProbeEvery <= 0 {
		cfg.ProbeEvery = 1000
	}
	if cfg.MaxMemory == 0 {
		cfg.MaxMemory = 1 << 30
	}
	if cfg.ErrorStream == 0 {
		cfg.ErrorStream = 100_000
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 1_000_000
	}
	in, err := m.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	defer in.mod.Close(ctx)
	rep := &Report{Seed: cfg.Seed, Codes: map[abi.Code]int64{}}
	start := time.Now()
	defer func() { rep.Elapsed = time.Since(start) }()
	g := newGen(cfg.Seed, seedCorpus)
	ref := dispatch.New()
	probeRef := ref
	if cfg.NoDifferential {
		probeRef = nil
	}
	pr, err := newProber(in, probeRef)
	if err != nil {
		return rep, err
	}
	var q abi.Request
	var r abi.Response
	for call := int64(1); call <= cfg.Calls; call++ {
		k := g.kind()
		rep.PerKind[k]++
		rep.Calls++
		fail := func(req []byte, format string, args ...any) error {
			return &Failure{Seed: cfg.Seed, Call: call, Kind: k.String(), Request: bytes.Clone(req), Reason: fmt.Sprintf(format, args...)}
		}
		if k == BadBuffer {
			req, err := g.badBuffer(in)
			if err != nil {
				return rep, fail(req, "%v", err)
			}
			rep.Codes[abi.CodeMalformed]++
		} else {
			req := g.request(k)
			got, err := in.roundTrip(req)
			if err != nil {
				return rep, fail(req, "%v", err)
			}
			if err := checkResponse(req, got); err != nil {
				return rep, fail(req, "%v\nresponse: %s", err, hex.EncodeToString(got))
			}
			want := got
			if !cfg.NoDifferential {
				want = ref.Call(req)
				if !bytes.Equal(got, want) {
					return rep, fail(req, "the module answered\n  %s\nthe in-process dispatcher\n  %s", hex.EncodeToString(got), hex.EncodeToString(want))
				}
			}
			if err := abi.DecodeResponse(&r, want); err != nil {
				return rep, fail(req, "response does not decode: %v", err)
			}
			if r.Status == abi.StatusOK {
				rep.OK++
			} else {
				rep.Codes[r.Code]++
			}
			qerr := abi.DecodeRequest(&q, req)
			// No call may break a tree: the sanity check of an instance
			// never fails and no instance answers broken.
			if r.Code == abi.CodeBroken || (qerr == nil && q.Op == abi.OpSanityCheck && r.Code == abi.CodeSanity) {
				return rep, fail(req, "%v: %s", r.Code, r.Message)
			}
			if qerr == nil {
				g.learn(&r)
			}
		}
		if size := in.mem.Size(); size > rep.MaxMemory {
			rep.MaxMemory = size
			if size > cfg.MaxMemory {
				return rep, fail(nil, "linear memory grew to %d bytes, past the bound of %d", size, cfg.MaxMemory)
			}
		}
		if cfg.Progress != nil && call%cfg.ProgressEvery == 0 {
			cfg.Progress(call, in.mem.Size(), len(g.handles))
		}
		if call%cfg.ProbeEvery == 0 {
			if err := pr.probe(); err != nil {
				return rep, fail(nil, "probe after this call: %v", err)
			}
			rep.Probes++
		}
	}
	if cfg.ErrorStream > 0 {
		if err := errorStream(in, g.r, cfg.ErrorStream, rep); err != nil {
			return rep, &Failure{Seed: cfg.Seed, Call: rep.Calls, Kind: "error_stream", Reason: err.Error()}
		}
	}
	if err := pr.probe(); err != nil {
		return rep, &Failure{Seed: cfg.Seed, Call: rep.Calls, Kind: "probe", Reason: err.Error()}
	}
	rep.Probes++
	return rep, nil
}

// badBuffer makes one call with a buffer the guest did not hand out (or
// a length past the buffer's end), or frees a pointer it never handed
// out. The guest must answer malformed (a call) or ignore it (a free).
func (g *gen) badBuffer(in *instance) ([]byte, error) {
	var ptr, n uint32
	switch g.r.IntN(4) {
	case 0: // just past the request buffer's start
		ptr, n = in.buf+1+uint32(g.r.IntN(64)), 24
	case 1: // the right buffer, a length past its end
		ptr, n = in.buf, in.cap+1+uint32(g.r.IntN(1<<16))
	case 2: // anywhere, even outside memory
		ptr, n = g.r.Uint32(), g.r.Uint32()
	default: // free a pointer the guest never handed out, then call
		bogus := g.r.Uint32() | 1
		if bogus == in.buf {
			bogus += 2
		}
		in.stack[0] = uint64(bogus)
		if err := in.free.CallWithStack(in.ctx, in.stack); err != nil {
			return nil, fmt.Errorf("radixkv_free(0x%x) trapped: %w", bogus, err)
		}
		ptr, n = bogus, 24
	}
	if ptr == in.buf && n <= in.cap {
		n = in.cap + 1
	}
	desc := []byte(fmt.Sprintf("radixkv_call(0x%x, %d)", ptr, n))
	out, err := in.rawCall(ptr, n)
	if err != nil {
		return desc, err
	}
	var r abi.Response
	if err := abi.DecodeResponse(&r, out); err != nil {
		return desc, fmt.Errorf("answer does not decode: %v", err)
	}
	if r.Status != abi.StatusError || r.Code != abi.CodeMalformed || r.Op != 0 || r.Instance != 0 || r.ID != 0 {
		return desc, fmt.Errorf("answered %v/%v op %v instance %d id %d; want a malformed error with a zero header", r.Status, r.Code, r.Op, r.Instance, r.ID)
	}
	return desc, nil
}

// errorStreamSlack is the growth errorStream tolerates.
const errorStreamSlack = 1 << 20

// errorStream sends n requests that all fail (bad magic, unknown
// instances, truncated bodies, unknown ops) and checks that linear memory
// stays flat (within errorStreamSlack) once warm: error replies must not
// leak.
func errorStream(in *instance, r *rand.Rand, n int64, rep *Report) error {
	reqs := [][]byte{
		[]byte("not a request at all, just some bytes"),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpStats, Instance: 0xdeadbeef}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpMatch, Instance: 0xdeadbeef, Insert: core.InsertParams{Tokens: make([]uint32, 300)}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: -4}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1, Policy: "no-such-policy"}}),
		abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion})[:20],
	}
	unknownOp := abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion})
	binary.LittleEndian.PutUint16(unknownOp[6:], 0x7777)
	reqs = append(reqs, unknownOp)
	// Warm up: the guest's heap reaches its steady size for this mix
	// (its collector runs a few cycles); memory is then measured over the
	// rest, which must be at least as long.
	warm := min(n/2, 20_000)
	var before uint32
	for i := int64(0); i < n; i++ {
		if i == warm {
			before = in.mem.Size()
		}
		req := reqs[r.IntN(len(reqs))]
		out, err := in.roundTrip(req)
		if err != nil {
			return err
		}
		if len(out) < 12 || binary.LittleEndian.Uint16(out[8:]) != uint16(abi.StatusError) {
			return fmt.Errorf("error stream: %x answered %x, not an error", req, out)
		}
		rep.Calls++
		rep.Codes[abi.Code(binary.LittleEndian.Uint16(out[10:]))]++
	}
	after := in.mem.Size()
	rep.ErrorStreamMemory = [2]uint32{before, after}
	// The Go heap in the guest plateaus but may still take a page now and
	// then (measured: flat over 900k replies, then 64 KiB); a leak of even
	// a few bytes per reply passes 1 MiB over the measured stretch.
	if after > before+errorStreamSlack {
		return fmt.Errorf("linear memory grew from %d to %d bytes over %d error replies", before, after, n-warm)
	}
	return nil
}

// checkResponse checks resp against abi/SPEC.md §2.2 and §3 for the
// request req, on its own (without the reference): the header's magic,
// version, echo rules and status/code pairing, the code the header
// validation order prescribes, a UTF-8 message on errors, never the
// internal code, and a body that decodes exactly.
func checkResponse(req, resp []byte) error {
	le := binary.LittleEndian
	if len(resp) < 24 {
		return fmt.Errorf("response of %d bytes, shorter than its header", len(resp))
	}
	if m := le.Uint32(resp); m != 0x53564B52 {
		return fmt.Errorf("response magic 0x%08x, want RKVS", m)
	}
	if v := le.Uint16(resp[4:]); v != uint16(abi.Version) {
		return fmt.Errorf("response version %d, want %d", v, abi.Version)
	}
	op, st, code := abi.Op(le.Uint16(resp[6:])), abi.Status(le.Uint16(resp[8:])), abi.Code(le.Uint16(resp[10:]))
	inst, id := le.Uint32(resp[12:]), le.Uint64(resp[16:])
	if st != abi.StatusOK && st != abi.StatusError {
		return fmt.Errorf("status %d is neither ok nor error", st)
	}
	if (st == abi.StatusOK) != (code == abi.CodeNone) {
		return fmt.Errorf("status %d with code %v", st, code)
	}
	if code == abi.CodeInternal {
		return fmt.Errorf("internal error: the guest hit a bug and poisoned the instance")
	}
	if bytes.HasPrefix([]byte(code.String()), []byte("code(")) {
		return fmt.Errorf("code %d is not in SPEC §5", code)
	}
	// The header validation order of §2.2 and the echo rules.
	var want abi.Code = 0xffff // no header-level verdict
	if len(req) < 24 {
		if op != 0 || inst != 0 || id != 0 {
			return fmt.Errorf("truncated header: the response echoes op %v, instance %d, id %d; want zeros", op, inst, id)
		}
		want = abi.CodeTruncated
	} else {
		qop, qinst, qid := abi.Op(le.Uint16(req[6:])), le.Uint32(req[8:]), le.Uint64(req[16:])
		if op != qop || inst != qinst || id != qid {
			return fmt.Errorf("echo op %v instance %d id %d, request op %v instance %d id %d", op, inst, id, qop, qinst, qid)
		}
		switch {
		case le.Uint32(req) != 0x51564B52:
			want = abi.CodeBadMagic
		case le.Uint16(req[4:]) != uint16(abi.Version):
			want = abi.CodeBadVersion
		case le.Uint32(req[12:]) != 0:
			want = abi.CodeMalformed
		case !qop.Known():
			want = abi.CodeUnknownOp
		case !qop.NeedsInstance() && qinst != 0:
			want = abi.CodeMalformed
		case qop.NeedsInstance() && qinst == 0:
			want = abi.CodeUnknownInstance
		}
	}
	if want != 0xffff && code != want {
		return fmt.Errorf("code %v, but the header validation order gives %v", code, want)
	}
	if st == abi.StatusError {
		if len(resp) < 28 {
			return errors.New("error response without its message")
		}
		n := le.Uint32(resp[24:])
		if uint64(n) > uint64(len(resp)-28) {
			return fmt.Errorf("message length %d past the response's end", n)
		}
		msg := resp[28 : 28+n]
		if n == 0 || !utf8.Valid(msg) {
			return fmt.Errorf("error message %q is empty or not UTF-8", msg)
		}
	}
	var r abi.Response
	if err := abi.DecodeResponse(&r, resp); err != nil {
		return fmt.Errorf("body does not decode: %v", err)
	}
	return nil
}

// prober checks that the module still answers known commands exactly: a
// version query answers the bytes it answered first, and a fresh cache
// instance caches and matches a known key. The reference dispatcher runs
// the same requests, so handles stay in step.
type prober struct {
	in      *instance
	ref     *dispatch.Dispatcher
	version []byte
	toks    []uint32
	slots   []int32
}

func newProber(in *instance, ref *dispatch.Dispatcher) (*prober, error) {
	p := &prober{in: in, ref: ref}
	for i := range 64 {
		p.toks = append(p.toks, uint32(1000+i))
		p.slots = append(p.slots, int32(5000+i))
	}
	out, err := in.roundTrip(abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion, ID: 42}))
	if err != nil {
		return nil, err
	}
	p.version = bytes.Clone(out)
	var r abi.Response
	if err := abi.DecodeResponse(&r, p.version); err != nil || r.ABIVersion != uint32(abi.Version) || r.Impl != dispatch.Impl {
		return nil, fmt.Errorf("version answers %+v (%v)", r, err)
	}
	return p, nil
}

// both runs req on the module and the reference and returns the module's
// decoded answer after checking the two are the same bytes.
func (p *prober) both(req []byte, r *abi.Response) error {
	got, err := p.in.roundTrip(req)
	if err != nil {
		return err
	}
	if p.ref == nil {
		// Without the differential the reference never saw the stream.
	} else if want := p.ref.Call(req); !bytes.Equal(got, want) {
		return fmt.Errorf("module and reference differ on %x:\n  %x\n  %x", req, got, want)
	}
	if err := abi.DecodeResponse(r, got); err != nil {
		return err
	}
	if r.Status != abi.StatusOK {
		return fmt.Errorf("%v failed: %v: %s", r.Op, r.Code, r.Message)
	}
	return nil
}

func (p *prober) probe() error {
	out, err := p.in.roundTrip(abi.AppendRequest(nil, &abi.Request{Op: abi.OpVersion, ID: 42}))
	if err != nil {
		return err
	}
	if !bytes.Equal(out, p.version) {
		return fmt.Errorf("version answers %x, first %x", out, p.version)
	}
	var r abi.Response
	if err := p.both(abi.AppendRequest(nil, &abi.Request{Op: abi.OpCreate, Config: core.Config{PageSize: 1}}), &r); err != nil {
		return err
	}
	h := r.Handle
	defer p.both(abi.AppendRequest(nil, &abi.Request{Op: abi.OpDestroy, Instance: h}), &abi.Response{})
	if err := p.both(abi.AppendRequest(nil, &abi.Request{Op: abi.OpInsert, Instance: h,
		Insert: core.InsertParams{Tokens: p.toks, Slots: p.slots}}), &r); err != nil {
		return err
	}
	if r.Insert.PrefixLen != 0 {
		return fmt.Errorf("insert into a fresh instance found a prefix of %d", r.Insert.PrefixLen)
	}
	if err := p.both(abi.AppendRequest(nil, &abi.Request{Op: abi.OpMatch, Instance: h,
		Insert: core.InsertParams{Tokens: p.toks}}), &r); err != nil {
		return err
	}
	if r.Match.DeviceLen != len(p.toks) || !slices.Equal(r.Match.Indices, p.slots) {
		return fmt.Errorf("match of the known key: %d atoms, slots %v; want %d, %v", r.Match.DeviceLen, r.Match.Indices, len(p.toks), p.slots)
	}
	return p.both(abi.AppendRequest(nil, &abi.Request{Op: abi.OpSanityCheck, Instance: h}), &r)
}
