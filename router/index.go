package router

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/radixkv/radixkv/events"
)

// Tier is where a worker holds a block, fastest first.
type Tier uint8

const (
	// Device is accelerator memory ("GPU", or no medium given).
	Device Tier = iota
	// Host is host memory ("CPU_PINNED", "CPU", "CPU_TIER1").
	Host
	// Storage is anything slower ("CPU_TIER2", "DISK", other names).
	Storage
	numTiers
)

// String returns "device", "host" or "storage".
func (t Tier) String() string {
	switch t {
	case Device:
		return "device"
	case Host:
		return "host"
	}
	return "storage"
}

// TierOf maps a wire medium to a tier.
func TierOf(medium string) Tier {
	switch strings.ToUpper(medium) {
	case "", "GPU", "DEVICE", "HBM":
		return Device
	case "CPU", "CPU_PINNED", "CPU_TIER1", "HOST":
		return Host
	}
	return Storage
}

// Group is the class of a cache group a block belongs to: hybrid models
// keep full-attention KV, sliding-window KV and recurrent (Mamba) states
// in separate groups, and a prefix is resumable only where every class
// the worker runs has what it needs.
type Group uint8

const (
	// GroupFull is full-attention KV (every block of the prefix needed).
	GroupFull Group = iota
	// GroupSWA is sliding-window KV (the last window of the prefix needed).
	GroupSWA
	// GroupMamba is recurrent state (a state at the prefix's end needed).
	GroupMamba
	numGroups
)

// String returns "full", "swa" or "mamba".
func (g Group) String() string {
	switch g {
	case GroupSWA:
		return "swa"
	case GroupMamba:
		return "mamba"
	}
	return "full"
}

// groupOfSpec maps vLLM's kv_cache_spec_kind to a group.
func groupOfSpec(kind string) (Group, bool) {
	k := strings.ToLower(kind)
	switch {
	case k == "":
		return 0, false
	case strings.Contains(k, "sliding") || strings.Contains(k, "swa") || strings.Contains(k, "chunked_local"):
		return GroupSWA, true
	case strings.Contains(k, "mamba") || strings.Contains(k, "state"):
		return GroupMamba, true
	}
	return GroupFull, true
}

// holder is one worker's copies of one block: a tier bit mask per group.
type holder struct {
	w     int32
	masks [numGroups]uint8
}

func (h *holder) empty() bool { return h.masks == [numGroups]uint8{} }

// entry is one block of the index.
type entry struct {
	hash      int64
	parent    int64
	hasParent bool
	holders   []holder // sorted by worker index
	prev      int32    // LRU list (toward least recent), -1 at the end
	next      int32    // toward most recent
}

// workerState is what the index keeps per worker.
type workerState struct {
	name   string
	blocks map[int64]struct{} // blocks this worker holds in any group
	// groupKinds maps vLLM group_idx to the group class it was announced as.
	groupKinds map[int]Group
	// swaBlocks is the sliding window in blocks (0: no SWA group seen).
	swaBlocks int
	mamba     bool
	active    int64 // blocks of requests routed here and not completed
	seq       seqState
	stats     WorkerStats
}

// entryBytes and holderBytes estimate the memory one block and one
// holder cost (the arena slot, the hash map slots, the worker set entry).
const (
	entryBytes  = 112
	holderBytes = 40
)

// index is the global block index: for every block hash the workers (and
// tiers and groups) that hold it. It is deterministic: no map order
// reaches an output. Not safe for concurrent use (Router locks it).
type index struct {
	byHash  map[int64]int32
	arena   []entry
	free    []int32
	lruHead int32 // least recently used
	lruTail int32 // most recently used
	workers []*workerState
	byName  map[string]int32

	walked  []int32 // scratch: entries a match walked
	budget  int64
	bytes   int64
	evicted uint64
	holders int64
}

func newIndex(budget int64) *index {
	return &index{byHash: map[int64]int32{}, byName: map[string]int32{}, lruHead: -1, lruTail: -1, budget: budget}
}

func (x *index) worker(name string) int32 {
	if i, ok := x.byName[name]; ok {
		return i
	}
	i := int32(len(x.workers))
	x.workers = append(x.workers, &workerState{name: name, blocks: map[int64]struct{}{}, groupKinds: map[int]Group{}})
	x.byName[name] = i
	return i
}

func (x *index) unlink(i int32) {
	e := &x.arena[i]
	if e.prev >= 0 {
		x.arena[e.prev].next = e.next
	} else {
		x.lruHead = e.next
	}
	if e.next >= 0 {
		x.arena[e.next].prev = e.prev
	} else {
		x.lruTail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (x *index) pushMRU(i int32) {
	e := &x.arena[i]
	e.prev, e.next = x.lruTail, -1
	if x.lruTail >= 0 {
		x.arena[x.lruTail].next = i
	} else {
		x.lruHead = i
	}
	x.lruTail = i
}

func (x *index) touch(i int32) {
	if x.lruTail == i {
		return
	}
	x.unlink(i)
	x.pushMRU(i)
}

// get returns the entry of hash, creating it when create is set.
func (x *index) get(hash int64, create bool) int32 {
	if i, ok := x.byHash[hash]; ok {
		return i
	}
	if !create {
		return -1
	}
	var i int32
	if n := len(x.free); n > 0 {
		i = x.free[n-1]
		x.free = x.free[:n-1]
	} else {
		i = int32(len(x.arena))
		x.arena = append(x.arena, entry{})
	}
	x.arena[i] = entry{hash: hash, prev: -1, next: -1, holders: x.arena[i].holders[:0]}
	x.byHash[hash] = i
	x.pushMRU(i)
	x.bytes += entryBytes
	return i
}

func (x *index) drop(i int32) {
	e := &x.arena[i]
	for _, h := range e.holders {
		delete(x.workers[h.w].blocks, e.hash)
	}
	x.bytes -= entryBytes + holderBytes*int64(len(e.holders))
	x.holders -= int64(len(e.holders))
	x.unlink(i)
	delete(x.byHash, e.hash)
	e.holders = e.holders[:0]
	x.free = append(x.free, i)
}

func (x *index) holderOf(i int32, w int32, create bool) *holder {
	e := &x.arena[i]
	k := sort.Search(len(e.holders), func(j int) bool { return e.holders[j].w >= w })
	if k < len(e.holders) && e.holders[k].w == w {
		return &e.holders[k]
	}
	if !create {
		return nil
	}
	e.holders = append(e.holders, holder{})
	copy(e.holders[k+1:], e.holders[k:])
	e.holders[k] = holder{w: w}
	x.bytes += holderBytes
	x.holders++
	x.workers[w].blocks[e.hash] = struct{}{}
	return &e.holders[k]
}

func (x *index) removeHolder(i int32, w int32) {
	e := &x.arena[i]
	k := sort.Search(len(e.holders), func(j int) bool { return e.holders[j].w >= w })
	if k < len(e.holders) && e.holders[k].w == w {
		e.holders = append(e.holders[:k], e.holders[k+1:]...)
		x.bytes -= holderBytes
		x.holders--
		delete(x.workers[w].blocks, e.hash)
	}
	if len(e.holders) == 0 {
		x.drop(i)
	}
}

// groupOf classifies an event's cache group for worker w.
func (x *index) groupOf(w int32, e *events.Event) Group {
	ws := x.workers[w]
	if g, ok := groupOfSpec(e.SpecKind); ok {
		if e.HasGroupIdx {
			ws.groupKinds[e.GroupIdx] = g
		}
		return g
	}
	if e.HasGroupIdx {
		if g, ok := ws.groupKinds[e.GroupIdx]; ok {
			return g
		}
	}
	return GroupFull
}

// ErrInvalid reports an argument a caller can fix.
var ErrInvalid = errors.New("router: invalid argument")

// apply applies one event of worker w.
func (x *index) apply(w int32, e *events.Event) {
	ws := x.workers[w]
	switch e.Kind {
	case events.BlockStored:
		g := x.groupOf(w, e)
		t := TierOf(e.Medium)
		switch g {
		case GroupSWA:
			if e.SlidingWindow > 0 && e.BlockSize > 0 {
				ws.swaBlocks = (e.SlidingWindow + e.BlockSize - 1) / e.BlockSize
			} else if ws.swaBlocks == 0 {
				ws.swaBlocks = 1
			}
		case GroupMamba:
			ws.mamba = true
		}
		parent, hasParent := e.ParentBlockHash, e.HasParent
		for _, h := range e.BlockHashes {
			i := x.get(h, true)
			en := &x.arena[i]
			en.parent, en.hasParent = parent, hasParent
			hd := x.holderOf(i, w, true)
			hd.masks[g] |= 1 << t
			parent, hasParent = h, true
			x.walked = append(x.walked, i)
		}
		// Touch deepest first so that a chain's ancestors end up the most
		// recent: the budget then trims chains from their tips, never
		// cutting a prefix off the blocks below it.
		for k := len(x.walked) - 1; k >= 0; k-- {
			x.touch(x.walked[k])
		}
		x.walked = x.walked[:0]
		ws.stats.Stored += uint64(len(e.BlockHashes))
	case events.BlockRemoved:
		g := x.groupOf(w, e)
		t := TierOf(e.Medium)
		for _, h := range e.BlockHashes {
			i := x.get(h, false)
			if i < 0 {
				continue
			}
			hd := x.holderOf(i, w, false)
			if hd == nil {
				continue
			}
			hd.masks[g] &^= 1 << t
			if hd.empty() {
				x.removeHolder(i, w)
			}
		}
		ws.stats.Removed += uint64(len(e.BlockHashes))
	case events.AllBlocksCleared:
		x.clearWorker(w)
		ws.stats.Cleared++
	}
}

// clearWorker forgets every block of worker w.
func (x *index) clearWorker(w int32) {
	ws := x.workers[w]
	hashes := make([]int64, 0, len(ws.blocks))
	for h := range ws.blocks {
		hashes = append(hashes, h)
	}
	sort.Slice(hashes, func(a, b int) bool { return hashes[a] < hashes[b] })
	for _, h := range hashes {
		if i := x.get(h, false); i >= 0 {
			x.removeHolder(i, w)
		}
	}
}

// enforceBudget evicts least recently used blocks until the estimate
// fits the budget.
func (x *index) enforceBudget() {
	if x.budget <= 0 {
		return
	}
	for x.bytes > x.budget && x.lruHead >= 0 {
		x.drop(x.lruHead)
		x.evicted++
	}
}

// overlap is one worker's cached prefix of a request.
type overlap struct {
	blocks int     // resumable prefix length in blocks
	credit float64 // tier-weighted blocks of that prefix
	device int     // blocks of the prefix on the device
}

// match computes every worker's resumable prefix of hashes. credit gives
// the value of a block per tier. It touches the matched blocks (LRU).
func (x *index) match(hashes []int64, credit [numTiers]float64) []overlap {
	nw := len(x.workers)
	out := make([]overlap, nw)
	type run struct {
		alive   bool
		swaRun  int
		sumCred float64
		sumDev  int
	}
	runs := make([]run, nw)
	for w := range runs {
		runs[w].alive = true
	}
	aliveCount := nw
	for i, h := range hashes {
		if aliveCount == 0 {
			break
		}
		ei := x.get(h, false)
		if ei < 0 {
			break
		}
		x.walked = append(x.walked, ei)
		e := &x.arena[ei]
		// Workers without this block's full KV stop here.
		k := 0
		for w := 0; w < nw; w++ {
			r := &runs[w]
			if !r.alive {
				continue
			}
			for k < len(e.holders) && int(e.holders[k].w) < w {
				k++
			}
			var hd *holder
			if k < len(e.holders) && int(e.holders[k].w) == w {
				hd = &e.holders[k]
			}
			if hd == nil || hd.masks[GroupFull] == 0 {
				r.alive = false
				aliveCount--
				continue
			}
			best := bestTier(hd.masks[GroupFull])
			r.sumCred += credit[best]
			if best == Device {
				r.sumDev++
			}
			if hd.masks[GroupSWA] != 0 {
				r.swaRun++
			} else {
				r.swaRun = 0
			}
			ws := x.workers[w]
			n := i + 1
			ok := true
			if ws.swaBlocks > 0 && r.swaRun < min(ws.swaBlocks, n) {
				ok = false
			}
			if ws.mamba && hd.masks[GroupMamba] == 0 {
				ok = false
			}
			if ok {
				out[w] = overlap{blocks: n, credit: r.sumCred, device: r.sumDev}
			}
		}
	}
	// Deepest first, as in apply: ancestors stay the most recent.
	for k := len(x.walked) - 1; k >= 0; k-- {
		x.touch(x.walked[k])
	}
	x.walked = x.walked[:0]
	return out
}

func bestTier(mask uint8) Tier {
	for t := Tier(0); t < numTiers; t++ {
		if mask&(1<<t) != 0 {
			return t
		}
	}
	return Storage
}

// BlockState is one (block, worker) pair of the index, as Dump lists it.
type BlockState struct {
	Hash      int64
	Parent    int64
	HasParent bool
	Worker    string
	// Tiers holds, per group (full, swa, mamba), a bit per tier
	// (1<<Device | 1<<Host | 1<<Storage).
	Tiers [numGroups]uint8
}

// dump lists the index sorted by hash, then worker name.
func (x *index) dump() []BlockState {
	var out []BlockState
	for _, i := range x.byHash {
		e := &x.arena[i]
		for _, h := range e.holders {
			out = append(out, BlockState{Hash: e.hash, Parent: e.parent, HasParent: e.hasParent,
				Worker: x.workers[h.w].name, Tiers: h.masks})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Hash != out[b].Hash {
			return out[a].Hash < out[b].Hash
		}
		return out[a].Worker < out[b].Worker
	})
	return out
}

func (x *index) check() error {
	var bytes, holders int64
	seen := 0
	for h, i := range x.byHash {
		e := &x.arena[i]
		if e.hash != h || len(e.holders) == 0 {
			return fmt.Errorf("router: entry %d broken (hash %d, %d holders)", i, e.hash, len(e.holders))
		}
		for k, hd := range e.holders {
			if k > 0 && e.holders[k-1].w >= hd.w {
				return fmt.Errorf("router: holders of %d unsorted", h)
			}
			if hd.empty() {
				return fmt.Errorf("router: empty holder of %d", h)
			}
			if _, ok := x.workers[hd.w].blocks[h]; !ok {
				return fmt.Errorf("router: worker set lacks %d", h)
			}
		}
		bytes += entryBytes + holderBytes*int64(len(e.holders))
		holders += int64(len(e.holders))
	}
	for i := x.lruHead; i >= 0; i = x.arena[i].next {
		seen++
	}
	if seen != len(x.byHash) {
		return fmt.Errorf("router: LRU list has %d of %d entries", seen, len(x.byHash))
	}
	var inSets int64
	for _, ws := range x.workers {
		inSets += int64(len(ws.blocks))
	}
	if inSets != holders || holders != x.holders || bytes != x.bytes {
		return fmt.Errorf("router: accounting: sets %d holders %d/%d bytes %d/%d", inSets, holders, x.holders, bytes, x.bytes)
	}
	return nil
}
