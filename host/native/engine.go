package native

import (
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// Engine is the typed API over one cache instance. It mirrors core.Tree's
// operations with core's own argument, result and action types, so that
// engines which run the tree elsewhere (a WebAssembly module, or the
// wire-format dispatcher in process) are interchangeable with the direct
// one. Every method returns an error because a remote engine can fail in
// transport as well as in the tree.
//
// An Engine is not safe for concurrent use; the Controller serialises
// every call under its mutex.
type Engine interface {
	// Config returns the configuration the instance was created with.
	Config() core.Config

	// Match appends the device slots of the longest cached prefix of
	// tokens in ns to dst (see core.Tree.Match).
	Match(dst []int32, ns core.Namespace, tokens []uint32) (core.MatchResult, error)
	// Insert runs a whole insert and returns every action it produced.
	Insert(p core.InsertParams) (core.InsertResult, []core.Action, error)
	// BeginInsert starts a resumable insert (see core.Tree.BeginInsert).
	BeginInsert(p core.InsertParams) (core.InsertStep, error)
	// ResumeInsert continues a suspended insert after the host executed
	// the previous step's actions.
	ResumeInsert() (core.InsertStep, error)
	// EndInsert abandons a suspended insert and returns the actions it
	// had not yet handed out; the host must execute them.
	EndInsert() ([]core.Action, error)

	// Lock protects node and its path to the root; Unlock releases it.
	Lock(node core.NodeID, skip core.ComponentSet) (core.Receipt, error)
	Unlock(node core.NodeID, r core.Receipt, skipSWA bool) error
	// UnlockSWA releases the SWA (and Mamba) part of a lock early, keeping
	// Full locked, and returns the frees it decided (see
	// core.Tree.UnlockSWA). The lock is then released with Unlock and
	// skipSWA set.
	UnlockSWA(node core.NodeID, r core.Receipt) ([]core.Action, error)
	// EvictExcessPathStates enforces the per-path cap on Mamba states on
	// the path from tail to the root, as an insert's
	// ActionMambaEvictExcessPathStates asks, and returns the frees (see
	// core.Tree.EvictExcessPathStates).
	EvictExcessPathStates(tail core.NodeID) ([]core.Action, error)

	// Evict frees at least want device atoms of component c when that
	// many are unlocked, appending the frees to dst.
	Evict(c core.Component, want int, dst []core.Action) ([]core.Action, int, error)
	// EvictStart, EvictNext and EvictEnd run the same eviction step by
	// step.
	EvictStart(c core.Component, want int) error
	EvictNext() (core.EvictStep, error)
	EvictEnd() error

	// Evictable and Protected return the unlocked and locked device
	// atoms of component c.
	Evictable(c core.Component) (int, error)
	Protected(c core.Component) (int, error)

	// SanityCheck verifies every tree invariant (slow; tests and tools).
	SanityCheck() error
	// Render draws the tree (stable output, for tests and tools).
	Render() (string, error)

	// TakeEvents appends the KV cache events recorded since the last call
	// to dst, oldest first, and empties the queue (see core.Tree.TakeEvents
	// and abi/SPEC.md §4.7). Only an instance created with
	// core.Config.KVEvents records events; its queue grows until drained,
	// so a host that enables them calls TakeEvents regularly. The events'
	// slices (BlockHashes, TokenIDs) may live in the engine's reused
	// buffers, like actions: they are valid until the next call on the
	// engine; copy them to keep them.
	TakeEvents(dst []core.Event) ([]core.Event, error)

	// Reset empties the tree; every handle and receipt becomes stale.
	// With KV events it discards the undrained events and records
	// AllBlocksCleared.
	Reset() error
	// Close releases the instance; later calls return ErrClosed.
	Close() error
}

// directEngine calls a core.Tree in process.
type directEngine struct {
	cfg    core.Config
	t      *core.Tree
	closed bool
}

// NewDirectEngine returns the reference Engine: a core.Tree called
// directly in this process, without encoding. Other engines are checked
// against it.
// Errors: those of core.New.
func NewDirectEngine(cfg core.Config) (Engine, error) {
	t, err := core.New(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Components = append([]core.Component(nil), cfg.Components...)
	return &directEngine{cfg: cfg, t: t}, nil
}

var errEngineClosed = fmt.Errorf("%w: engine", ErrClosed)

func (e *directEngine) Config() core.Config {
	c := e.cfg
	c.Components = append([]core.Component(nil), e.cfg.Components...)
	return c
}

func (e *directEngine) Match(dst []int32, ns core.Namespace, tokens []uint32) (core.MatchResult, error) {
	if e.closed {
		return core.MatchResult{Indices: dst}, errEngineClosed
	}
	return e.t.Match(dst, ns, tokens)
}

func (e *directEngine) Insert(p core.InsertParams) (core.InsertResult, []core.Action, error) {
	if e.closed {
		return core.InsertResult{}, nil, errEngineClosed
	}
	return e.t.Insert(p)
}

func (e *directEngine) BeginInsert(p core.InsertParams) (core.InsertStep, error) {
	if e.closed {
		return core.InsertStep{}, errEngineClosed
	}
	return e.t.BeginInsert(p)
}

func (e *directEngine) ResumeInsert() (core.InsertStep, error) {
	if e.closed {
		return core.InsertStep{}, errEngineClosed
	}
	return e.t.ResumeInsert()
}

func (e *directEngine) EndInsert() ([]core.Action, error) {
	if e.closed {
		return nil, errEngineClosed
	}
	return e.t.EndInsert(), nil
}

func (e *directEngine) Lock(node core.NodeID, skip core.ComponentSet) (core.Receipt, error) {
	if e.closed {
		return core.Receipt{}, errEngineClosed
	}
	return e.t.Lock(node, skip)
}

func (e *directEngine) Unlock(node core.NodeID, r core.Receipt, skipSWA bool) error {
	if e.closed {
		return errEngineClosed
	}
	return e.t.Unlock(node, r, skipSWA)
}

func (e *directEngine) UnlockSWA(node core.NodeID, r core.Receipt) ([]core.Action, error) {
	if e.closed {
		return nil, errEngineClosed
	}
	return e.t.UnlockSWA(node, r)
}

func (e *directEngine) EvictExcessPathStates(tail core.NodeID) ([]core.Action, error) {
	if e.closed {
		return nil, errEngineClosed
	}
	return e.t.EvictExcessPathStates(tail)
}

func (e *directEngine) Evict(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	if e.closed {
		return dst, 0, errEngineClosed
	}
	return e.t.Evict(c, want, dst)
}

func (e *directEngine) EvictStart(c core.Component, want int) error {
	if e.closed {
		return errEngineClosed
	}
	return e.t.EvictStart(c, want)
}

func (e *directEngine) EvictNext() (core.EvictStep, error) {
	if e.closed {
		return core.EvictStep{}, errEngineClosed
	}
	return e.t.EvictNext()
}

func (e *directEngine) EvictEnd() error {
	if e.closed {
		return errEngineClosed
	}
	e.t.EvictEnd()
	return nil
}

func (e *directEngine) Evictable(c core.Component) (int, error) {
	if e.closed {
		return 0, errEngineClosed
	}
	return e.t.Evictable(c), nil
}

func (e *directEngine) Protected(c core.Component) (int, error) {
	if e.closed {
		return 0, errEngineClosed
	}
	return e.t.Protected(c), nil
}

func (e *directEngine) SanityCheck() error {
	if e.closed {
		return errEngineClosed
	}
	return e.t.SanityCheck()
}

func (e *directEngine) Render() (string, error) {
	if e.closed {
		return "", errEngineClosed
	}
	return e.t.Render(), nil
}

func (e *directEngine) TakeEvents(dst []core.Event) ([]core.Event, error) {
	if e.closed {
		return dst, errEngineClosed
	}
	return e.t.TakeEvents(dst), nil
}

func (e *directEngine) Reset() error {
	if e.closed {
		return errEngineClosed
	}
	e.t.Reset()
	return nil
}

func (e *directEngine) Close() error {
	e.closed = true
	e.t = nil
	return nil
}
