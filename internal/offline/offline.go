package offline

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/radixkv/radixkv/workload"
)

// ErrCapacity reports a request whose unmatched tokens do not fit in the
// pool even with every unlocked block evicted.
var ErrCapacity = errors.New("offline: device pool too small")

// Config configures the bound.
type Config struct {
	// Capacity is the number of device slots (one per cached token).
	Capacity int
	// PageSize is the block size in tokens (≥ 1).
	PageSize int
}

// Stats summarises the bound's replay.
type Stats struct {
	Requests      int
	InputTokens   int64
	MatchedTokens int64
	// HitRate is MatchedTokens / InputTokens (0 with no input).
	HitRate float64
	// EvictedTokens is the slots freed by eviction.
	EvictedTokens int64
}

// never is the next use of a block that is not used again.
const never = math.MaxInt32

// Blocks is a workload in the block model: each request's whole pages as
// block numbers, and for each of them the index of the next request that
// uses the same block (never when none). Build it once with [NewBlocks] and
// replay it at many capacities with [Blocks.Belady].
type Blocks struct {
	page    int
	lens    []int   // tokens per request
	start   []int   // request k's blocks are ids[start[k]:start[k+1]]
	ids     []int32 // block numbers, request by request
	next    []int32 // next use of ids[x] after its request
	parent  []int32 // per block: its parent block, or -1 at the root
	nblocks int
}

// blockKey names a block by its parent and its page's tokens (hashed; a
// collision is resolved by comparing the tokens).
type blockKey struct {
	parent int32
	h      uint64
}

// NewBlocks maps the requests to blocks of pageSize tokens.
func NewBlocks(reqs []workload.Request, pageSize int) (*Blocks, error) {
	if pageSize < 1 {
		return nil, fmt.Errorf("offline: page size %d: must be at least 1", pageSize)
	}
	b := &Blocks{page: pageSize, start: make([]int, 0, len(reqs)+1)}
	index := make(map[blockKey]int32)
	type where struct{ req, off int } // a block's first occurrence
	var first []where
	nsRoot := make(map[string]int32) // namespace → negative pseudo-parent
	for k := range reqs {
		r := &reqs[k]
		b.lens = append(b.lens, len(r.Tokens))
		b.start = append(b.start, len(b.ids))
		root, ok := nsRoot[r.Namespace]
		if !ok {
			root = -2 - int32(len(nsRoot))
			nsRoot[r.Namespace] = root
		}
		parent := root
		for off := 0; off+pageSize <= len(r.Tokens); off += pageSize {
			page := r.Tokens[off : off+pageSize]
			key := blockKey{parent, hashPage(page)}
			for {
				id, ok := index[key]
				if !ok {
					id = int32(len(first))
					index[key] = id
					first = append(first, where{k, off})
					p := parent
					if p < 0 {
						p = -1
					}
					b.parent = append(b.parent, p)
				} else if w := first[id]; !slices.Equal(reqs[w.req].Tokens[w.off:w.off+pageSize], page) {
					key.h++ // a hash collision: probe on
					continue
				}
				b.ids = append(b.ids, id)
				parent = id
				break
			}
		}
	}
	b.start = append(b.start, len(b.ids))
	b.nblocks = len(first)
	// Backward pass: the next request using each block.
	b.next = make([]int32, len(b.ids))
	last := make([]int32, b.nblocks)
	for i := range last {
		last[i] = never
	}
	for k := len(reqs) - 1; k >= 0; k-- {
		for x := b.start[k]; x < b.start[k+1]; x++ {
			b.next[x] = last[b.ids[x]]
			last[b.ids[x]] = int32(k)
		}
	}
	return b, nil
}

func hashPage(p []uint32) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range p {
		h ^= uint64(v)
		h *= 1099511628211
	}
	return h
}

// Belady replays reqs under the offline rule (see the package doc).
func Belady(cfg Config, reqs []workload.Request) (Stats, error) {
	b, err := NewBlocks(reqs, cfg.PageSize)
	if err != nil {
		return Stats{}, err
	}
	return b.Belady(cfg.Capacity)
}

// entry is a candidate leaf in the max-heap on next use.
type entry struct {
	next int32
	id   int32
	ver  uint32
}

func (x entry) before(y entry) bool {
	if x.next != y.next {
		return x.next > y.next
	}
	return x.id > y.id // deterministic tie-break among never-used-again
}

// Belady replays the blocks through a pool of capacity slots.
func (b *Blocks) Belady(capacity int) (Stats, error) {
	if capacity < 0 {
		return Stats{}, fmt.Errorf("offline: capacity %d is negative", capacity)
	}
	n := b.nblocks
	cached := make([]bool, n)
	kids := make([]int32, n) // cached children
	nextUse := make([]int32, n)
	ver := make([]uint32, n)
	var heap []entry
	push := func(id int32) {
		ver[id]++
		heap = append(heap, entry{nextUse[id], id, ver[id]})
		k := len(heap) - 1
		for k > 0 {
			p := (k - 1) / 2
			if !heap[k].before(heap[p]) {
				break
			}
			heap[k], heap[p] = heap[p], heap[k]
			k = p
		}
	}
	pop := func() entry {
		top := heap[0]
		last := len(heap) - 1
		heap[0] = heap[last]
		heap = heap[:last]
		k := 0
		for {
			l := 2*k + 1
			if l >= len(heap) {
				break
			}
			m := l
			if r := l + 1; r < len(heap) && heap[r].before(heap[l]) {
				m = r
			}
			if !heap[m].before(heap[k]) {
				break
			}
			heap[k], heap[m] = heap[m], heap[k]
			k = m
		}
		return top
	}
	var st Stats
	free := capacity
	page := b.page
	for k := range b.lens {
		ids := b.ids[b.start[k]:b.start[k+1]]
		nx := b.next[b.start[k]:b.start[k+1]]
		m := 0
		for m < len(ids) && cached[ids[m]] {
			m++
		}
		// The matched blocks are used now: their next use moves on. Only
		// the deepest can be a leaf; it is locked for this request.
		for j := range m {
			nextUse[ids[j]] = nx[j]
		}
		locked := int32(-1)
		if m > 0 {
			locked = ids[m-1]
		}
		need := b.lens[k] - m*page
		for free < need {
			if len(heap) == 0 {
				return st, fmt.Errorf("%w: request %d needs %d fresh slots but only %d can be freed; capacity %d",
					ErrCapacity, k, need, free, capacity)
			}
			e := pop()
			if !cached[e.id] || kids[e.id] != 0 || ver[e.id] != e.ver || e.id == locked {
				continue // stale, inner, or this request's locked prefix
			}
			cached[e.id] = false
			ver[e.id]++
			free += page
			st.EvictedTokens += int64(page)
			if p := b.parent[e.id]; p >= 0 {
				if kids[p]--; kids[p] == 0 {
					push(p)
				}
			}
		}
		st.MatchedTokens += int64(m * page)
		for j := m; j < len(ids); j++ {
			id := ids[j]
			cached[id] = true
			nextUse[id] = nx[j]
			if p := b.parent[id]; p >= 0 {
				kids[p]++
			}
			free -= page
		}
		// The request's deepest block is the leaf of its path; its heap key
		// changed (matched) or it is new.
		if len(ids) > 0 {
			push(ids[len(ids)-1])
		}
		st.Requests++
		st.InputTokens += int64(b.lens[k])
	}
	if st.InputTokens > 0 {
		st.HitRate = float64(st.MatchedTokens) / float64(st.InputTokens)
	}
	return st, nil
}
