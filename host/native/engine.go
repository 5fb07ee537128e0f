package native

import (
	"fmt"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/blockcache"
	"github.com/radixkv/radixkv/core/snapshot"
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
//
// Actions an engine returns, with their slot lists, are valid until the
// next call on it (Close included), as core's own are until its next
// mutation: the direct engine's live in the tree's buffers, the wire
// engines' slot lists are views of the guest's response (on
// little-endian hosts). A caller that calls the engine again before it
// has used them copies them first.
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

	// The host tier (HiCache; see core's host.go, loadback.go and
	// hostevict.go, and abi/SPEC.md §4.8). Each mirrors the core.Tree
	// method of its name. On an instance without a host tier the
	// host-tier operations fail with core.ErrInvalidArgument, as the
	// linker's do without core.Config.ExternalLinker. Actions are valid
	// until the next call on the engine; treat the other slices in
	// results as read-only (the direct engine's may be the tree's own).

	// HostLock protects node's host copies from host eviction; HostUnlock
	// releases its receipt (Receipt.Host is set).
	HostLock(node core.NodeID) (core.Receipt, error)
	HostUnlock(node core.NodeID, r core.Receipt) error
	// BackupSpec says what backing node up copies; CommitBackup records
	// the host slots the copy used, shaped like the spec.
	BackupSpec(node core.NodeID) (core.BackupSpec, error)
	CommitBackup(node core.NodeID, c core.BackupCommit) error
	// MarkWriteThroughPending and FinishWriteThrough bracket a
	// write-through copy under the host's ack.
	MarkWriteThroughPending(nodes []core.NodeID, ack int64) ([]core.NodeID, error)
	FinishWriteThrough(nodes []core.NodeID, ack int64) error
	// Demote frees a backed-up evictable device leaf's device data, keeping
	// its host copy; DropSubtreeNoHost deletes an unbacked one with its
	// host-only descendants (a write-back eviction whose backup failed).
	Demote(node core.NodeID) ([]core.Action, error)
	DropSubtreeNoHost(node core.NodeID) (bool, []core.Action, error)
	// LoadBackPlan, CommitLoadBack and FinishLoadBack bring a host-only
	// prefix back to the device.
	LoadBackPlan(anchor core.NodeID) (core.LoadBackPlan, error)
	CommitLoadBack(anchor core.NodeID, c core.LoadBackCommit) ([]core.Action, error)
	FinishLoadBack(anchor core.NodeID) error
	// InsertHost adds KV fetched into host memory below anchor.
	InsertHost(anchor core.NodeID, ns core.Namespace, tokens []uint32, hostSlots []int32) (core.InsertHostResult, []core.Action, error)
	// EvictHost frees at least want host slots of component c when that
	// many are evictable, appending the frees to dst.
	EvictHost(c core.Component, want int, dst []core.Action) ([]core.Action, int, error)
	// StorageSpec returns the storage (L3) keys of node's host data;
	// BackfillHashes computes the page hashes still missing and returns
	// how many nodes it hashed.
	StorageSpec(node core.NodeID) (core.StorageSpec, error)
	BackfillHashes() (int, error)
	// The external cache linker's marks (core.Config.ExternalLinker).
	LinkerChain(node core.NodeID) ([]core.NodeID, error)
	MarkLinkerPending(nodes []core.NodeID, id int64) error
	FinishLinkerOffload(nodes []core.NodeID, id int64, ok bool) error
	MarkLinkerStoredPath(from, until core.NodeID) error
	// Protect and Unprotect are scheduler-aware protection (opt-in): the
	// device-cached prefix of a request waiting in the host's queue goes
	// after every unprotected leaf in a Full eviction, until Unprotect
	// (the request was admitted or dropped). See core.Tree.Protect.
	Protect(ns core.Namespace, tokens []uint32) (core.Protection, error)
	Unprotect(serial uint64) error
	// SanityCheckOngoing is SanityCheck that also checks the host's
	// write-throughs and load-backs in flight (slow; tests and tools).
	SanityCheckOngoing(o core.Ongoing) error

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
	// With KV events it keeps the undrained events and records
	// AllBlocksCleared after them.
	Reset() error
	// Close releases the instance; later calls return ErrClosed.
	Close() error
}

// MatchLocker is an optional Engine method: Match followed by Lock of
// the match's LastDevice node with skip, in one call (one round trip on
// a wire engine, ABI op match_lock). The tree changes exactly as the
// two calls change it. On error nothing is locked and the returned
// result's Actions are what the host must still execute: none when the
// match failed, the match's own when the lock failed (the match stands,
// as after two calls). The Controller uses it on arrival when the
// engine has it and the tree has no host tier (a host hit is loaded
// back between the match and the lock).
type MatchLocker interface {
	MatchLock(dst []int32, ns core.Namespace, tokens []uint32, skip core.ComponentSet) (core.MatchResult, core.Receipt, error)
}

// InsertUnlocker is an optional Engine method: BeginInsert followed,
// when the insert completed in that one step, by Unlock of node and rc
// (one round trip on a wire engine, ABI op begin_insert_matched_unlock).
// The tree changes exactly as the two calls change it. err is the
// insert's error (nothing was unlocked then). tried reports whether the
// unlock was attempted (the insert completed); unlockErr is its error.
// A suspended insert unlocks nothing: the caller resumes it and unlocks.
// The Controller's Finish uses it when the tree has neither a host tier
// nor Mamba (whose actions and donations call the engine between the
// insert and the unlock).
type InsertUnlocker interface {
	BeginInsertUnlock(p core.InsertParams, node core.NodeID, rc core.Receipt, skipSWA bool) (step core.InsertStep, tried bool, unlockErr, err error)
}

// matchTicket names one match of a wire engine, whose guest keeps the
// instance's last match for the insert after it (begin_insert_matched);
// 0 names none. Tickets are never reused within an engine and carry the
// engine's mask, so another engine's ticket names nothing here.
type matchTicket uint64

// keptMatcher is implemented by the wire engines for the Controller, the
// one caller that owns the buffers it matches from and inserts from and
// never rewrites them in between. It is MatchLock and the two insert
// calls with a vouch instead of a check:
//
//   - matchLockKept is MatchLock whose caller promises to leave tokens and
//     the result's Indices unchanged for as long as it names the match's
//     ticket. The engine keeps no copy of either, only their lengths and
//     the namespace. (When the caller cannot keep the promise, it stops
//     naming the ticket.)
//   - beginInsertKept and beginInsertUnlockKept are BeginInsert and
//     BeginInsertUnlock whose caller vouches, by naming t, that p.Tokens
//     is a prefix of the tokens of match t and that p.Slots starts with
//     that match's Indices (as many as both have). When t is the guest's
//     last match too, the insert names it (no tokens, no matched slots on
//     the wire, nothing copied or compared on the host); otherwise it is
//     the plain call, which may still name a last match the engine holds
//     a copy of.
//
// A plain insert never names a kept match it holds no copy of, so a
// caller that does not vouch is never trusted. Whatever the vouch, the
// guest answers stale_match for a match it no longer holds (and the
// engine sends the insert in full), and the engine forgets its last
// match on every match, failed ones included, and on reset.
type keptMatcher interface {
	matchLockKept(dst []int32, ns core.Namespace, tokens []uint32, skip core.ComponentSet) (core.MatchResult, core.Receipt, matchTicket, error)
	beginInsertKept(p core.InsertParams, t matchTicket) (core.InsertStep, error)
	beginInsertUnlockKept(p core.InsertParams, t matchTicket, node core.NodeID, rc core.Receipt, skipSWA bool) (step core.InsertStep, tried bool, unlockErr, err error)
}

// directEngine calls a core.Tree in process.
type directEngine struct {
	cfg    core.Config
	t      *core.Tree
	closed bool
	// snap is the instance's SSM snapshot index (made on first use, from
	// snapCfg), as the ABI guest keeps one per instance.
	snap    *snapshot.Index
	snapCfg snapshot.Config
	// blocks is the block-cache facade (made on first use from blocksCfg).
	blocks    *blockcache.Cache
	blocksCfg blockcache.Config
	// An injected trap (InjectTrap): after trapIn more calls, failed is
	// set and every call fails with it.
	trapArmed bool
	trapIn    int
	failed    error
}

// down reports whether the engine refuses the call (closed, or failed by
// an injected trap), counting the call towards an armed trap.
func (e *directEngine) down() bool {
	if e.trapArmed {
		if e.trapIn == 0 {
			e.trapArmed = false
			e.failed = fmt.Errorf("%w (%w): %w", ErrGuest, ErrEngineFailed, errInjectedTrap)
		} else {
			e.trapIn--
		}
	}
	return e.closed || e.failed != nil
}

// downErr is the error of a refused call.
func (e *directEngine) downErr() error {
	if e.closed {
		return errEngineClosed
	}
	return e.failed
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
	if e.down() {
		return core.MatchResult{Indices: dst}, e.downErr()
	}
	return e.t.Match(dst, ns, tokens)
}

// MatchLock is Match then Lock, so the controller takes one arrival
// path on every engine.
func (e *directEngine) MatchLock(dst []int32, ns core.Namespace, tokens []uint32, skip core.ComponentSet) (core.MatchResult, core.Receipt, error) {
	m, err := e.Match(dst, ns, tokens)
	if err != nil {
		return m, core.Receipt{}, err
	}
	rc, err := e.Lock(m.LastDevice, skip)
	return m, rc, err
}

// BeginInsertUnlock is BeginInsert then, when it completed, Unlock.
func (e *directEngine) BeginInsertUnlock(p core.InsertParams, node core.NodeID, rc core.Receipt, skipSWA bool) (core.InsertStep, bool, error, error) {
	step, err := e.BeginInsert(p)
	if err != nil || !step.Done {
		return step, false, nil, err
	}
	return step, true, e.Unlock(node, rc, skipSWA), nil
}

func (e *directEngine) Insert(p core.InsertParams) (core.InsertResult, []core.Action, error) {
	if e.down() {
		return core.InsertResult{}, nil, e.downErr()
	}
	return e.t.Insert(p)
}

func (e *directEngine) BeginInsert(p core.InsertParams) (core.InsertStep, error) {
	if e.down() {
		return core.InsertStep{}, e.downErr()
	}
	return e.t.BeginInsert(p)
}

func (e *directEngine) ResumeInsert() (core.InsertStep, error) {
	if e.down() {
		return core.InsertStep{}, e.downErr()
	}
	return e.t.ResumeInsert()
}

func (e *directEngine) EndInsert() ([]core.Action, error) {
	if e.down() {
		return nil, e.downErr()
	}
	return e.t.EndInsert(), nil
}

func (e *directEngine) Lock(node core.NodeID, skip core.ComponentSet) (core.Receipt, error) {
	if e.down() {
		return core.Receipt{}, e.downErr()
	}
	return e.t.Lock(node, skip)
}

func (e *directEngine) Unlock(node core.NodeID, r core.Receipt, skipSWA bool) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.Unlock(node, r, skipSWA)
}

func (e *directEngine) UnlockSWA(node core.NodeID, r core.Receipt) ([]core.Action, error) {
	if e.down() {
		return nil, e.downErr()
	}
	return e.t.UnlockSWA(node, r)
}

func (e *directEngine) EvictExcessPathStates(tail core.NodeID) ([]core.Action, error) {
	if e.down() {
		return nil, e.downErr()
	}
	return e.t.EvictExcessPathStates(tail)
}

func (e *directEngine) Evict(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	if e.down() {
		return dst, 0, e.downErr()
	}
	return e.t.Evict(c, want, dst)
}

func (e *directEngine) EvictStart(c core.Component, want int) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.EvictStart(c, want)
}

func (e *directEngine) EvictNext() (core.EvictStep, error) {
	if e.down() {
		return core.EvictStep{}, e.downErr()
	}
	return e.t.EvictNext()
}

func (e *directEngine) EvictEnd() error {
	if e.down() {
		return e.downErr()
	}
	e.t.EvictEnd()
	return nil
}

func (e *directEngine) Evictable(c core.Component) (int, error) {
	if e.down() {
		return 0, e.downErr()
	}
	return e.t.Evictable(c), nil
}

func (e *directEngine) Protected(c core.Component) (int, error) {
	if e.down() {
		return 0, e.downErr()
	}
	return e.t.Protected(c), nil
}

func (e *directEngine) SanityCheck() error {
	if e.down() {
		return e.downErr()
	}
	return e.t.SanityCheck()
}

func (e *directEngine) Render() (string, error) {
	if e.down() {
		return "", e.downErr()
	}
	return e.t.Render(), nil
}

func (e *directEngine) HostLock(node core.NodeID) (core.Receipt, error) {
	if e.down() {
		return core.Receipt{}, e.downErr()
	}
	return e.t.HostLock(node)
}

func (e *directEngine) HostUnlock(node core.NodeID, r core.Receipt) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.HostUnlock(node, r)
}

func (e *directEngine) BackupSpec(node core.NodeID) (core.BackupSpec, error) {
	if e.down() {
		return core.BackupSpec{Mamba: -1}, e.downErr()
	}
	return e.t.BackupSpec(node)
}

func (e *directEngine) CommitBackup(node core.NodeID, c core.BackupCommit) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.CommitBackup(node, c)
}

func (e *directEngine) MarkWriteThroughPending(nodes []core.NodeID, ack int64) ([]core.NodeID, error) {
	if e.down() {
		return nil, e.downErr()
	}
	return e.t.MarkWriteThroughPending(nodes, ack)
}

func (e *directEngine) FinishWriteThrough(nodes []core.NodeID, ack int64) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.FinishWriteThrough(nodes, ack)
}

func (e *directEngine) Demote(node core.NodeID) ([]core.Action, error) {
	if e.down() {
		return nil, e.downErr()
	}
	return e.t.Demote(node)
}

func (e *directEngine) DropSubtreeNoHost(node core.NodeID) (bool, []core.Action, error) {
	if e.down() {
		return false, nil, e.downErr()
	}
	return e.t.DropSubtreeNoHost(node)
}

func (e *directEngine) LoadBackPlan(anchor core.NodeID) (core.LoadBackPlan, error) {
	if e.down() {
		return core.LoadBackPlan{Mamba: -1}, e.downErr()
	}
	return e.t.LoadBackPlan(anchor)
}

func (e *directEngine) CommitLoadBack(anchor core.NodeID, c core.LoadBackCommit) ([]core.Action, error) {
	if e.down() {
		return nil, e.downErr()
	}
	return e.t.CommitLoadBack(anchor, c)
}

func (e *directEngine) FinishLoadBack(anchor core.NodeID) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.FinishLoadBack(anchor)
}

func (e *directEngine) InsertHost(anchor core.NodeID, ns core.Namespace, tokens []uint32, hostSlots []int32) (core.InsertHostResult, []core.Action, error) {
	if e.down() {
		return core.InsertHostResult{}, nil, e.downErr()
	}
	return e.t.InsertHost(anchor, ns, tokens, hostSlots)
}

func (e *directEngine) EvictHost(c core.Component, want int, dst []core.Action) ([]core.Action, int, error) {
	if e.down() {
		return dst, 0, e.downErr()
	}
	return e.t.EvictHost(c, want, dst)
}

func (e *directEngine) StorageSpec(node core.NodeID) (core.StorageSpec, error) {
	if e.down() {
		return core.StorageSpec{}, e.downErr()
	}
	return e.t.StorageSpec(node)
}

func (e *directEngine) BackfillHashes() (int, error) {
	if e.down() {
		return 0, e.downErr()
	}
	return e.t.BackfillHashes(), nil
}

func (e *directEngine) LinkerChain(node core.NodeID) ([]core.NodeID, error) {
	if e.down() {
		return nil, e.downErr()
	}
	return e.t.LinkerChain(node)
}

func (e *directEngine) MarkLinkerPending(nodes []core.NodeID, id int64) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.MarkLinkerPending(nodes, id)
}

func (e *directEngine) FinishLinkerOffload(nodes []core.NodeID, id int64, ok bool) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.FinishLinkerOffload(nodes, id, ok)
}

func (e *directEngine) MarkLinkerStoredPath(from, until core.NodeID) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.MarkLinkerStoredPath(from, until)
}

func (e *directEngine) Protect(ns core.Namespace, tokens []uint32) (core.Protection, error) {
	if e.down() {
		return core.Protection{}, e.downErr()
	}
	return e.t.Protect(ns, tokens)
}

func (e *directEngine) Unprotect(serial uint64) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.Unprotect(serial)
}

func (e *directEngine) SanityCheckOngoing(o core.Ongoing) error {
	if e.down() {
		return e.downErr()
	}
	return e.t.SanityCheckOngoing(o)
}

func (e *directEngine) TakeEvents(dst []core.Event) ([]core.Event, error) {
	if e.down() {
		return dst, e.downErr()
	}
	return e.t.TakeEvents(dst), nil
}

func (e *directEngine) Reset() error {
	if e.down() {
		return e.downErr()
	}
	e.t.Reset()
	e.snap, e.blocks = nil, nil // as the guest does: the next snapshot or block op starts empty
	return nil
}

func (e *directEngine) Close() error {
	e.closed = true
	e.t = nil
	return nil
}
