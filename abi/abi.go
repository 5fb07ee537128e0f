package abi

import (
	"fmt"
	"strconv"

	"github.com/radixkv/radixkv/core"
)

// Version is the ABI version this package speaks. A guest answers only
// requests that carry exactly this version (see SPEC.md, "Versioning").
const Version uint16 = 1

// Header sizes and magics. The magics are the ASCII bytes "RKVQ" (request)
// and "RKVS" (response), read as little-endian u32.
const (
	RequestHeaderSize  = 24
	ResponseHeaderSize = 24
	RequestMagic       = 0x51564B52 // "RKVQ"
	ResponseMagic      = 0x53564B52 // "RKVS"
)

// NumComponents is the number of per-component entries in fixed-size wire
// arrays (node info values, locks, stats). It is part of the layout of
// this ABI version.
const NumComponents = 3

// Op is a request's operation code.
type Op uint16

// Operation codes. See SPEC.md for each body.
const (
	OpVersion Op = 0x0001 // ABI version and implementation name
	OpCreate  Op = 0x0002 // create an instance from a core.Config
	OpDestroy Op = 0x0003 // destroy an instance; its handle is never reused
	OpReset   Op = 0x0004 // core.Tree.Reset
	OpStats   Op = 0x0005 // sizes, flags and configuration of an instance

	OpMatch        Op = 0x0010 // core.Tree.Match
	OpInsert       Op = 0x0011 // core.Tree.Insert (one shot)
	OpBeginInsert  Op = 0x0012 // core.Tree.BeginInsert
	OpResumeInsert Op = 0x0013 // core.Tree.ResumeInsert
	OpEndInsert    Op = 0x0014 // core.Tree.EndInsert

	OpLock   Op = 0x0018 // core.Tree.Lock
	OpUnlock Op = 0x0019 // core.Tree.Unlock

	OpEvict      Op = 0x0020 // core.Tree.Evict (one shot)
	OpEvictStart Op = 0x0021 // core.Tree.EvictStart
	OpEvictNext  Op = 0x0022 // core.Tree.EvictNext
	OpEvictEnd   Op = 0x0023 // core.Tree.EvictEnd

	// OpEvictExcessPathStates runs core.Tree.EvictExcessPathStates (the
	// host's answer to an ActionMambaEvictExcessPathStates). It sits with
	// the eviction ops.
	OpEvictExcessPathStates Op = 0x0024

	OpSanityCheck  Op = 0x0030 // core.Tree.SanityCheck
	OpInspect      Op = 0x0031 // core.Tree.Inspect
	OpRender       Op = 0x0032 // core.Tree.Render
	OpDeviceLeaves Op = 0x0033 // core.Tree.DeviceLeaves
	OpNodes        Op = 0x0034 // core.Tree.Nodes
	OpDFSOrder     Op = 0x0035 // core.Tree.DFSWeightOrder
	OpLRUOrder     Op = 0x0036 // core.Tree.LRUOrder

	OpSanityCheckOngoing Op = 0x0037 // core.Tree.SanityCheckOngoing

	OpUnlockSWAEarly Op = 0x0040 // core.Tree.UnlockSWA: early release of a request's SWA lock

	// The host tier (HiCache). 0x0041–0x0046 were reserved under these
	// names before they were defined; load_back plans a load-back.
	OpHostLock       Op = 0x0041 // core.Tree.HostLock
	OpHostUnlock     Op = 0x0042 // core.Tree.HostUnlock
	OpEvictHost      Op = 0x0043 // core.Tree.EvictHost
	OpCommitBackup   Op = 0x0044 // core.Tree.CommitBackup
	OpLoadBack       Op = 0x0045 // core.Tree.LoadBackPlan
	OpFinishLoadBack Op = 0x0046 // core.Tree.FinishLoadBack

	OpTakeEvents Op = 0x0047 // core.Tree.TakeEvents: drain recorded KV events

	OpBackupSpec              Op = 0x0048 // core.Tree.BackupSpec
	OpMarkWriteThroughPending Op = 0x0049 // core.Tree.MarkWriteThroughPending
	OpFinishWriteThrough      Op = 0x004A // core.Tree.FinishWriteThrough
	OpDemote                  Op = 0x004B // core.Tree.Demote
	OpDropSubtreeNoHost       Op = 0x004C // core.Tree.DropSubtreeNoHost
	OpCommitLoadBack          Op = 0x004D // core.Tree.CommitLoadBack
	OpInsertHost              Op = 0x004E // core.Tree.InsertHost

	// Storage keys and the external cache linker.
	OpStorageSpec          Op = 0x0050 // core.Tree.StorageSpec
	OpBackfillHashes       Op = 0x0051 // core.Tree.BackfillHashes
	OpLinkerChain          Op = 0x0052 // core.Tree.LinkerChain
	OpMarkLinkerPending    Op = 0x0053 // core.Tree.MarkLinkerPending
	OpFinishLinkerOffload  Op = 0x0054 // core.Tree.FinishLinkerOffload
	OpMarkLinkerStoredPath Op = 0x0055 // core.Tree.MarkLinkerStoredPath

	// Scheduler-aware protection (opt-in; 0x0058–0x005F are this group's).
	OpProtect   Op = 0x0058 // core.Tree.Protect: protect a queued request's prefix
	OpUnprotect Op = 0x0059 // core.Tree.Unprotect
)

var opNames = map[Op]string{
	OpVersion: "version", OpCreate: "create", OpDestroy: "destroy", OpReset: "reset", OpStats: "stats",
	OpMatch: "match", OpInsert: "insert", OpBeginInsert: "begin_insert", OpResumeInsert: "resume_insert",
	OpEndInsert: "end_insert", OpLock: "lock", OpUnlock: "unlock", OpEvict: "evict",
	OpEvictStart: "evict_start", OpEvictNext: "evict_next", OpEvictEnd: "evict_end",
	OpEvictExcessPathStates: "evict_excess_path_states",
	OpSanityCheck:           "sanity_check", OpInspect: "inspect", OpRender: "render",
	OpDeviceLeaves: "device_leaves", OpNodes: "nodes", OpDFSOrder: "dfs_weight_order", OpLRUOrder: "lru_order",
	OpSanityCheckOngoing: "sanity_check_ongoing",
	OpUnlockSWAEarly:     "unlock_swa_early", OpHostLock: "host_lock", OpHostUnlock: "host_unlock",
	OpEvictHost: "evict_host", OpCommitBackup: "commit_backup", OpLoadBack: "load_back",
	OpFinishLoadBack: "finish_load_back", OpTakeEvents: "take_events",
	OpBackupSpec: "backup_spec", OpMarkWriteThroughPending: "mark_write_through_pending",
	OpFinishWriteThrough: "finish_write_through", OpDemote: "demote", OpDropSubtreeNoHost: "drop_subtree_no_host",
	OpCommitLoadBack: "commit_load_back", OpInsertHost: "insert_host",
	OpStorageSpec: "storage_spec", OpBackfillHashes: "backfill_hashes", OpLinkerChain: "linker_chain",
	OpMarkLinkerPending: "mark_linker_pending", OpFinishLinkerOffload: "finish_linker_offload",
	OpMarkLinkerStoredPath: "mark_linker_stored_path",
	OpProtect:              "protect", OpUnprotect: "unprotect",
}

// opTable holds opNames by code, filled once at init: Known and String
// run on every call, and a map lookup costs hundreds of nanoseconds in
// the WebAssembly build (measured 477 ns, against a few for an index).
var opTable = func() (t [256]string) {
	for op, name := range opNames {
		if int(op) >= len(t) {
			panic("abi: op code " + name + " outside opTable")
		}
		t[op] = name
	}
	return t
}()

// registerOp defines an op added by a file of its own (from its init,
// which runs after opTable was filled from opNames).
func registerOp(op Op, name string) {
	if int(op) >= len(opTable) {
		panic("abi: op code " + name + " outside opTable")
	}
	opNames[op] = name
	opTable[op] = name
}

// Known reports whether op is a defined operation code.
func (op Op) Known() bool { return int(op) < len(opTable) && opTable[op] != "" }

// NeedsInstance reports whether the request names an existing instance.
func (op Op) NeedsInstance() bool { return op != OpVersion && op != OpCreate }

// String returns the op's snake_case name.
func (op Op) String() string {
	if op.Known() {
		return opTable[op]
	}
	return "op(0x" + strconv.FormatUint(uint64(op), 16) + ")"
}

// Status is a response's outcome.
type Status uint16

const (
	StatusOK    Status = 0
	StatusError Status = 1
)

// Code classifies an error response. Codes 1–15 are ABI and codec errors;
// codes from 16 map one to one onto core's error sentinels.
type Code uint16

const (
	CodeNone             Code = 0
	CodeInternal         Code = 1  // the guest recovered from a bug; the instance is poisoned until reset
	CodeTruncated        Code = 2  // the message ended before a field
	CodeBadMagic         Code = 3  // the first four bytes are not "RKVQ"
	CodeBadVersion       Code = 4  // the request's version is not this guest's
	CodeUnknownOp        Code = 5  // the op code is not defined
	CodeUnknownInstance  Code = 6  // no live instance has this handle
	CodeMalformed        Code = 7  // a field is out of its domain (flags, bools, counts, trailing bytes)
	CodeUnsupported      Code = 8  // core.ErrUnsupported
	CodeExhausted        Code = 9  // no instance handle left
	CodeInvalidConfig    Code = 16 // core.ErrInvalidConfig
	CodeUnknownPolicy    Code = 17 // core.ErrUnknownPolicy
	CodeInvalidArgument  Code = 18 // core.ErrInvalidArgument
	CodeStaleNode        Code = 19 // core.ErrStaleNode
	CodeReceipt          Code = 20 // core.ErrReceipt
	CodeInsertInFlight   Code = 21 // core.ErrInsertInFlight
	CodeNoInsert         Code = 22 // core.ErrNoInsert
	CodeEvictionInFlight Code = 23 // core.ErrEvictionInFlight
	CodeNoEviction       Code = 24 // core.ErrNoEviction
	CodeBusy             Code = 25 // core.ErrBusy
	CodeBroken           Code = 26 // core.ErrBroken
	CodeSanity           Code = 27 // core.ErrSanity
)

var codeNames = map[Code]string{
	CodeNone: "none", CodeInternal: "internal", CodeTruncated: "truncated", CodeBadMagic: "bad_magic",
	CodeBadVersion: "bad_version", CodeUnknownOp: "unknown_op", CodeUnknownInstance: "unknown_instance",
	CodeMalformed: "malformed", CodeUnsupported: "unsupported", CodeExhausted: "exhausted",
	CodeInvalidConfig: "invalid_config", CodeUnknownPolicy: "unknown_policy",
	CodeInvalidArgument: "invalid_argument", CodeStaleNode: "stale_node", CodeReceipt: "receipt",
	CodeInsertInFlight: "insert_in_flight", CodeNoInsert: "no_insert",
	CodeEvictionInFlight: "eviction_in_flight", CodeNoEviction: "no_eviction", CodeBusy: "busy",
	CodeBroken: "broken", CodeSanity: "sanity",
}

// String returns the code's snake_case name.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "code(" + strconv.Itoa(int(c)) + ")"
}

// Error is a decoding or dispatch failure with its wire code.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return "abi: " + e.Code.String() + ": " + e.Msg }

func errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}

// Request is a decoded request. Which fields are meaningful depends on Op
// (see SPEC.md); the others are zero. DecodeRequest reuses the slices of
// the Request it decodes into.
type Request struct {
	Op       Op
	Instance uint32
	ID       uint64

	Config core.Config // create
	// Insert carries match (Namespace, Tokens), insert and begin_insert,
	// and insert_host (Namespace, Tokens, and the host slots in Slots).
	Insert core.InsertParams
	// Node is the node of the single-node ops (lock, unlock, inspect,
	// host_lock, backup_spec, demote, load_back, ...), the anchor of
	// insert_host, and from of mark_linker_stored_path.
	Node      core.NodeID
	Skip      core.ComponentSet // lock
	Receipt   core.Receipt      // unlock, unlock_swa_early, host_unlock
	SkipSWA   bool              // unlock
	Component core.Component    // evict, evict_start, lru_order, evict_host
	Host      bool              // lru_order
	Want      int64             // evict, evict_start, evict_host
	Alpha     float64           // mamba_set_alpha
	// Nodes is dfs_weight_order's ids and the node list of
	// mark_write_through_pending, finish_write_through,
	// mark_linker_pending and finish_linker_offload.
	Nodes     []core.NodeID
	Ack       int64               // mark_write_through_pending, finish_write_through
	OffloadID int64               // mark_linker_pending, finish_linker_offload
	OK        bool                // finish_linker_offload
	Until     core.NodeID         // mark_linker_stored_path (0: the root)
	Backup    core.BackupCommit   // commit_backup
	LoadBack  core.LoadBackCommit // commit_load_back
	Ongoing   core.Ongoing        // sanity_check_ongoing
	Snap      SnapshotRequest     // the snapshot index ops (0x0060-0x0067)
	Blocks    BlocksRequest       // the block-cache ops (0x0068-0x006E)
	Serial    uint64              // unprotect: the protection's serial
	// Matched names begin_insert_matched's match; Insert then holds the
	// namespace, the slots after the matched ones, and the parameters.
	Matched MatchedRef

	// views says which of Insert's arrays the last decode read in place
	// (DecodeRequestViewing); viewTok and viewSlot are where those views
	// start, so that a later decode never writes into them.
	views    Views
	viewTok  *uint32
	viewSlot *int32
}

// Stats is the body of a stats response.
type Stats struct {
	Root             core.NodeID
	PageSize         uint32
	Components       core.ComponentSet
	Policy           string
	Evictable        [NumComponents]int64
	Protected        [NumComponents]int64
	InsertInFlight   bool
	EvictionInFlight bool
	LiveReceipts     uint32
}

// Response is a decoded (or to-be-encoded) response. Which fields are
// meaningful depends on Op and Status (see SPEC.md).
type Response struct {
	Op       Op
	Status   Status
	Code     Code
	Instance uint32
	ID       uint64

	// Message is the error text (Status == StatusError).
	Message string

	ABIVersion uint32 // version
	Impl       string // version

	Handle   uint32            // create
	Root     core.NodeID       // create, reset
	PageSize uint32            // create
	CompSet  core.ComponentSet // create
	Policy   string            // create

	Stats   Stats
	Match   core.MatchResult // match (Indices, lengths, nodes; Actions travel in Actions)
	Done    bool             // begin_insert, resume_insert, evict_next
	Insert  core.InsertResult
	Receipt core.Receipt // lock, host_lock, match_lock
	// Unlock is begin_insert_matched_unlock's report of its unlock.
	Unlock UnlockOutcome
	Freed  int64       // evict, evict_next, evict_host
	Node   core.NodeID // evict_next
	Info   core.NodeInfo
	Text   string        // render
	Nodes  []core.NodeID // device_leaves, nodes, lru_order, mark_write_through_pending, linker_chain
	Order  []int32       // dfs_weight_order
	Events []core.Event  // take_events, in the order the tree recorded them

	Spec       core.BackupSpec       // backup_spec
	Plan       core.LoadBackPlan     // load_back
	Dropped    bool                  // drop_subtree_no_host
	InsertHost core.InsertHostResult // insert_host
	Storage    core.StorageSpec      // storage_spec
	Hashed     uint32                // backfill_hashes
	Snap       SnapshotResult        // the snapshot index ops (0x0060-0x0067)
	Blocks     BlocksResult          // the block-cache ops (0x0068-0x006E)
	Protection core.Protection       // protect

	// Actions are the host's work, in order; they travel on success and
	// on error alike.
	Actions []core.Action

	// Tag is XORed into the high 32 bits of every non-zero node id when
	// the response is encoded (see SPEC.md, "Node ids"). It is not itself
	// on the wire; decoding leaves ids in their wire form.
	Tag uint32
}
