package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
)

// Regression tests for host-tier (HiCache) behaviour found while
// recording the host transcripts (testdata/host*.txt, linker.txt). Each
// states the rule it checks and where SEMANTICS.md says so.

// hostRig drives a tree with the host's side of the host tier: host slots
// from a counter, backups committed at once.
type hostRig struct {
	t    *testing.T
	tree *core.Tree
	host int32
	slot int32
	ack  int64
}

func newHostRig(t *testing.T, cfg core.Config) *hostRig {
	t.Helper()
	cfg.HostTier = true
	tree, err := core.New(cfg)
	require.NoError(t, err)
	return &hostRig{t: t, tree: tree, host: 1000, slot: 100}
}

func hrSeq[T uint32 | int32](first T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = first + T(i)
	}
	return out
}

// insert inserts tokens with fresh slots (and Mamba state mamba, if the
// tree has Mamba) and returns the last node; actions are not executed.
func (h *hostRig) insert(tokens []uint32, mamba int32) core.NodeID {
	h.t.Helper()
	slots := hrSeq(h.slot, len(tokens))
	h.slot += int32(len(tokens))
	res, _, err := h.tree.Insert(core.InsertParams{Tokens: tokens, Slots: slots, MambaSlot: mamba})
	require.NoError(h.t, err)
	return res.LastDevice
}

// backup copies node to the host (BackupSpec, CommitBackup).
func (h *hostRig) backup(node core.NodeID) {
	h.t.Helper()
	spec, err := h.tree.BackupSpec(node)
	require.NoError(h.t, err)
	c := core.BackupCommit{Mamba: -1}
	next := func(n int) []int32 {
		v := hrSeq(h.host, n)
		h.host += int32(n)
		return v
	}
	if spec.Full != nil {
		c.Full = next(len(spec.Full))
	}
	for _, e := range spec.SWA {
		c.SWA = append(c.SWA, next(len(e.Slots)))
	}
	if spec.Mamba >= 0 {
		c.Mamba = next(1)[0]
	}
	require.NoError(h.t, h.tree.CommitBackup(node, c))
}

// writeThrough runs a write-through of nodes (ancestors first) with the
// ack at once.
func (h *hostRig) writeThrough(nodes ...core.NodeID) {
	h.t.Helper()
	for _, id := range nodes {
		h.backup(id)
		r, err := h.tree.Lock(id, 0)
		require.NoError(h.t, err)
		h.ack++
		ids, err := h.tree.MarkWriteThroughPending([]core.NodeID{id}, h.ack)
		require.NoError(h.t, err)
		require.NoError(h.t, h.tree.FinishWriteThrough(ids, h.ack))
		require.NoError(h.t, h.tree.Unlock(id, r, false))
	}
}

// A host lock protects Full on its anchor only (SEMANTICS §5 "Host locks:
// F: anchor only"), and HostUnlock releases it there. A split of the
// anchor (a match ending inside it, e.g. while a load-back holds the
// lock) keeps the anchor's handle on the child; the new prefix must not
// inherit the anchor's Full host lock, which no receipt accounts for: it
// would stay locked forever (never an H-leaf, never reclaimed, a drop
// declined), and the sanity check flags it at once.
//
// Script: new page=2 host-tier; insert (1-8) as=a; write-through a;
// host-lock a; match (1-4 9 10) → "n2.1: full host lock 1, but live host
// receipts account for 0".
func TestHostRegress_SplitOfHostLockedAnchorLeaksFullHostLock(t *testing.T) {
	h := newHostRig(t, core.Config{PageSize: 2})
	a := h.insert(hrSeq[uint32](1, 8), 0)
	h.writeThrough(a)
	hr, err := h.tree.HostLock(a)
	require.NoError(t, err)

	m, err := h.tree.Match(nil, core.Namespace{}, []uint32{1, 2, 3, 4, 9, 10})
	require.NoError(t, err)
	require.NotEqual(t, a, m.Best, "the match split a")
	require.NoError(t, h.tree.SanityCheck(), "after the split of the host-locked anchor\n%s", h.tree.Render())

	require.NoError(t, h.tree.HostUnlock(a, hr))
	info, err := h.tree.Inspect(m.Best)
	require.NoError(t, err)
	require.Zero(t, info.HostLock[core.Full], "the prefix keeps a Full host lock after the receipt was released\n%s", h.tree.Render())
}

// cascade's is_leaf is "membership in the D-set (device) or H-set
// (host)" (SEMANTICS §6). Host eviction of an SWA (or Mamba) host copy
// from the host list on a node that is not a host leaf must drop only
// that component (and those ranked below it inside the tree), never the
// node's Full host copy: a device leaf is not a leaf on the host layer.
// Dropping Full's host copy there breaks the write-through invariant
// when the node has backed-up host-only children (§9.5 "An F-host child
// needs an F-host parent").
//
// Script: new components=(full swa) page=2 window=4 host-tier; insert
// (1-4) as=x; insert (1-8) as=c; write-through nodes=(x c); evict
// comp=swa n=4 (x, inner, loses device SWA; its host SWA joins the host
// list); evict n=4 (c demoted; x is now a device leaf); evict-host
// comp=swa n=1 → frees x's Full host copy too; sanity: "n2.1: backed up
// but its parent is not (write-through)".
func TestHostRegress_HostListCascadeOnDeviceLeafDropsFullHostCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  core.Config
		comp core.Component
	}{
		{"swa", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 4}, core.SWA},
		{"mamba", core.Config{PageSize: 2, Components: []core.Component{core.Full, core.Mamba}}, core.Mamba},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostRig(t, tc.cfg)
			x := h.insert(hrSeq[uint32](1, 4), 7)
			c := h.insert(hrSeq[uint32](1, 8), 8)
			h.writeThrough(x, c)

			// x, an inner node, loses its device state / SWA data; its host
			// copy becomes host-only.
			_, freed, err := h.tree.Evict(tc.comp, 1, nil)
			require.NoError(t, err)
			require.Positive(t, freed)
			info, err := h.tree.Inspect(x)
			require.NoError(t, err)
			require.Nil(t, info.Device[tc.comp], "x lost its device %s\n%s", tc.comp, h.tree.Render())
			require.NotNil(t, info.Host[tc.comp])

			// c is demoted: x becomes an evictable device leaf with a
			// backed-up host-only child.
			_, freed, err = h.tree.Evict(core.Full, 4, nil)
			require.NoError(t, err)
			require.Equal(t, 4, freed)
			require.NoError(t, h.tree.SanityCheck())

			_, _, err = h.tree.EvictHost(tc.comp, 1, nil)
			require.NoError(t, err)
			require.NoError(t, h.tree.SanityCheck(), "after host eviction of x's %s copy\n%s", tc.comp, h.tree.Render())
			info, err = h.tree.Inspect(x)
			require.NoError(t, err)
			require.NotNil(t, info.Host[core.Full], "x's Full host copy went with its %s host copy\n%s", tc.comp, h.tree.Render())
		})
	}
}

// The external linker's pending mark is the same kind of in-flight mark
// as a write-through's (SEMANTICS §7 "External linker ... mark_…_pending
// sets pending = id; finish(ids, ack, ok) requires pending == ack") and a
// split must tell the host when it divides a pending node (§3 split: "if
// the child is pending, emit ReplaceWriteThroughOnNodeSplit"). The split
// copies the offload id to the new prefix but emits nothing, so the host,
// whose offload list names only the old node, finishes the child and the
// prefix stays pending forever: never eligible again, and every later
// chain stops at it.
//
// Script (linker.txt): new page=2 linker; insert (50-53) as=e;
// linker-pending nodes=(e) id=9; match (50 51 60 61) → no action;
// linker-finish nodes=(e) id=9 → the prefix still shows ext-pending=9.
func TestHostRegress_LinkerSplitOfPendingNodeStrandsPrefix(t *testing.T) {
	tree, err := core.New(core.Config{PageSize: 2, ExternalLinker: true})
	require.NoError(t, err)
	res, _, err := tree.Insert(core.InsertParams{Tokens: []uint32{50, 51, 52, 53}, Slots: hrSeq[int32](100, 4)})
	require.NoError(t, err)
	e := res.LastDevice
	require.NoError(t, tree.MarkLinkerPending([]core.NodeID{e}, 9))

	m, err := tree.Match(nil, core.Namespace{}, []uint32{50, 51, 60, 61})
	require.NoError(t, err)
	// Apply whatever the split asked for to the host's offload list.
	list := []core.NodeID{e}
	for _, a := range m.Actions {
		if a.Kind == core.ActionReplaceWriteThroughOnSplit && a.Ack == 9 {
			for k, id := range list {
				if id == a.Nodes[0] {
					list = append(append(append([]core.NodeID{}, list[:k]...), a.Nodes[1:]...), list[k+1:]...)
					break
				}
			}
		}
	}
	require.NoError(t, tree.FinishLinkerOffload(list, 9, true))
	info, err := tree.Inspect(m.Best)
	require.NoError(t, err)
	require.Zero(t, info.ExternalPending, "the split prefix is still pending after the offload finished\n%s", tree.Render())
}

// Write-back host eviction first reclaims host copies of data also on the
// device "in two passes (the first spares D-leaves)" (SEMANTICS §6 Host
// eviction), for Full (its coexistence set) and SWA (its device list).
// Full spares evictable device leaves in its first pass; SWA reclaims in
// device-list order, leaf or not.
//
// Script (host_hybrid.txt, "Two SWA copies on both tiers"): new
// components=(full swa) page=2 window=4 host-tier write-back; insert
// (1-8) as=x; insert (1-4 9 10) as=y; backup y (sends p's and y's SWA);
// match (1-4) (p most recent); evict-host comp=swa n=1 → reclaims y (a
// device leaf) instead of p (an inner node).
func TestHostRegress_SWAReclaimSparesDeviceLeavesFirst(t *testing.T) {
	h := newHostRig(t, core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 4, WritePolicy: core.WriteBack})
	h.insert(hrSeq[uint32](1, 8), 0)
	y := h.insert([]uint32{1, 2, 3, 4, 9, 10}, 0)
	h.backup(y)
	m, err := h.tree.Match(nil, core.Namespace{}, []uint32{1, 2, 3, 4})
	require.NoError(t, err)
	p := m.Best

	_, freed, err := h.tree.EvictHost(core.SWA, 1, nil)
	require.NoError(t, err)
	require.Positive(t, freed)
	pi, err := h.tree.Inspect(p)
	require.NoError(t, err)
	yi, err := h.tree.Inspect(y)
	require.NoError(t, err)
	require.Nil(t, pi.Host[core.SWA], "the inner node's SWA host copy should go in the first pass\n%s", h.tree.Render())
	require.NotNil(t, yi.Host[core.SWA], "the device leaf's SWA host copy should be spared in the first pass\n%s", h.tree.Render())
}

// A host lock is a lock: while its receipt is live the node it was taken
// on must stay, or the receipt can neither be released (the node is
// stale) nor accounted for. An unlocked device leaf that is host-locked
// (e.g. by a storage read that holds only the host lock) is still an
// evictable device leaf, and under write-through an unbacked one is
// deleted: the receipt's SWA host locks stay on the ancestors in its
// window, which no live receipt accounts for, and the sanity check fails.
// (The Full host lock, anchor only, and Mamba's go with the node; SWA's
// window reaches above it.)
//
// Script: new components=(full swa) page=2 window=4 host-tier; insert
// (1-4) as=a; write-through a; insert (1-6) as=b; host-lock b; evict n=2
// → "n1.1: swa host lock 1, but live host receipts account for 0".
func TestHostRegress_HostLockedDeviceLeafDeletedStrandsReceipt(t *testing.T) {
	h := newHostRig(t, core.Config{PageSize: 2, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 4})
	a := h.insert(hrSeq[uint32](1, 4), 0)
	h.writeThrough(a)
	b := h.insert(hrSeq[uint32](1, 6), 0)
	hr, err := h.tree.HostLock(b)
	require.NoError(t, err)

	_, _, err = h.tree.Evict(core.Full, 2, nil)
	require.NoError(t, err)
	require.NoError(t, h.tree.SanityCheck(), "after evicting with a host lock on b\n%s", h.tree.Render())
	require.NoError(t, h.tree.HostUnlock(b, hr), "the host lock's receipt must stay releasable")
}

// BackfillHashes "returns how many nodes it hashed". Hashing a node hashes
// its unhashed ancestors too; an ancestor in a later arena slot (a split
// prefix takes a new slot above its child) is then found hashed and not
// counted.
//
// Script (linker.txt): new page=2 host-tier; insert (60-67); match
// (60-63 68 69) (splits it); backfill → hashed=1, for two nodes hashed.
func TestHostRegress_BackfillCountsAncestorsHashedOnTheWay(t *testing.T) {
	tree, err := core.New(core.Config{PageSize: 2, HostTier: true})
	require.NoError(t, err)
	_, _, err = tree.Insert(core.InsertParams{Tokens: hrSeq[uint32](60, 8), Slots: hrSeq[int32](100, 8)})
	require.NoError(t, err)
	_, err = tree.Match(nil, core.Namespace{}, []uint32{60, 61, 62, 63, 68, 69})
	require.NoError(t, err)
	require.Len(t, tree.Nodes(), 3, "root, the split prefix and its child")
	require.Equal(t, 2, tree.BackfillHashes(), "both nodes were hashed")
	require.Equal(t, 0, tree.BackfillHashes())
}

// An SWA (or Mamba) eviction walk under write-back hands an unbacked
// device leaf to the host as BackupKV without changing the tree; the
// leaf stays in the recency list until the host demotes it, so the walk
// must pass it by rather than hand it out again.
func TestHostRegress_AuxWalkHandsLeafOnce(t *testing.T) {
	for _, c := range []core.Component{core.SWA, core.Mamba} {
		tr, err := core.New(core.Config{PageSize: 1, Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 4,
			HostTier: true, WritePolicy: core.WriteBack})
		require.NoError(t, err)
		_, _, err = tr.Insert(core.InsertParams{Tokens: []uint32{1, 2, 3, 4}, Slots: []int32{1, 2, 3, 4}, MambaSlot: 1})
		require.NoError(t, err)
		_, _, err = tr.Insert(core.InsertParams{Tokens: []uint32{1, 2, 7, 8}, Slots: []int32{5, 6, 7, 8}, MambaSlot: 2})
		require.NoError(t, err)
		acts, _, err := tr.Evict(c, 100, nil)
		require.NoError(t, err)
		seen := map[core.NodeID]bool{}
		for _, a := range acts {
			if a.Kind == core.ActionBackupKV {
				require.Falsef(t, seen[a.Node], "%s walk: %v handed to the host twice:\n%s", c, a.Node, core.FormatActions(acts))
				seen[a.Node] = true
			}
		}
		require.Len(t, seen, 2, "%s walk", c)
		require.NoError(t, tr.SanityCheck())
	}
}
