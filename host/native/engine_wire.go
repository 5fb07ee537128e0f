package native

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// transport carries one encoded request to a guest (the in-process
// dispatcher, or the WebAssembly module) and returns its response.
//
// The response may be a view into guest memory: it is valid until the
// next call, and the wire engine decodes it before making another.
type transport interface {
	call(req []byte) ([]byte, error)
	close() error
}

// inPlaceTransport is a transport that encodes a request straight into
// its guest's memory (saving a copy of every request), then calls.
type inPlaceTransport interface {
	callInPlace(q *abi.Request) ([]byte, error)
}

// keepingTransport is a transport whose guest may keep viewing the
// bytes of a request sent by callKeeping after the call, until the next
// callKeeping (see dispatch.Dispatcher.CallKeeping). The engine sends
// matches that way, from a buffer of their own, so that the guest keeps
// a match's tokens for the insert after it without copying them.
type keepingTransport interface {
	callKeeping(req []byte) ([]byte, error)
}

// keepingInPlaceTransport is an inPlaceTransport whose guest can keep
// viewing a match request after the call, in guest memory the transport
// then leaves unchanged until its next callKeepingInPlace (the wasm
// engine's radixkv_call_keeping, abi/SPEC.md §8); canKeep is false for a
// guest without that export, which gets plain calls.
type keepingInPlaceTransport interface {
	callKeepingInPlace(q *abi.Request) ([]byte, error)
	canKeep() bool
}

// RemoteError is an error response from an engine's guest: the ABI op
// that failed, the wire code and the guest's message.
//
// Codes that stand for core's sentinels unwrap to them, so
// errors.Is(err, core.ErrStaleNode) holds for a stale handle whichever
// engine reported it; codes of the ABI itself (internal, unknown
// instance, malformed, ...) unwrap to [ErrGuest].
type RemoteError struct {
	Op      abi.Op
	Code    abi.Code
	Message string
}

// Error returns the guest's message. For an error of the tree it is the
// message core itself gives (node ids in the engine's form).
func (e *RemoteError) Error() string {
	if sentinelOf(e.Op, e.Code) != nil {
		return e.Message
	}
	return "native: guest " + e.Op.String() + ": " + e.Code.String() + ": " + e.Message
}

// Unwrap returns the core sentinel of the code, or ErrGuest.
func (e *RemoteError) Unwrap() error {
	if s := sentinelOf(e.Op, e.Code); s != nil {
		return s
	}
	return ErrGuest
}

// codeSentinel maps a wire code to core's sentinel error (nil for the
// ABI's own codes).
func codeSentinel(c abi.Code) error {
	switch c {
	case abi.CodeUnsupported:
		return core.ErrUnsupported
	case abi.CodeInvalidConfig:
		return core.ErrInvalidConfig
	case abi.CodeUnknownPolicy:
		return core.ErrUnknownPolicy
	case abi.CodeInvalidArgument:
		return core.ErrInvalidArgument
	case abi.CodeStaleNode:
		return core.ErrStaleNode
	case abi.CodeReceipt:
		return core.ErrReceipt
	case abi.CodeInsertInFlight:
		return core.ErrInsertInFlight
	case abi.CodeNoInsert:
		return core.ErrNoInsert
	case abi.CodeEvictionInFlight:
		return core.ErrEvictionInFlight
	case abi.CodeNoEviction:
		return core.ErrNoEviction
	case abi.CodeBusy:
		return core.ErrBusy
	case abi.CodeBroken:
		return core.ErrBroken
	case abi.CodeSanity:
		return core.ErrSanity
	}
	return nil
}

// engineSeq numbers wire engines; each gets a distinct node-id mask.
var engineSeq atomic.Uint32

// engineMask returns the node-id mask of the n-th wire engine: a fixed
// bijective mix of n (so distinct engines have distinct, non-zero masks)
// in the high 32 bits, where node ids keep their generation.
func engineMask(n uint32) uint64 {
	n ^= n >> 15
	n *= 0x2c1b3c6d
	n ^= n >> 12
	n *= 0x297a2d39
	n ^= n >> 15
	return uint64(n) << 32
}

// wireEngine implements Engine on the ABI: it encodes each call with
// package abi, hands the bytes to a transport and decodes the response
// into core's types. It owns one cache instance of its guest.
//
// Node ids are handed to callers in the guest's wire form XORed with a
// mask of this engine (in the generation bits). A guest gives every
// cache instance a tag of its own, but two guests (two module instances,
// two dispatchers) both number their first instance 1; the mask makes
// ids of different engines differ too, so an id from another engine is
// rejected as core.ErrStaleNode instead of naming a node here.
type wireEngine struct {
	cfg    core.Config
	tr     transport
	handle uint32
	mask   uint64
	nextID uint64
	closed bool
	// failed is set when the transport failed (a trap, a memory access
	// out of range, a malformed response); the engine refuses further
	// work with it.
	failed error

	q   abi.Request
	r   abi.Response
	req []byte
	// reqKeep holds the last match sent through a keepingTransport,
	// which its guest may read until the next one; reqSpare is the other
	// buffer clobberRequests alternates with.
	reqKeep, reqSpare []byte
	// ids holds a request's node list in wire form.
	ids []core.NodeID
	// scratch holds decoded actions, and decoded events with their
	// hashes and tokens, until the next call, the lifetime core gives its
	// own actions. On little-endian hosts the actions' slot lists and the
	// events' token ids are views of the response itself (wordcopy.go),
	// which the transport keeps only until its next call: a method that
	// makes a second call and returns what the first decoded detaches it
	// first (detach, into held and heldSlots).
	scratch   abi.Scratch
	held      []core.Action
	heldSlots []int32
	// last is the previous response, which clobberResponses poisons.
	last []byte

	// The guest keeps the instance's last match for begin_insert_matched;
	// these describe what the engine sent and got back (matchID 0: none
	// the guest is known to hold). An insert of tokens the match had, with
	// the match's slots first (a serving loop's Finish), sends neither
	// again. For a plain match the engine keeps copies of the match's
	// tokens and indices and checks an insert against them, since its
	// caller may change its slices in between. A kept match
	// (matchLockKept, matchKept set) keeps only the lengths: its caller
	// vouches for the insert by the match's ticket (see keptMatcher).
	// noMatched is set when the guest does not know the op.
	matchID   uint64
	matchNS   core.Namespace
	matchTokN int
	matchIdxN int
	matchKept bool
	matchTok  []uint32 // copies; empty for a kept match unless checkKept
	matchIdx  []int32
	noMatched bool
	// noMatchLock is set when the guest does not know match_lock; the
	// engine then sends match and lock.
	noMatchLock bool
	// noMatchedUnlock is set when the guest does not know
	// begin_insert_matched_unlock.
	noMatchedUnlock bool
}

// newWireEngine creates a cache instance with cfg on tr. On failure it
// closes tr.
func newWireEngine(cfg core.Config, tr transport) (*wireEngine, error) {
	if err := wireConfigFits(cfg); err != nil {
		_ = tr.close()
		return nil, err
	}
	cfg.Components = append([]core.Component(nil), cfg.Components...)
	e := &wireEngine{cfg: cfg, tr: tr, mask: engineMask(engineSeq.Add(1)), req: make([]byte, 0, 4096)}
	if responseViewer != nil {
		e.scratch.SetWordViewer(responseViewer)
	}
	e.q.Config = cfg
	if err := e.roundTrip(abi.OpCreate); err != nil {
		_ = tr.close()
		return nil, err
	}
	e.q.Config = core.Config{}
	e.handle = e.r.Handle
	return e, nil
}

// wireConfigFits rejects configurations whose fields the wire format
// cannot carry unchanged (the direct engine would see the true value).
func wireConfigFits(cfg core.Config) error {
	switch {
	case cfg.PageSize < 0 || int64(cfg.PageSize) > math.MaxUint32:
		return fmt.Errorf("%w: page size %d is out of range", core.ErrInvalidConfig, cfg.PageSize)
	case len(cfg.Components) > math.MaxUint8:
		return fmt.Errorf("%w: %d components listed", core.ErrInvalidConfig, len(cfg.Components))
	case int64(cfg.WriteThroughThreshold) != int64(int32(cfg.WriteThroughThreshold)):
		return fmt.Errorf("%w: write-through threshold %d is out of range", core.ErrInvalidConfig, cfg.WriteThroughThreshold)
	case int64(cfg.SWAWindow) != int64(int32(cfg.SWAWindow)):
		return fmt.Errorf("%w: SWA window %d is out of range", core.ErrInvalidConfig, cfg.SWAWindow)
	case int64(cfg.MambaChunkSize) != int64(int32(cfg.MambaChunkSize)):
		return fmt.Errorf("%w: Mamba chunk size %d is out of range", core.ErrInvalidConfig, cfg.MambaChunkSize)
	case int64(cfg.MambaMaxPathStates) != int64(int32(cfg.MambaMaxPathStates)):
		return fmt.Errorf("%w: Mamba path cap %d is out of range", core.ErrInvalidConfig, cfg.MambaMaxPathStates)
	}
	md := cfg.MambaModel
	for _, v := range []int{md.SSMLayers, md.AttnLayers, md.MLPLayers, md.D, md.N} {
		if int64(v) != int64(int32(v)) {
			return fmt.Errorf("%w: Mamba model %+v has a count out of range", core.ErrInvalidConfig, md)
		}
	}
	return nil
}

// toWire and fromWire convert node ids between the caller's form and the
// wire form (an XOR: each is the other's inverse; 0 stays 0).
func (e *wireEngine) toWire(id core.NodeID) core.NodeID {
	if id == 0 {
		return 0
	}
	return id ^ core.NodeID(e.mask)
}

func (e *wireEngine) fromWire(id core.NodeID) core.NodeID { return e.toWire(id) }

// usable reports why the engine cannot take a call.
func (e *wireEngine) usable() error {
	if e.closed {
		return errEngineClosed
	}
	return e.failed
}

// roundTrip sends e.q as op and decodes the answer into e.r. It returns
// the guest's error response as a *RemoteError (e.r.Actions still holds
// the actions that came with it, in caller form), and a transport or
// decoding failure as an ErrGuest error that also disables the engine.
func (e *wireEngine) roundTrip(op abi.Op) error {
	return e.roundTripMatch(op, nil)
}

// roundTripMatch is roundTrip that appends a match's indices to dst.
func (e *wireEngine) roundTripMatch(op abi.Op, dst []int32) error {
	e.nextID++
	q := &e.q
	q.Op, q.ID = op, e.nextID
	q.Instance = e.handle
	if op == abi.OpCreate {
		q.Instance = 0
	}
	if clobberResponses {
		e.clobberLast()
	}
	var out []byte
	var err error
	keep := op == abi.OpMatch || op == abi.OpMatchLock // a match an insert may name
	if k, ok := e.tr.(keepingInPlaceTransport); ok && keep && k.canKeep() {
		out, err = k.callKeepingInPlace(q)
	} else if g, ok := e.tr.(inPlaceTransport); ok {
		out, err = g.callInPlace(q)
	} else if k, ok := e.tr.(keepingTransport); ok && keep {
		out, err = e.callKeeping(k, q)
	} else {
		e.req = abi.AppendRequest(e.req[:0], q)
		out, err = e.tr.call(e.req)
		if clobberRequests {
			poison(e.req)
		}
	}
	if err != nil {
		e.failed = fmt.Errorf("%w (%w): %s: %w", ErrGuest, ErrEngineFailed, op, err)
		return e.failed
	}
	e.last = out
	r := &e.r
	if op == abi.OpMatch || op == abi.OpMatchLock {
		err = abi.DecodeMatchResponseWith(r, out, dst, &e.scratch)
	} else {
		err = abi.DecodeResponseWith(r, out, &e.scratch)
	}
	switch {
	case err != nil:
		e.failed = fmt.Errorf("%w (%w): %s: undecodable response: %w", ErrGuest, ErrEngineFailed, op, err)
		return e.failed
	case r.ID != q.ID || r.Instance != q.Instance || (r.Op != op && r.Status == abi.StatusOK):
		e.failed = fmt.Errorf("%w (%w): %s: response %s id=%d instance=%d does not answer request id=%d instance=%d",
			ErrGuest, ErrEngineFailed, op, r.Op, r.ID, r.Instance, q.ID, q.Instance)
		return e.failed
	}
	e.actionsFromWire(r.Actions)
	if r.Status != abi.StatusOK {
		return &RemoteError{Op: op, Code: r.Code, Message: r.Message}
	}
	return nil
}

func (e *wireEngine) actionsFromWire(acts []core.Action) {
	for i := range acts {
		a := &acts[i]
		a.Node = e.fromWire(a.Node)
		for k, id := range a.Nodes {
			a.Nodes[k] = e.fromWire(id)
		}
	}
}

func (e *wireEngine) insertFromWire(ir core.InsertResult) core.InsertResult {
	ir.LastDevice = e.fromWire(ir.LastDevice)
	return ir
}

func (e *wireEngine) Config() core.Config {
	c := e.cfg
	c.Components = append([]core.Component(nil), e.cfg.Components...)
	return c
}

func (e *wireEngine) Match(dst []int32, ns core.Namespace, tokens []uint32) (core.MatchResult, error) {
	if err := e.usable(); err != nil {
		return core.MatchResult{Indices: dst}, err
	}
	return e.match(abi.OpMatch, dst, ns, tokens, 0, false)
}

// match sends a match or a match_lock (with skip) and decodes the
// match; the receipt of a match_lock is left in e.r.Receipt. kept: the
// caller vouches for its buffers (matchLockKept), so the engine keeps no
// copy of them.
func (e *wireEngine) match(op abi.Op, dst []int32, ns core.Namespace, tokens []uint32, skip core.ComponentSet, kept bool) (core.MatchResult, error) {
	e.q.Insert.Namespace, e.q.Insert.Tokens, e.q.Skip = ns, tokens, skip
	base := len(dst)
	e.matchID = 0
	err := e.roundTripMatch(op, dst)
	e.q.Insert, e.q.Skip = core.InsertParams{}, 0
	if err != nil {
		return core.MatchResult{Indices: dst, SWABranchingSeqlen: -1, MambaBranchingSeqlen: -1, MambaSlot: -1, Actions: e.r.Actions}, err
	}
	m := e.r.Match
	if !e.noMatched {
		// What the guest now keeps as the instance's last match.
		e.matchID, e.matchNS, e.matchKept = e.q.ID, ns, kept
		e.matchTokN, e.matchIdxN = len(tokens), len(m.Indices)-base
		e.matchTok, e.matchIdx = e.matchTok[:0], e.matchIdx[:0]
		if !kept || checkKept {
			e.matchTok = append(e.matchTok, tokens...)
			e.matchIdx = append(e.matchIdx, m.Indices[base:]...)
		}
	}
	m.LastDevice, m.LastHost, m.Best = e.fromWire(m.LastDevice), e.fromWire(m.LastHost), e.fromWire(m.Best)
	m.Actions = e.r.Actions
	return m, nil
}

// ticket names the last match when it is a kept one (0 otherwise): its
// request id under the engine's mask, so that no other engine's ticket
// (nor a plain match's) names it.
func (e *wireEngine) ticket() matchTicket {
	if e.matchID == 0 || !e.matchKept {
		return 0
	}
	return matchTicket(e.matchID ^ e.mask)
}

// MatchLock sends match_lock, or match and lock to a guest that predates
// it (unknown_op, which changed nothing there). When the guest's lock
// fails its error response carries the match's actions, and the match
// stands in the guest, kept for begin_insert_matched; the engine does
// not know the match's id then, so its next insert is sent in full.
func (e *wireEngine) MatchLock(dst []int32, ns core.Namespace, tokens []uint32, skip core.ComponentSet) (core.MatchResult, core.Receipt, error) {
	m, rc, _, err := e.matchLock(dst, ns, tokens, skip, false)
	return m, rc, err
}

// matchLockKept implements keptMatcher.
func (e *wireEngine) matchLockKept(dst []int32, ns core.Namespace, tokens []uint32, skip core.ComponentSet) (core.MatchResult, core.Receipt, matchTicket, error) {
	return e.matchLock(dst, ns, tokens, skip, true)
}

func (e *wireEngine) matchLock(dst []int32, ns core.Namespace, tokens []uint32, skip core.ComponentSet, kept bool) (core.MatchResult, core.Receipt, matchTicket, error) {
	if err := e.usable(); err != nil {
		return core.MatchResult{Indices: dst}, core.Receipt{}, 0, err
	}
	if !e.noMatchLock {
		m, err := e.match(abi.OpMatchLock, dst, ns, tokens, skip, kept)
		if err == nil {
			rc := e.r.Receipt
			rc.Node = e.fromWire(rc.Node)
			return m, rc, e.ticket(), nil
		}
		if code, ok := remoteCode(err); !ok || code != abi.CodeUnknownOp {
			return m, core.Receipt{}, 0, err
		}
		e.noMatchLock = true
	}
	m, err := e.match(abi.OpMatch, dst, ns, tokens, 0, kept)
	if err != nil {
		return m, core.Receipt{}, 0, err
	}
	// The lock's call ends the match response the actions view.
	m.Actions = e.detach(m.Actions)
	rc, err := e.Lock(m.LastDevice, skip)
	if err != nil {
		return m, rc, 0, err
	}
	return m, rc, e.ticket(), nil
}

// insertFits rejects insert parameters the wire cannot carry unchanged.
func insertFits(p *core.InsertParams) error {
	switch {
	case int64(p.PrevPrefixLen) != int64(int32(p.PrevPrefixLen)):
		return fmt.Errorf("%w: prev prefix length %d is out of range", core.ErrInvalidArgument, p.PrevPrefixLen)
	case int64(p.SWAEvictedSeqlen) != int64(int32(p.SWAEvictedSeqlen)):
		return fmt.Errorf("%w: SWA evicted length %d is out of range", core.ErrInvalidArgument, p.SWAEvictedSeqlen)
	case int64(p.SWABranchingSeqlen) != int64(int32(p.SWABranchingSeqlen)):
		return fmt.Errorf("%w: SWA branching length %d is out of range", core.ErrInvalidArgument, p.SWABranchingSeqlen)
	}
	return nil
}

func (e *wireEngine) Insert(p core.InsertParams) (core.InsertResult, []core.Action, error) {
	if err := e.usable(); err != nil {
		return core.InsertResult{}, nil, err
	}
	if err := insertFits(&p); err != nil {
		return core.InsertResult{}, nil, err
	}
	e.q.Insert = p
	err := e.roundTrip(abi.OpInsert)
	e.q.Insert = core.InsertParams{}
	if err != nil {
		return core.InsertResult{}, e.r.Actions, err
	}
	return e.insertFromWire(e.r.Insert), e.r.Actions, nil
}

func (e *wireEngine) insertStep(op abi.Op) (core.InsertStep, error) {
	err := e.roundTrip(op)
	e.q.Insert = core.InsertParams{}
	if err != nil {
		return core.InsertStep{Actions: e.r.Actions}, err
	}
	return core.InsertStep{Actions: e.r.Actions, Done: e.r.Done, Result: e.insertFromWire(e.r.Insert)}, nil
}

func (e *wireEngine) BeginInsert(p core.InsertParams) (core.InsertStep, error) {
	return e.beginInsert(p, 0)
}

// beginInsertKept implements keptMatcher.
func (e *wireEngine) beginInsertKept(p core.InsertParams, t matchTicket) (core.InsertStep, error) {
	return e.beginInsert(p, t)
}

// beginInsert sends begin_insert_matched when the insert can name the
// guest's last match (namedMatch, by t or by its copy), and otherwise,
// or when the guest answers stale_match or unknown_op, begin_insert.
func (e *wireEngine) beginInsert(p core.InsertParams, t matchTicket) (core.InsertStep, error) {
	if err := e.usable(); err != nil {
		return core.InsertStep{}, err
	}
	if err := insertFits(&p); err != nil {
		return core.InsertStep{}, err
	}
	ref, ok, err := e.namedMatch(&p, t)
	if err != nil {
		return core.InsertStep{}, err
	}
	if ok {
		e.q.Insert, e.q.Matched = p, ref
		e.q.Insert.Tokens, e.q.Insert.Slots = nil, p.Slots[ref.Slots:]
		err := e.roundTrip(abi.OpBeginInsertMatched)
		e.q.Matched = abi.MatchedRef{}
		if err == nil {
			e.q.Insert = core.InsertParams{}
			return core.InsertStep{Actions: e.r.Actions, Done: e.r.Done, Result: e.insertFromWire(e.r.Insert)}, nil
		}
		code, ok := remoteCode(err)
		if !ok || (code != abi.CodeStaleMatch && code != abi.CodeUnknownOp) {
			e.q.Insert = core.InsertParams{}
			return core.InsertStep{Actions: e.r.Actions}, err
		}
		// The guest no longer holds the match (a raw call matched or
		// reset in between), or predates the op: send it all. Nothing
		// changed in the guest.
		e.matchID = 0
		e.noMatched = e.noMatched || code == abi.CodeUnknownOp
	}
	e.q.Insert = p
	return e.insertStep(abi.OpBeginInsert)
}

// BeginInsertUnlock sends begin_insert_matched_unlock when the insert can
// name the guest's last match (see BeginInsert), and otherwise, or when
// the guest answers stale_match or unknown_op (nothing changed there),
// BeginInsert and, when it completed, Unlock.
func (e *wireEngine) BeginInsertUnlock(p core.InsertParams, node core.NodeID, rc core.Receipt, skipSWA bool) (core.InsertStep, bool, error, error) {
	return e.beginInsertUnlock(p, 0, node, rc, skipSWA)
}

// beginInsertUnlockKept implements keptMatcher.
func (e *wireEngine) beginInsertUnlockKept(p core.InsertParams, t matchTicket, node core.NodeID, rc core.Receipt, skipSWA bool) (core.InsertStep, bool, error, error) {
	return e.beginInsertUnlock(p, t, node, rc, skipSWA)
}

func (e *wireEngine) beginInsertUnlock(p core.InsertParams, t matchTicket, node core.NodeID, rc core.Receipt, skipSWA bool) (core.InsertStep, bool, error, error) {
	if err := e.usable(); err != nil {
		return core.InsertStep{}, false, nil, err
	}
	if err := insertFits(&p); err != nil {
		return core.InsertStep{}, false, nil, err
	}
	ref, ok, err := e.namedMatch(&p, t)
	if err != nil {
		return core.InsertStep{}, false, nil, err
	}
	if ok && !e.noMatchedUnlock && !e.noMatched {
		e.q.Insert, e.q.Matched = p, ref
		e.q.Insert.Tokens, e.q.Insert.Slots = nil, p.Slots[ref.Slots:]
		e.q.Node, e.q.SkipSWA = e.toWire(node), skipSWA
		e.q.Receipt = rc
		e.q.Receipt.Node = e.toWire(rc.Node)
		err := e.roundTrip(abi.OpBeginInsertMatchedUnlock)
		e.q.Matched, e.q.Insert = abi.MatchedRef{}, core.InsertParams{}
		e.q.Node, e.q.Receipt, e.q.SkipSWA = 0, core.Receipt{}, false
		if err == nil {
			step := core.InsertStep{Actions: e.r.Actions, Done: e.r.Done, Result: e.insertFromWire(e.r.Insert)}
			u := e.r.Unlock
			switch {
			case u.Released:
				return step, true, nil, nil
			case u.Code != 0:
				return step, true, &RemoteError{Op: abi.OpUnlock, Code: u.Code, Message: u.Message}, nil
			}
			return step, false, nil, nil
		}
		code, ok := remoteCode(err)
		if !ok || (code != abi.CodeStaleMatch && code != abi.CodeUnknownOp) {
			return core.InsertStep{Actions: e.r.Actions}, false, nil, err
		}
		e.matchID = 0
		e.noMatchedUnlock = e.noMatchedUnlock || code == abi.CodeUnknownOp
	}
	step, err := e.beginInsert(p, t)
	if err != nil || !step.Done {
		return step, false, nil, err
	}
	// The unlock's call ends the insert response the actions view.
	step.Actions = e.detach(step.Actions)
	return step, true, e.Unlock(node, rc, skipSWA), nil
}

// detach copies acts (decoded from the latest response) and their slot
// lists into the engine's held buffers, so that they outlive the next
// call, which may reuse the response bytes the slot lists view and the
// scratch the actions live in. They stay valid until the next detach,
// which only a later call makes.
func (e *wireEngine) detach(acts []core.Action) []core.Action {
	if len(acts) == 0 {
		return acts
	}
	n := 0
	for i := range acts {
		n += len(acts[i].Slots) + len(acts[i].Incoming)
	}
	if cap(e.heldSlots) < n {
		e.heldSlots = make([]int32, 0, max(n, 2*cap(e.heldSlots)))
	}
	e.held, e.heldSlots = append(e.held[:0], acts...), e.heldSlots[:0]
	for i := range e.held {
		a := &e.held[i]
		a.Slots, a.Incoming = e.hold(a.Slots), e.hold(a.Incoming)
	}
	return e.held
}

// hold appends v to heldSlots (whose capacity detach reserved, so no
// earlier hold moves) and returns the copy; nil stays nil.
func (e *wireEngine) hold(v []int32) []int32 {
	if v == nil {
		return nil
	}
	k := len(e.heldSlots)
	e.heldSlots = append(e.heldSlots, v...)
	return e.heldSlots[k:len(e.heldSlots):len(e.heldSlots)]
}

// callKeeping sends q through k from reqKeep, which then stays as it is
// until the next callKeeping: the guest may still read it. Under
// clobberRequests the two buffers alternate and the one the guest was
// allowed to read until this call is poisoned after it.
func (e *wireEngine) callKeeping(k keepingTransport, q *abi.Request) ([]byte, error) {
	if clobberRequests {
		e.reqKeep, e.reqSpare = e.reqSpare, e.reqKeep
	}
	e.reqKeep = abi.AppendRequest(e.reqKeep[:0], q)
	out, err := k.callKeeping(e.reqKeep)
	if clobberRequests {
		poison(e.reqSpare)
	}
	return out, err
}

// clobberRequests is set by this package's tests: after each call the
// engine overwrites the request's bytes (those of a callKeeping after the
// next one), so that a guest that reads a view of a request after its
// lifetime (see dispatch.Dispatcher.SetRequestViewer) reads poison: a
// token 0xa5a5a5a5 that makes the tree differ from the direct engine's,
// or a negative slot.
var clobberRequests bool

// poison overwrites b with 0xa5.
func poison(b []byte) {
	for i := range b {
		b[i] = 0xa5
	}
}

// clobberResponses is set by this package's tests: before each call the
// engine overwrites the previous response's bytes, so that anything that
// still reads a view of them after the next call (a slot list kept past
// its lifetime) reads poison (0xa5a5a5a5, a negative slot) and fails.
var clobberResponses bool

// clobberLast poisons the previous response, when its memory is still
// there (a closed module instance's memory may be unmapped). The
// response buffer is the guest's, which it rewrites on its next call
// without reading it.
func (e *wireEngine) clobberLast() {
	b := e.last
	e.last = nil
	if len(b) == 0 || e.closed || e.failed != nil || !transportLive(e.tr) {
		return
	}
	poison(b)
}

// transportLive reports whether tr's memory is still mapped.
func transportLive(tr transport) bool {
	if t, ok := tr.(*trapTransport); ok {
		tr = t.transport
	}
	if g, ok := tr.(*wasmGuest); ok {
		return g.usable() == nil
	}
	return true
}

// remoteCode returns the wire code of a guest's error response.
func remoteCode(err error) (abi.Code, bool) {
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Code, true
	}
	return 0, false
}

// checkKept is set by this package's tests: the engine then copies kept
// matches too and checks every vouch against the copies (errKeptChanged
// when the caller broke its promise), so that the whole controller suite
// tests the Controller's vouches. Results do not change otherwise.
var checkKept bool

// errKeptChanged: an insert named a kept match its tokens or slots no
// longer agree with (checkKept only; nothing was sent).
var errKeptChanged = errors.New("native: internal: an insert vouched for a kept match whose tokens or slots it does not start with")

// namedMatch returns the reference by which p's insert can name the
// guest's last match instead of sending its tokens: p's tokens are a
// prefix of the match's, in its namespace, and so many of p's slots as
// ref.Slots says are the match's indices. For a plain match the engine
// checks that against its copies (the caller may have changed its slices
// since); a kept match is named only by its ticket t, the caller's vouch
// (see keptMatcher), and never by a plain insert.
func (e *wireEngine) namedMatch(p *core.InsertParams, t matchTicket) (abi.MatchedRef, bool, error) {
	n := len(p.Tokens)
	if e.matchID == 0 || n == 0 || n > e.matchTokN || p.Namespace != e.matchNS {
		return abi.MatchedRef{}, false, nil
	}
	k := min(e.matchIdxN, len(p.Slots))
	ref := abi.MatchedRef{MatchID: e.matchID, Tokens: uint32(n), Slots: uint32(k)}
	if e.matchKept {
		if t == 0 || t != e.ticket() {
			return abi.MatchedRef{}, false, nil
		}
		if checkKept && (!equalWords(p.Tokens, e.matchTok[:n]) || !equalWords(p.Slots[:k], e.matchIdx[:k])) {
			return abi.MatchedRef{}, false, errKeptChanged
		}
		return ref, true, nil
	}
	if !equalWords(p.Tokens, e.matchTok[:n]) {
		return abi.MatchedRef{}, false, nil
	}
	if !equalWords(p.Slots[:k], e.matchIdx[:k]) {
		ref.Slots = 0
	}
	return ref, true, nil
}

// equalWords reports whether a and b (of one length) are equal. It
// compares whole blocks as arrays, which the compiler turns into the
// runtime's vectorised memory compare: several times faster than an
// element loop, and this runs over every token an insert sends.
func equalWords[T uint32 | int32](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for len(a) >= 256 && len(b) >= 256 {
		if *(*[256]T)(a) != *(*[256]T)(b) {
			return false
		}
		a, b = a[256:], b[256:]
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (e *wireEngine) ResumeInsert() (core.InsertStep, error) {
	if err := e.usable(); err != nil {
		return core.InsertStep{}, err
	}
	return e.insertStep(abi.OpResumeInsert)
}

func (e *wireEngine) EndInsert() ([]core.Action, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	err := e.roundTrip(abi.OpEndInsert)
	return e.r.Actions, err
}

func (e *wireEngine) Lock(node core.NodeID, skip core.ComponentSet) (core.Receipt, error) {
	if err := e.usable(); err != nil {
		return core.Receipt{}, err
	}
	e.q.Node, e.q.Skip = e.toWire(node), skip
	err := e.roundTrip(abi.OpLock)
	e.q.Node, e.q.Skip = 0, 0
	if err != nil {
		return core.Receipt{}, err
	}
	rc := e.r.Receipt
	rc.Node = e.fromWire(rc.Node)
	return rc, nil
}

func (e *wireEngine) Unlock(node core.NodeID, r core.Receipt, skipSWA bool) error {
	if err := e.usable(); err != nil {
		return err
	}
	r.Node = e.toWire(r.Node)
	e.q.Node, e.q.Receipt, e.q.SkipSWA = e.toWire(node), r, skipSWA
	err := e.roundTrip(abi.OpUnlock)
	e.q.Node, e.q.Receipt, e.q.SkipSWA = 0, core.Receipt{}, false
	return err
}

func (e *wireEngine) UnlockSWA(node core.NodeID, r core.Receipt) ([]core.Action, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	r.Node = e.toWire(r.Node)
	e.q.Node, e.q.Receipt = e.toWire(node), r
	err := e.roundTrip(abi.OpUnlockSWAEarly)
	e.q.Node, e.q.Receipt = 0, core.Receipt{}
	return e.r.Actions, err
}

func (e *wireEngine) EvictExcessPathStates(tail core.NodeID) ([]core.Action, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	e.q.Node = e.toWire(tail)
	err := e.roundTrip(abi.OpEvictExcessPathStates)
	e.q.Node = 0
	return e.r.Actions, err
}

func (e *wireEngine) Evict(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	if err := e.usable(); err != nil {
		return dst, 0, err
	}
	e.q.Component, e.q.Want = c, int64(want)
	err := e.roundTrip(abi.OpEvict)
	e.q.Component, e.q.Want = 0, 0
	dst = append(dst, e.r.Actions...)
	if err != nil {
		return dst, 0, err
	}
	return dst, int(e.r.Freed), nil
}

func (e *wireEngine) EvictStart(c core.Component, want int) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.Component, e.q.Want = c, int64(want)
	err := e.roundTrip(abi.OpEvictStart)
	e.q.Component, e.q.Want = 0, 0
	return err
}

func (e *wireEngine) EvictNext() (core.EvictStep, error) {
	if err := e.usable(); err != nil {
		return core.EvictStep{}, err
	}
	if err := e.roundTrip(abi.OpEvictNext); err != nil {
		return core.EvictStep{Actions: e.r.Actions}, err
	}
	r := &e.r
	return core.EvictStep{Node: e.fromWire(r.Node), Freed: int(r.Freed), Actions: r.Actions, Done: r.Done}, nil
}

func (e *wireEngine) EvictEnd() error {
	if err := e.usable(); err != nil {
		return err
	}
	return e.roundTrip(abi.OpEvictEnd)
}

// stats fetches the instance's sizes (one call answers every component).
func (e *wireEngine) stats() (*abi.Stats, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	if err := e.roundTrip(abi.OpStats); err != nil {
		return nil, err
	}
	return &e.r.Stats, nil
}

func (e *wireEngine) Evictable(c core.Component) (int, error) {
	s, err := e.stats()
	if err != nil || int(c) >= len(s.Evictable) {
		return 0, err
	}
	return int(s.Evictable[c]), nil
}

func (e *wireEngine) Protected(c core.Component) (int, error) {
	s, err := e.stats()
	if err != nil || int(c) >= len(s.Protected) {
		return 0, err
	}
	return int(s.Protected[c]), nil
}

func (e *wireEngine) SanityCheck() error {
	if err := e.usable(); err != nil {
		return err
	}
	return e.roundTrip(abi.OpSanityCheck)
}

func (e *wireEngine) Render() (string, error) {
	if err := e.usable(); err != nil {
		return "", err
	}
	if err := e.roundTrip(abi.OpRender); err != nil {
		return "", err
	}
	return e.r.Text, nil
}

// wireIDs returns ids in wire form in the engine's reused buffer.
func (e *wireEngine) wireIDs(ids []core.NodeID) []core.NodeID {
	e.ids = e.ids[:0]
	for _, id := range ids {
		e.ids = append(e.ids, e.toWire(id))
	}
	return e.ids
}

// idsFromWire converts decoded ids to the caller's form in place.
func (e *wireEngine) idsFromWire(ids []core.NodeID) []core.NodeID {
	for i, id := range ids {
		ids[i] = e.fromWire(id)
	}
	return ids
}

func (e *wireEngine) nodeSlotsFromWire(v []core.NodeSlots) []core.NodeSlots {
	for i := range v {
		v[i].Node = e.fromWire(v[i].Node)
	}
	return v
}

// nodeCall sends op with node (in the caller's form) as its node.
func (e *wireEngine) nodeCall(op abi.Op, node core.NodeID) error {
	e.q.Node = e.toWire(node)
	err := e.roundTrip(op)
	e.q.Node = 0
	return err
}

func (e *wireEngine) HostLock(node core.NodeID) (core.Receipt, error) {
	if err := e.usable(); err != nil {
		return core.Receipt{}, err
	}
	if err := e.nodeCall(abi.OpHostLock, node); err != nil {
		return core.Receipt{}, err
	}
	rc := e.r.Receipt
	rc.Node = e.fromWire(rc.Node)
	return rc, nil
}

func (e *wireEngine) HostUnlock(node core.NodeID, r core.Receipt) error {
	if err := e.usable(); err != nil {
		return err
	}
	r.Node = e.toWire(r.Node)
	e.q.Receipt = r
	err := e.nodeCall(abi.OpHostUnlock, node)
	e.q.Receipt = core.Receipt{}
	return err
}

func (e *wireEngine) BackupSpec(node core.NodeID) (core.BackupSpec, error) {
	if err := e.usable(); err != nil {
		return core.BackupSpec{Mamba: -1}, err
	}
	if err := e.nodeCall(abi.OpBackupSpec, node); err != nil {
		return core.BackupSpec{Mamba: -1}, err
	}
	s := e.r.Spec
	s.Node = e.fromWire(s.Node)
	s.SWA = e.nodeSlotsFromWire(s.SWA)
	return s, nil
}

func (e *wireEngine) CommitBackup(node core.NodeID, c core.BackupCommit) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.Backup = c
	err := e.nodeCall(abi.OpCommitBackup, node)
	e.q.Backup = core.BackupCommit{}
	return err
}

// listCall sends op with nodes (in the caller's form) as its node list.
func (e *wireEngine) listCall(op abi.Op, nodes []core.NodeID) error {
	e.q.Nodes = e.wireIDs(nodes)
	err := e.roundTrip(op)
	e.q.Nodes, e.q.Ack, e.q.OffloadID, e.q.OK = nil, 0, 0, false
	return err
}

func (e *wireEngine) MarkWriteThroughPending(nodes []core.NodeID, ack int64) ([]core.NodeID, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	e.q.Ack = ack
	if err := e.listCall(abi.OpMarkWriteThroughPending, nodes); err != nil {
		return nil, err
	}
	return e.idsFromWire(e.r.Nodes), nil
}

func (e *wireEngine) FinishWriteThrough(nodes []core.NodeID, ack int64) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.Ack = ack
	return e.listCall(abi.OpFinishWriteThrough, nodes)
}

func (e *wireEngine) Demote(node core.NodeID) ([]core.Action, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	err := e.nodeCall(abi.OpDemote, node)
	return e.r.Actions, err
}

func (e *wireEngine) DropSubtreeNoHost(node core.NodeID) (bool, []core.Action, error) {
	if err := e.usable(); err != nil {
		return false, nil, err
	}
	if err := e.nodeCall(abi.OpDropSubtreeNoHost, node); err != nil {
		return false, e.r.Actions, err
	}
	return e.r.Dropped, e.r.Actions, nil
}

func (e *wireEngine) LoadBackPlan(anchor core.NodeID) (core.LoadBackPlan, error) {
	if err := e.usable(); err != nil {
		return core.LoadBackPlan{Mamba: -1}, err
	}
	if err := e.nodeCall(abi.OpLoadBack, anchor); err != nil {
		return core.LoadBackPlan{Mamba: -1}, err
	}
	p := e.r.Plan
	p.Anchor = e.fromWire(p.Anchor)
	p.Full = e.nodeSlotsFromWire(p.Full)
	p.SWA = e.nodeSlotsFromWire(p.SWA)
	return p, nil
}

func (e *wireEngine) CommitLoadBack(anchor core.NodeID, c core.LoadBackCommit) ([]core.Action, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	e.q.LoadBack = c
	err := e.nodeCall(abi.OpCommitLoadBack, anchor)
	e.q.LoadBack = core.LoadBackCommit{}
	return e.r.Actions, err
}

func (e *wireEngine) FinishLoadBack(anchor core.NodeID) error {
	if err := e.usable(); err != nil {
		return err
	}
	return e.nodeCall(abi.OpFinishLoadBack, anchor)
}

func (e *wireEngine) InsertHost(anchor core.NodeID, ns core.Namespace, tokens []uint32, hostSlots []int32) (core.InsertHostResult, []core.Action, error) {
	if err := e.usable(); err != nil {
		return core.InsertHostResult{}, nil, err
	}
	e.q.Insert = core.InsertParams{Namespace: ns, Tokens: tokens, Slots: hostSlots}
	err := e.nodeCall(abi.OpInsertHost, anchor)
	e.q.Insert = core.InsertParams{}
	if err != nil {
		return core.InsertHostResult{}, e.r.Actions, err
	}
	res := e.r.InsertHost
	res.Node = e.fromWire(res.Node)
	return res, e.r.Actions, nil
}

func (e *wireEngine) EvictHost(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	if err := e.usable(); err != nil {
		return dst, 0, err
	}
	e.q.Component, e.q.Want = c, int64(want)
	err := e.roundTrip(abi.OpEvictHost)
	e.q.Component, e.q.Want = 0, 0
	dst = append(dst, e.r.Actions...)
	if err != nil {
		return dst, 0, err
	}
	return dst, int(e.r.Freed), nil
}

func (e *wireEngine) StorageSpec(node core.NodeID) (core.StorageSpec, error) {
	if err := e.usable(); err != nil {
		return core.StorageSpec{}, err
	}
	if err := e.nodeCall(abi.OpStorageSpec, node); err != nil {
		return core.StorageSpec{}, err
	}
	s := e.r.Storage
	s.Node = e.fromWire(s.Node)
	return s, nil
}

func (e *wireEngine) BackfillHashes() (int, error) {
	if err := e.usable(); err != nil {
		return 0, err
	}
	if err := e.roundTrip(abi.OpBackfillHashes); err != nil {
		return 0, err
	}
	return int(e.r.Hashed), nil
}

func (e *wireEngine) LinkerChain(node core.NodeID) ([]core.NodeID, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	if err := e.nodeCall(abi.OpLinkerChain, node); err != nil {
		return nil, err
	}
	return e.idsFromWire(e.r.Nodes), nil
}

func (e *wireEngine) MarkLinkerPending(nodes []core.NodeID, id int64) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.OffloadID = id
	return e.listCall(abi.OpMarkLinkerPending, nodes)
}

func (e *wireEngine) FinishLinkerOffload(nodes []core.NodeID, id int64, ok bool) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.OffloadID, e.q.OK = id, ok
	return e.listCall(abi.OpFinishLinkerOffload, nodes)
}

func (e *wireEngine) MarkLinkerStoredPath(from, until core.NodeID) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.Until = e.toWire(until)
	err := e.nodeCall(abi.OpMarkLinkerStoredPath, from)
	e.q.Until = 0
	return err
}

func (e *wireEngine) Protect(ns core.Namespace, tokens []uint32) (core.Protection, error) {
	if err := e.usable(); err != nil {
		return core.Protection{}, err
	}
	e.q.Insert.Namespace, e.q.Insert.Tokens = ns, tokens
	err := e.roundTrip(abi.OpProtect)
	e.q.Insert = core.InsertParams{}
	if err != nil {
		return core.Protection{}, err
	}
	return e.r.Protection, nil
}

func (e *wireEngine) Unprotect(serial uint64) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.Serial = serial
	err := e.roundTrip(abi.OpUnprotect)
	e.q.Serial = 0
	return err
}

func (e *wireEngine) SanityCheckOngoing(o core.Ongoing) error {
	if err := e.usable(); err != nil {
		return err
	}
	// Two lists, so not the engine's one id buffer; a nil list (unknown)
	// differs from an empty one (none in flight).
	toWire := func(ids []core.NodeID) []core.NodeID {
		if ids == nil {
			return nil
		}
		out := make([]core.NodeID, len(ids))
		for i, id := range ids {
			out[i] = e.toWire(id)
		}
		return out
	}
	e.q.Ongoing = core.Ongoing{WriteThrough: toWire(o.WriteThrough), LoadBack: toWire(o.LoadBack)}
	err := e.roundTrip(abi.OpSanityCheckOngoing)
	e.q.Ongoing = core.Ongoing{}
	return err
}

// TakeEvents appends the guest's events to dst; their BlockHashes and
// TokenIDs live in the engine's scratch until the next call.
func (e *wireEngine) TakeEvents(dst []core.Event) ([]core.Event, error) {
	if err := e.usable(); err != nil {
		return dst, err
	}
	if err := e.roundTrip(abi.OpTakeEvents); err != nil {
		return dst, err
	}
	return append(dst, e.r.Events...), nil
}

func (e *wireEngine) Reset() error {
	if err := e.usable(); err != nil {
		return err
	}
	e.matchID = 0
	return e.roundTrip(abi.OpReset)
}

// Close destroys the cache instance and releases the transport (for the
// WebAssembly engine, the module instance). Closing twice is harmless.
func (e *wireEngine) Close() error {
	if e.closed {
		return nil
	}
	var err error
	if e.failed == nil {
		err = e.roundTrip(abi.OpDestroy)
	}
	e.closed = true
	e.r = abi.Response{}
	return errors.Join(err, e.tr.close())
}

// RawCaller is implemented by the engines that speak the ABI (in-process
// and WebAssembly). RawCall sends one encoded request to the engine's
// guest, as another consumer of the same module instance (or dispatcher)
// would, and returns the encoded response, valid until the next call on
// the engine. It exists so that tests and the simulator can interleave
// garbage calls with the engine's own: the guest must refuse them and
// leave the engine's cache instance as it was. A request that names the
// engine's own instance (Instance reports it) changes it like any other
// call would; callers that mean no harm avoid that handle. (A raw match
// there replaces the match the guest keeps for the engine's next insert:
// the guest then answers that insert stale_match and the engine resends
// it in full, so results do not change.)
type RawCaller interface {
	RawCall(req []byte) ([]byte, error)
	// Instance is the handle of the engine's own cache instance.
	Instance() uint32
}

// RawCall implements RawCaller. A transport failure (a trap) marks the
// engine failed, as it would on the engine's own calls.
func (e *wireEngine) RawCall(req []byte) ([]byte, error) {
	if e.closed {
		return nil, ErrClosed
	}
	if e.failed != nil {
		return nil, e.failed
	}
	if clobberResponses {
		e.clobberLast()
	}
	out, err := e.tr.call(req)
	if err != nil {
		e.failed = fmt.Errorf("%w (%w): raw call: %w", ErrGuest, ErrEngineFailed, err)
		return nil, e.failed
	}
	e.last = out
	return out, nil
}

// Instance implements RawCaller.
func (e *wireEngine) Instance() uint32 { return e.handle }
