package core

import (
	"fmt"
	"strings"
)

// EventKind names a KV cache event.
type EventKind uint8

const (
	// EventBlockStored: pages became cached on Medium.
	EventBlockStored EventKind = iota + 1
	// EventBlockRemoved: pages left Medium.
	EventBlockRemoved
	// EventAllBlocksCleared: the cache was reset.
	EventAllBlocksCleared
)

// Medium is where a block lives.
type Medium uint8

const (
	// MediumGPU is device memory.
	MediumGPU Medium = iota
	// MediumCPU is pinned host memory.
	MediumCPU
)

// String returns the medium's wire name: "GPU" or "CPU_PINNED".
func (m Medium) String() string {
	if m == MediumCPU {
		return "CPU_PINNED"
	}
	return "GPU"
}

// Event is a KV cache event as engines publish them to routers: which
// blocks (pages, named by chained hashes) a worker stored or removed.
type Event struct {
	Kind EventKind
	// BlockHashes names the pages, in path order (see HashConvention).
	BlockHashes []int64
	// ParentBlockHash is the block before the first one (HasParent false
	// directly under the root).
	ParentBlockHash int64
	HasParent       bool
	// TokenIDs holds the pages' key words (BlockStored only).
	TokenIDs []uint32
	// BlockSize is the page size in atoms (BlockStored only).
	BlockSize int
	Medium    Medium
	CacheSalt string
	SessionID string
	LoRA      string
}

// String renders the event on one line.
func (e Event) String() string {
	var b strings.Builder
	switch e.Kind {
	case EventBlockStored:
		fmt.Fprintf(&b, "BlockStored %s hashes=%v", e.Medium, e.BlockHashes)
		if e.HasParent {
			fmt.Fprintf(&b, " parent=%d", e.ParentBlockHash)
		}
		fmt.Fprintf(&b, " block_size=%d tokens=", e.BlockSize)
		writeInts(&b, e.TokenIDs)
		if e.CacheSalt != "" {
			fmt.Fprintf(&b, " salt=%q", e.CacheSalt)
		}
		if e.SessionID != "" {
			fmt.Fprintf(&b, " session=%q", e.SessionID)
		}
		if e.LoRA != "" {
			fmt.Fprintf(&b, " lora=%q", e.LoRA)
		}
	case EventBlockRemoved:
		fmt.Fprintf(&b, "BlockRemoved %s hashes=%v", e.Medium, e.BlockHashes)
	case EventAllBlocksCleared:
		b.WriteString("AllBlocksCleared")
	default:
		fmt.Fprintf(&b, "EventKind(%d)", e.Kind)
	}
	return b.String()
}

// TakeEvents appends the queued events to dst and empties the queue.
func (t *Tree) TakeEvents(dst []Event) []Event {
	dst = append(dst, t.events...)
	clear(t.events)
	t.events = t.events[:0]
	return dst
}

// recordStored queues one BlockStored per page of node i, coalescing with
// the queue's tail where the pages continue its chain.
func (t *Tree) recordStored(i int32, m Medium, session string) {
	if !t.cfg.kvEvents {
		return
	}
	n := &t.nodes[i]
	ns := t.nsList[n.ns]
	parent, hasParent := t.lastEventID(n.parent)
	// A node's pages chain one to the next and share every other field, so
	// their per-page events always coalesce: build the merged event at once.
	t.enqueue(Event{
		Kind:            EventBlockStored,
		BlockHashes:     t.eventIDs(nil, i),
		ParentBlockHash: parent,
		HasParent:       hasParent,
		TokenIDs:        append([]uint32(nil), n.key...),
		BlockSize:       t.cfg.page,
		Medium:          m,
		CacheSalt:       ns.CacheSalt,
		SessionID:       session,
		LoRA:            ns.LoRA,
	})
}

// recordRemoved queues one BlockRemoved listing every page of node i.
func (t *Tree) recordRemoved(i int32, m Medium) {
	if !t.cfg.kvEvents {
		return
	}
	t.enqueue(Event{Kind: EventBlockRemoved, BlockHashes: t.eventIDs(nil, i), Medium: m})
}

// enqueue appends e, merging it into the tail when compatible: removals
// on the same medium concatenate; a store continues the tail when it
// shares medium, block size, salt, session and adapter and its parent is
// the tail's last block.
func (t *Tree) enqueue(e Event) {
	if k := len(t.events); k > 0 {
		tail := &t.events[k-1]
		switch {
		case e.Kind == EventBlockRemoved && tail.Kind == EventBlockRemoved && tail.Medium == e.Medium:
			tail.BlockHashes = append(tail.BlockHashes, e.BlockHashes...)
			return
		case e.Kind == EventBlockStored && tail.Kind == EventBlockStored &&
			tail.Medium == e.Medium && tail.BlockSize == e.BlockSize &&
			tail.CacheSalt == e.CacheSalt && tail.SessionID == e.SessionID && tail.LoRA == e.LoRA &&
			len(tail.BlockHashes) > 0 && e.HasParent && e.ParentBlockHash == tail.BlockHashes[len(tail.BlockHashes)-1]:
			tail.BlockHashes = append(tail.BlockHashes, e.BlockHashes...)
			tail.TokenIDs = append(tail.TokenIDs, e.TokenIDs...)
			return
		}
	}
	t.events = append(t.events, e)
}
