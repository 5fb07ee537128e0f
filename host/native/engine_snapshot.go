package native

import (
	"fmt"
	"math"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core/snapshot"
)

// SnapshotEngine is the SSM snapshot index beside an engine's tree (ABI
// ops 0x0060-0x0067, abi/SPEC.md §4.9): every engine (direct, in-process,
// WebAssembly) implements it, and all three give the same results. The
// index is made with the default configuration on first use and emptied
// by Reset; see core/snapshot for each operation's semantics. Errors
// unwrap to core/snapshot's sentinels whichever engine reported them.
type SnapshotEngine interface {
	// SnapshotConfigure replaces the index with an empty one configured by cfg.
	SnapshotConfigure(cfg snapshot.Config) error
	SnapshotLookup(tokens []uint32, matched int, session, adapter uint64) (snapshot.Match, error)
	// SnapshotInsert records a snapshot of the kind (plain, tail, sibling).
	SnapshotInsert(kind snapshot.Kind, tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error)
	// SnapshotEvict removes (toTier false) or spills / drops (toTier true)
	// the next victim; ok is false when nothing is resident.
	SnapshotEvict(toTier bool, minTokens int) (ev snapshot.TierEvict, ok bool, err error)
	SnapshotPromote(key, adapter uint64, slot int32, session uint64) error
	SnapshotForget(key, adapter uint64) error
	SnapshotEndSession(session uint64) (snapshot.Displaced, error)
	// SnapshotStats returns the counters and Marconi's alpha (0 without it).
	SnapshotStats() (snapshot.Stats, float64, error)
}

var (
	_ SnapshotEngine = (*directEngine)(nil)
	_ SnapshotEngine = (*wireEngine)(nil)
)

// sentinelOf maps a wire code to the sentinel of the package that
// answers op: core/snapshot for the snapshot ops, core otherwise.
func sentinelOf(op abi.Op, c abi.Code) error {
	if op.IsBlocksOp() {
		return blocksSentinel(c)
	}
	if !op.IsSnapshotOp() {
		return codeSentinel(c)
	}
	switch c {
	case abi.CodeInvalidConfig:
		return snapshot.ErrInvalidConfig
	case abi.CodeInvalidArgument:
		return snapshot.ErrInvalidArgument
	case abi.CodeSanity:
		return snapshot.ErrSanity
	case abi.CodeUnknownKey:
		return snapshot.ErrUnknownKey
	case abi.CodeUnknownSession:
		return snapshot.ErrUnknownSession
	case abi.CodeWrongAdapter:
		return snapshot.ErrWrongAdapter
	case abi.CodeResident:
		return snapshot.ErrResident
	case abi.CodeSlotInUse:
		return snapshot.ErrSlotInUse
	}
	return nil
}

// checkSnapshotArgs rejects what the wire cannot carry, identically on
// every engine.
func checkSnapshotArgs(kind snapshot.Kind, n int) error {
	if kind > snapshot.Sibling {
		return fmt.Errorf("%w: snapshot kind %d", snapshot.ErrInvalidArgument, kind)
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return fmt.Errorf("%w: %d does not fit the wire's i32", snapshot.ErrInvalidArgument, n)
	}
	return nil
}

func checkSnapshotConfig(cfg snapshot.Config) error {
	fits := func(v int) bool { return v >= math.MinInt32 && v <= math.MaxInt32 }
	ok := fits(cfg.LeaseTTL)
	if m := cfg.Marconi; m != nil {
		ok = ok && fits(m.Model.SSMLayers) && fits(m.Model.AttnLayers) && fits(m.Model.MLPLayers) && fits(m.Model.D) && fits(m.Model.N)
	}
	if !ok {
		return fmt.Errorf("%w: a field does not fit the wire's i32", snapshot.ErrInvalidConfig)
	}
	return nil
}

func (e *directEngine) index() (*snapshot.Index, error) {
	if e.closed {
		return nil, errEngineClosed
	}
	if e.snap == nil {
		x, err := snapshot.New(e.snapCfg)
		if err != nil {
			return nil, err
		}
		e.snap = x
	}
	return e.snap, nil
}

func (e *directEngine) SnapshotConfigure(cfg snapshot.Config) error {
	if e.closed {
		return errEngineClosed
	}
	if err := checkSnapshotConfig(cfg); err != nil {
		return err
	}
	if cfg.Marconi != nil {
		m := *cfg.Marconi
		cfg.Marconi = &m
	}
	x, err := snapshot.New(cfg)
	if err != nil {
		return err
	}
	e.snap, e.snapCfg = x, cfg
	if e.blocks != nil {
		e.blocks.UseSnapshots(x)
	}
	return nil
}

func (e *directEngine) SnapshotLookup(tokens []uint32, matched int, session, adapter uint64) (snapshot.Match, error) {
	x, err := e.index()
	if err == nil {
		err = checkSnapshotArgs(0, matched)
	}
	if err != nil {
		return snapshot.Match{}, err
	}
	return x.Lookup(tokens, matched, session, adapter)
}

func (e *directEngine) SnapshotInsert(kind snapshot.Kind, tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	x, err := e.index()
	if err == nil {
		err = checkSnapshotArgs(kind, 0)
	}
	if err != nil {
		return snapshot.Displaced{}, err
	}
	switch kind {
	case snapshot.Tail:
		return x.InsertTail(tokens, adapter, slot, session)
	case snapshot.Sibling:
		return x.InsertSibling(tokens, adapter, slot, session)
	}
	return x.Insert(tokens, adapter, slot, session)
}

func (e *directEngine) SnapshotEvict(toTier bool, minTokens int) (snapshot.TierEvict, bool, error) {
	x, err := e.index()
	if err == nil {
		err = checkSnapshotArgs(0, minTokens)
	}
	if err != nil {
		return snapshot.TierEvict{}, false, err
	}
	if toTier {
		return x.EvictToTier(minTokens)
	}
	slot, ok := x.EvictLRU()
	return snapshot.TierEvict{Slot: slot}, ok, nil
}

func (e *directEngine) SnapshotPromote(key, adapter uint64, slot int32, session uint64) error {
	x, err := e.index()
	if err != nil {
		return err
	}
	return x.Promote(key, adapter, slot, session)
}

func (e *directEngine) SnapshotForget(key, adapter uint64) error {
	x, err := e.index()
	if err != nil {
		return err
	}
	return x.Forget(key, adapter)
}

func (e *directEngine) SnapshotEndSession(session uint64) (snapshot.Displaced, error) {
	x, err := e.index()
	if err != nil {
		return snapshot.Displaced{}, err
	}
	return x.EndSession(session)
}

func (e *directEngine) SnapshotStats() (snapshot.Stats, float64, error) {
	x, err := e.index()
	if err != nil {
		return snapshot.Stats{}, 0, err
	}
	return x.Stats(), x.Alpha(), nil
}

// snapTrip sends the snapshot request s as op and returns the result.
func (e *wireEngine) snapTrip(op abi.Op, s abi.SnapshotRequest) (abi.SnapshotResult, error) {
	if err := e.usable(); err != nil {
		return abi.SnapshotResult{}, err
	}
	e.q.Snap = s
	err := e.roundTrip(op)
	e.q.Snap = abi.SnapshotRequest{}
	return e.r.Snap, err
}

func (e *wireEngine) SnapshotConfigure(cfg snapshot.Config) error {
	if err := checkSnapshotConfig(cfg); err != nil {
		return err
	}
	_, err := e.snapTrip(abi.OpSnapshotConfigure, abi.SnapshotRequest{Config: cfg})
	return err
}

func (e *wireEngine) SnapshotLookup(tokens []uint32, matched int, session, adapter uint64) (snapshot.Match, error) {
	if err := checkSnapshotArgs(0, matched); err != nil {
		return snapshot.Match{}, err
	}
	r, err := e.snapTrip(abi.OpSnapshotLookup, abi.SnapshotRequest{Tokens: tokens, Matched: int32(matched), Session: session, Adapter: adapter})
	if err != nil {
		return snapshot.Match{}, err
	}
	return r.Match, nil
}

func (e *wireEngine) SnapshotInsert(kind snapshot.Kind, tokens []uint32, adapter uint64, slot int32, session uint64) (snapshot.Displaced, error) {
	if err := checkSnapshotArgs(kind, 0); err != nil {
		return snapshot.Displaced{}, err
	}
	r, err := e.snapTrip(abi.OpSnapshotInsert, abi.SnapshotRequest{Kind: kind, Tokens: tokens, Adapter: adapter, Slot: slot, Session: session})
	if err != nil {
		return snapshot.Displaced{}, err
	}
	return r.Displaced, nil
}

func (e *wireEngine) SnapshotEvict(toTier bool, minTokens int) (snapshot.TierEvict, bool, error) {
	if err := checkSnapshotArgs(0, minTokens); err != nil {
		return snapshot.TierEvict{}, false, err
	}
	r, err := e.snapTrip(abi.OpSnapshotEvict, abi.SnapshotRequest{ToTier: toTier, MinTokens: int32(minTokens)})
	if err != nil {
		return snapshot.TierEvict{}, false, err
	}
	return r.Evict, r.Evicted, nil
}

func (e *wireEngine) SnapshotPromote(key, adapter uint64, slot int32, session uint64) error {
	_, err := e.snapTrip(abi.OpSnapshotPromote, abi.SnapshotRequest{Key: key, Adapter: adapter, Slot: slot, Session: session})
	return err
}

func (e *wireEngine) SnapshotForget(key, adapter uint64) error {
	_, err := e.snapTrip(abi.OpSnapshotForget, abi.SnapshotRequest{Key: key, Adapter: adapter})
	return err
}

func (e *wireEngine) SnapshotEndSession(session uint64) (snapshot.Displaced, error) {
	r, err := e.snapTrip(abi.OpSnapshotEndSession, abi.SnapshotRequest{Session: session})
	if err != nil {
		return snapshot.Displaced{}, err
	}
	return r.Displaced, nil
}

func (e *wireEngine) SnapshotStats() (snapshot.Stats, float64, error) {
	r, err := e.snapTrip(abi.OpSnapshotStats, abi.SnapshotRequest{})
	if err != nil {
		return snapshot.Stats{}, 0, err
	}
	return r.Stats, r.Alpha, nil
}
