package core

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// NodeInfo is a copy of one node's state, for tests and tools.
type NodeInfo struct {
	ID        NodeID
	Parent    NodeID // zero for the root
	Children  []NodeID
	Namespace Namespace
	// Key holds the node's key words (two per atom in bigram mode).
	Key        []uint32
	Device     [numComponents][]int32
	Host       [numComponents][]int32
	Lock       [numComponents]uint32
	HostLock   [numComponents]uint32
	Hits       int64
	Priority   int64
	LastAccess int64
	Creation   int64
	// DLeaf reports membership in the evictable device leaf set.
	DLeaf bool
	// SWAUUID is the SWA lock-window boundary stamp (0: none).
	SWAUUID int64
	// HLeaf reports membership in the evictable host leaf set.
	HLeaf bool
	// WriteThroughPending is the ack id of a write-through in flight (0:
	// none); PinnedBy is the load-back anchor pinning the node (zero:
	// none).
	WriteThroughPending int64
	PinnedBy            NodeID
	// ExternalStored and ExternalPending are the external linker's marks.
	ExternalStored  bool
	ExternalPending int64
}

// Inspect returns a copy of node's state.
// Errors: ErrStaleNode.
func (t *Tree) Inspect(node NodeID) (NodeInfo, error) {
	i, err := t.resolve(node)
	if err != nil {
		return NodeInfo{}, err
	}
	n := &t.nodes[i]
	info := NodeInfo{
		ID:         node,
		Children:   t.sortedChildren(i, nil),
		Namespace:  t.nsList[n.ns],
		Key:        slices.Clone(n.key),
		Lock:       n.lock,
		HostLock:   n.hostLock,
		Hits:       n.hits,
		Priority:   n.priority,
		LastAccess: n.lastAccess,
		Creation:   n.creation,
		DLeaf:      n.dpos >= 0,
		SWAUUID:    n.swaUUID,
		HLeaf:      n.hpos >= 0,

		WriteThroughPending: n.wtPending,
		ExternalStored:      n.extStored,
		ExternalPending:     n.extPending,
	}
	if n.pin != nilIdx {
		info.PinnedBy = t.handle(n.pin)
	}
	if n.parent != nilIdx {
		info.Parent = t.handle(n.parent)
	}
	for c := range numComponents {
		info.Device[c] = slices.Clone(n.dev[c])
		info.Host[c] = slices.Clone(n.host[c])
	}
	return info, nil
}

// sortedChildren returns i's children ordered by namespace, then key.
func (t *Tree) sortedChildren(i int32, scratch []int32) []NodeID {
	kids := append(scratch[:0], t.nodes[i].children...)
	t.sortIdx(kids)
	out := make([]NodeID, len(kids))
	for k, c := range kids {
		out[k] = t.handle(c)
	}
	return out
}

func (t *Tree) sortIdx(kids []int32) {
	slices.SortFunc(kids, func(a, b int32) int {
		x, y := &t.nodes[a], &t.nodes[b]
		if c := cmp.Compare(x.ns, y.ns); c != 0 {
			return c
		}
		return slices.Compare(x.key, y.key)
	})
}

// Nodes returns every live node, root first, in depth-first order with
// children sorted by namespace and key.
func (t *Tree) Nodes() []NodeID {
	var out []NodeID
	t.dfs(rootIdx, 0, func(i int32, _ int) { out = append(out, t.handle(i)) })
	return out
}

// DeviceLeaves returns the evictable device leaves, sorted by handle.
func (t *Tree) DeviceLeaves() []NodeID {
	out := make([]NodeID, len(t.dset))
	for k, i := range t.dset {
		out[k] = t.handle(i)
	}
	slices.Sort(out)
	return out
}

func (t *Tree) dfs(i int32, depth int, visit func(i int32, depth int)) {
	visit(i, depth)
	kids := slices.Clone(t.nodes[i].children)
	t.sortIdx(kids)
	for _, c := range kids {
		t.dfs(c, depth+1, visit)
	}
}

// Render draws the tree, one node per line, children sorted by namespace
// and key. The output is stable for a given command stream and is what
// the transcript tests compare.
func (t *Tree) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tree page=%d policy=%s evictable=%d protected=%d",
		t.cfg.page, t.cfg.policyName, t.evictable[Full], t.protected[Full])
	for _, c := range t.comps[1:] {
		k := c.kind()
		fmt.Fprintf(&b, " %s=%d/%d", k, t.evictable[k], t.protected[k])
	}
	for _, c := range t.comps[1:] {
		if ids := t.LRUOrder(c.kind(), false); len(ids) > 0 {
			fmt.Fprintf(&b, " %s.lru=", c.kind())
			writeIDs(&b, ids)
		}
	}
	b.WriteByte('\n')
	t.dfs(rootIdx, 0, func(i int32, depth int) {
		if i == rootIdx {
			return
		}
		n := &t.nodes[i]
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(t.handle(i).String())
		if n.ns != 0 {
			ns := t.nsList[n.ns]
			fmt.Fprintf(&b, " ns=%q/%q/%q", ns.ExtraKey, ns.CacheSalt, ns.LoRA)
		}
		b.WriteString(" key=")
		writeInts(&b, n.key)
		for c := range numComponents {
			if v := n.dev[c]; v != nil {
				if Component(c) == SWA {
					b.WriteString(" swa") // its slots are the full slots
				} else {
					fmt.Fprintf(&b, " %s=", Component(c))
					writeInts(&b, v)
				}
			} else if c == int(Full) {
				b.WriteString(" full=evicted")
			}
			if v := n.host[c]; v != nil {
				fmt.Fprintf(&b, " %s.host=", Component(c))
				writeInts(&b, v)
			}
			if n.lock[c] != 0 {
				fmt.Fprintf(&b, " %s.lock=%d", Component(c), n.lock[c])
			}
			if n.hostLock[c] != 0 {
				fmt.Fprintf(&b, " %s.hlock=%d", Component(c), n.hostLock[c])
			}
		}
		if n.wtPending != 0 {
			fmt.Fprintf(&b, " wt-pending=%d", n.wtPending)
		}
		if n.pin != nilIdx {
			fmt.Fprintf(&b, " pin=%v", t.handle(n.pin))
		}
		if n.extStored {
			b.WriteString(" ext-stored")
		}
		if n.extPending != 0 {
			fmt.Fprintf(&b, " ext-pending=%d", n.extPending)
		}
		if n.swaUUID != 0 {
			fmt.Fprintf(&b, " uuid=%d", n.swaUUID)
		}
		if n.swaHostUUID != 0 {
			fmt.Fprintf(&b, " host-uuid=%d", n.swaHostUUID)
		}
		if n.hits != 0 {
			fmt.Fprintf(&b, " hits=%d", n.hits)
		}
		if n.priority != 0 {
			fmt.Fprintf(&b, " prio=%d", n.priority)
		}
		fmt.Fprintf(&b, " t=%d/%d", n.creation, n.lastAccess)
		if n.dpos >= 0 {
			b.WriteString(" leaf")
		}
		if n.hpos >= 0 {
			b.WriteString(" hleaf")
		}
		b.WriteByte('\n')
	})
	return b.String()
}

// DFSWeightOrder orders the positions of ids for cache-friendly
// scheduling: the weight of a node is how many ids fall in its subtree; a
// depth-first walk from the root visits weighted children by weight
// (descending), then creation (ascending), and emits a node's own
// positions after its children's, in input order.
// Errors: ErrStaleNode.
func (t *Tree) DFSWeightOrder(ids []NodeID) ([]int, error) {
	own := make(map[int32][]int, len(ids))
	weight := make(map[int32]int, len(ids))
	for k, id := range ids {
		i, err := t.resolve(id)
		if err != nil {
			return nil, fmt.Errorf("%w (entry %d)", err, k)
		}
		own[i] = append(own[i], k)
		for j := i; j != nilIdx; j = t.nodes[j].parent {
			weight[j]++
		}
	}
	out := make([]int, 0, len(ids))
	var walk func(i int32)
	walk = func(i int32) {
		var kids []int32
		for _, c := range t.nodes[i].children {
			if weight[c] > 0 {
				kids = append(kids, c)
			}
		}
		slices.SortFunc(kids, func(a, b int32) int {
			if c := cmp.Compare(weight[b], weight[a]); c != 0 {
				return c
			}
			if c := cmp.Compare(t.nodes[a].creation, t.nodes[b].creation); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		for _, c := range kids {
			walk(c)
		}
		out = append(out, own[i]...)
	}
	if len(ids) > 0 {
		walk(rootIdx)
	}
	return out, nil
}
