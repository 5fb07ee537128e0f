package core

import (
	"encoding/hex"
	"fmt"
)

// Storage (L3) keys are the SHA-256 page hash chain of PageHashes: each
// page's hash covers the previous page's hash and the page's tokens, so a
// key names a whole prefix. The tree computes them lazily.

// StorageSpec names the storage keys of one node's host data.
type StorageSpec struct {
	Node NodeID
	// PrefixKeys are the page hashes from the root down to the node's
	// parent (what a reader needs to find the node's pages).
	PrefixKeys []string
	// Full holds one key per page of the node.
	Full []string
	// SWA holds the keys of the trailing pages covered by the node's SWA
	// host data (SWA keeps only the window).
	SWA []string
	// Mamba is the key of the node's last page when it has a Mamba host
	// state, else "".
	Mamba string
}

// StorageSpec returns the storage keys for backing node's host copies up
// to storage.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (no host tier, the
// root, a node without a host copy).
func (t *Tree) StorageSpec(node NodeID) (StorageSpec, error) {
	i, err := t.hostNode(node)
	if err != nil {
		return StorageSpec{}, err
	}
	n := &t.nodes[i]
	if n.host[Full] == nil {
		return StorageSpec{}, fmt.Errorf("%w: %v has no host copy", ErrInvalidArgument, node)
	}
	s := StorageSpec{Node: node, Full: t.hexDigests(i)}
	for j := n.parent; j != rootIdx; j = t.nodes[j].parent {
		s.PrefixKeys = append(t.hexDigests(j), s.PrefixKeys...)
	}
	if h := n.host[SWA]; h != nil {
		pages := len(h) / t.cfg.page
		s.SWA = s.Full[len(s.Full)-pages:]
	}
	if n.host[Mamba] != nil {
		s.Mamba = s.Full[len(s.Full)-1]
	}
	return s, nil
}

func (t *Tree) hexDigests(i int32) []string {
	d := t.ensureDigests(i, storageChain)
	out := make([]string, len(d))
	for k := range d {
		out[k] = hex.EncodeToString(d[k][:])
	}
	return out
}

// BackfillHashes computes the storage page hashes of every node that has
// none yet (e.g. when storage is attached to a running cache) and returns
// how many nodes it hashed.
func (t *Tree) BackfillHashes() int {
	k := 0
	for idx := range t.nodes {
		if n := &t.nodes[idx]; n.live && idx != int(rootIdx) && n.hash == nil {
			k++
		}
	}
	for idx := range t.nodes {
		if n := &t.nodes[idx]; n.live && idx != int(rootIdx) && n.hash == nil {
			t.ensureDigests(int32(idx), storageChain)
		}
	}
	return k
}

// The external cache linker copies write-through chains to an external
// store and tracks each node: eligible (neither stored nor pending),
// pending under an offload id, stored.

// LinkerChain returns the nodes an external offload of node would copy:
// the node and its ancestors up to the first stored or pending one,
// ancestors first (empty when node itself is stored or pending).
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (the linker is off).
func (t *Tree) LinkerChain(node NodeID) ([]NodeID, error) {
	i, err := t.linkerNode(node)
	if err != nil {
		return nil, err
	}
	var out []NodeID
	for j := i; j != rootIdx && !t.nodes[j].extStored && t.nodes[j].extPending == 0; j = t.nodes[j].parent {
		out = append([]NodeID{t.handle(j)}, out...)
	}
	return out, nil
}

// MarkLinkerPending marks eligible nodes as being offloaded under id (> 0).
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (id ≤ 0, a node
// stored or pending already).
func (t *Tree) MarkLinkerPending(nodes []NodeID, id int64) error {
	if id <= 0 {
		return fmt.Errorf("%w: offload id %d must be positive", ErrInvalidArgument, id)
	}
	idx, err := nodesOf(nodes, t.linkerNode)
	if err != nil {
		return err
	}
	for k, i := range idx {
		if n := &t.nodes[i]; n.extStored || n.extPending != 0 {
			return fmt.Errorf("%w: %v is already stored or pending", ErrInvalidArgument, nodes[k])
		}
	}
	for _, i := range idx {
		t.nodes[i].extPending = id
	}
	return nil
}

// FinishLinkerOffload ends offload id for nodes; ok records them as stored.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (id ≤ 0, which
// MarkLinkerPending never accepts; a node not pending under id).
func (t *Tree) FinishLinkerOffload(nodes []NodeID, id int64, ok bool) error {
	if id <= 0 {
		// 0 is the "not pending" mark: it would match every idle node.
		return fmt.Errorf("%w: offload id %d must be positive", ErrInvalidArgument, id)
	}
	idx, err := nodesOf(nodes, t.linkerNode)
	if err != nil {
		return err
	}
	for k, i := range idx {
		if t.nodes[i].extPending != id {
			return fmt.Errorf("%w: %v is not pending under offload %d", ErrInvalidArgument, nodes[k], id)
		}
	}
	for _, i := range idx {
		t.nodes[i].extPending = 0
		t.nodes[i].extStored = t.nodes[i].extStored || ok
	}
	return nil
}

// MarkLinkerStoredPath records that the external store holds the path
// from node from up to (excluding) its ancestor until (the root when
// until is zero), e.g. after a lookup found it there.
// Errors: ErrBroken, ErrStaleNode, ErrInvalidArgument (until is not an
// ancestor of from).
func (t *Tree) MarkLinkerStoredPath(from, until NodeID) error {
	i, err := t.linkerNode(from)
	if err != nil {
		return err
	}
	stop := rootIdx
	if until != 0 {
		if stop, err = t.resolve(until); err != nil {
			return err
		}
	}
	j := i
	for ; j != rootIdx && j != stop; j = t.nodes[j].parent {
	}
	if j != stop {
		return fmt.Errorf("%w: %v is not an ancestor of %v", ErrInvalidArgument, until, from)
	}
	for j = i; j != stop; j = t.nodes[j].parent {
		t.nodes[j].extStored = true
	}
	return nil
}

func (t *Tree) linkerNode(id NodeID) (int32, error) {
	return t.featureNode(id, t.cfg.linker, "the external cache linker is off")
}
