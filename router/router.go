package router

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/radixkv/radixkv/events"
)

// Config tunes a Router. The zero value is usable: no memory bound,
// Dynamo's default weights, full credit for device blocks.
type Config struct {
	// BudgetBytes bounds the index's estimated memory; when an ingest
	// goes over it, least recently used blocks are forgotten. 0: no bound.
	BudgetBytes int64
	// PrefillWeight is w in cost = w·prefill_blocks + active_blocks
	// (0 means 1).
	PrefillWeight float64
	// TierCredit is how much of a block's prefill a cached copy saves per
	// tier (device, host, storage); all zero means {1, 0.8, 0.5}.
	TierCredit [3]float64
	// ReorderWindow is how many batches past a gap a worker may buffer
	// while waiting for a replay (0 means 4096); beyond it the gap is
	// given up (see Router.SkipGap).
	ReorderWindow int
}

func (c Config) normalised() (Config, error) {
	if c.BudgetBytes < 0 || c.PrefillWeight < 0 || c.ReorderWindow < 0 ||
		math.IsNaN(c.PrefillWeight) || math.IsInf(c.PrefillWeight, 0) {
		return c, fmt.Errorf("%w: negative or non-finite config value in %+v", ErrInvalid, c)
	}
	if c.PrefillWeight == 0 {
		c.PrefillWeight = 1
	}
	if c.TierCredit == [3]float64{} {
		c.TierCredit = [3]float64{1, 0.8, 0.5}
	}
	for _, v := range c.TierCredit {
		if v < 0 || v > 1 || math.IsNaN(v) {
			return c, fmt.Errorf("%w: tier credit %v outside [0, 1]", ErrInvalid, v)
		}
	}
	if c.ReorderWindow == 0 {
		c.ReorderWindow = 4096
	}
	return c, nil
}

// Router keeps the global index and answers route queries. It is safe
// for concurrent use.
type Router struct {
	mu  sync.Mutex
	cfg Config
	x   *index
	// Cursor is an opaque transport position (e.g. a JetStream stream
	// sequence) saved with snapshots; see SetCursor.
	cursor uint64
}

// New returns an empty router. Errors: ErrInvalid for a bad Config.
func New(cfg Config) (*Router, error) {
	c, err := cfg.normalised()
	if err != nil {
		return nil, err
	}
	return &Router{cfg: c, x: newIndex(c.BudgetBytes)}, nil
}

// Message is one batch as a transport delivers it: the worker that
// published it, the publisher's epoch (a value that changes when the
// publisher restarts, 0 when the transport has none, as on plain ZMQ),
// its sequence number and the decoded batch.
type Message struct {
	Worker string
	Epoch  uint64
	Seq    uint64
	Batch  events.Batch
}

// Outcome says what Ingest did with a message.
type Outcome uint8

const (
	// Applied: the message (and any buffered ones it unblocked) applied.
	Applied Outcome = iota
	// Duplicate: already applied (or from an older epoch); dropped.
	Duplicate
	// Buffered: it lies past a gap; held until the gap is replayed.
	Buffered
	// Restarted: a new publisher epoch (or a sequence reset to 0): the
	// worker's blocks were cleared and the message applied.
	Restarted
)

var outcomeNames = [...]string{"applied", "duplicate", "buffered", "restarted"}

// String names the outcome.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// seqState tracks one worker's sequence.
type seqState struct {
	started bool
	// suspect: the transport lost its connection; the next message below
	// next is a restarted publisher, not a duplicate.
	suspect bool
	epoch   uint64
	next    uint64 // next sequence number to apply
	pending map[uint64]events.Batch
}

// WorkerStats counts what a worker's stream carried.
type WorkerStats struct {
	Messages   uint64 // messages applied
	Duplicates uint64
	Buffered   uint64 // messages that arrived past a gap
	Restarts   uint64
	Gaps       uint64 // gaps detected
	Skipped    uint64 // sequence numbers given up (SkipGap)
	Stored     uint64 // block hashes in BlockStored events applied
	Removed    uint64
	Cleared    uint64
}

// Ingest applies a message in sequence order per worker: the next
// expected one applies (with any buffered successors), an older one is a
// duplicate, a later one is buffered behind a gap that Gaps reports until
// a replay fills it. A new epoch, or (without epochs) sequence 0 after
// later ones (or one more than ReorderWindow behind), means the publisher restarted with an empty cache: the
// worker's blocks are cleared first. The first message seen from a worker
// starts its sequence wherever it is unless it is above 0, in which case
// the router asks for [0, seq) (a router that starts late replays what
// the publisher still buffers; SkipGap gives up on the rest).
func (r *Router) Ingest(m Message) (Outcome, error) {
	if m.Worker == "" {
		return 0, fmt.Errorf("%w: message without a worker name", ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.x.worker(m.Worker)
	ws := r.x.workers[w]
	s := &ws.seq
	restarted := false
	switch {
	case !s.started:
		s.started, s.epoch, s.next = true, m.Epoch, 0
	case m.Epoch != s.epoch && m.Epoch > s.epoch:
		r.restartLocked(w, m.Epoch)
		restarted = true
	case m.Epoch != s.epoch:
		ws.stats.Duplicates++
		return Duplicate, nil
	case m.Epoch == 0 && m.Seq < s.next &&
		(s.suspect || s.next > 1 && (m.Seq == 0 || s.next-m.Seq > uint64(r.cfg.ReorderWindow))):
		// No epochs (plain ZMQ): a sequence that went back to 0, or far
		// further back than any reordering, is a restarted publisher.
		r.restartLocked(w, 0)
		restarted = true
	}
	s.suspect = false
	if m.Seq < s.next {
		ws.stats.Duplicates++
		return Duplicate, nil
	}
	if m.Seq > s.next {
		if s.pending == nil {
			s.pending = map[uint64]events.Batch{}
		}
		if _, dup := s.pending[m.Seq]; dup {
			ws.stats.Duplicates++
			return Duplicate, nil
		}
		if len(s.pending) == 0 {
			ws.stats.Gaps++
		}
		s.pending[m.Seq] = m.Batch
		ws.stats.Buffered++
		if len(s.pending) > r.cfg.ReorderWindow {
			r.skipLocked(w)
		}
		r.x.enforceBudget()
		if restarted {
			return Restarted, nil
		}
		return Buffered, nil
	}
	r.applyLocked(w, &m.Batch)
	s.next++
	r.drainLocked(w)
	r.x.enforceBudget()
	if restarted {
		return Restarted, nil
	}
	return Applied, nil
}

func (r *Router) restartLocked(w int32, epoch uint64) {
	ws := r.x.workers[w]
	r.x.clearWorker(w)
	ws.seq = seqState{started: true, epoch: epoch}
	ws.stats.Restarts++
}

func (r *Router) applyLocked(w int32, b *events.Batch) {
	for i := range b.Events {
		r.x.apply(w, &b.Events[i])
	}
	r.x.workers[w].stats.Messages++
}

func (r *Router) drainLocked(w int32) {
	s := &r.x.workers[w].seq
	for len(s.pending) > 0 {
		b, ok := s.pending[s.next]
		if !ok {
			return
		}
		delete(s.pending, s.next)
		r.applyLocked(w, &b)
		s.next++
	}
}

// skipLocked gives up on the missing numbers before the oldest buffered
// message and applies what follows.
func (r *Router) skipLocked(w int32) {
	ws := r.x.workers[w]
	s := &ws.seq
	if len(s.pending) == 0 {
		return
	}
	lo := uint64(math.MaxUint64)
	for k := range s.pending {
		lo = min(lo, k)
	}
	ws.stats.Skipped += lo - s.next
	s.next = lo
	r.drainLocked(w)
}

// Gap is a run of missing sequence numbers [From, To) of a worker.
type Gap struct {
	Worker   string
	From, To uint64
}

// Gaps lists the workers waiting for a replay, sorted by worker name.
func (r *Router) Gaps() []Gap {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Gap
	for _, ws := range r.x.workers {
		s := &ws.seq
		if len(s.pending) == 0 {
			continue
		}
		lo := uint64(math.MaxUint64)
		for k := range s.pending {
			lo = min(lo, k)
		}
		out = append(out, Gap{Worker: ws.name, From: s.next, To: lo})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Worker < out[b].Worker })
	return out
}

// SkipGap gives up on a worker's gap (its publisher no longer buffers the
// missing batches): the buffered messages apply and the blocks the
// missing ones announced stay unknown until later events name them.
func (r *Router) SkipGap(worker string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.x.byName[worker]; ok {
		r.skipLocked(w)
		r.x.enforceBudget()
	}
}

// NextSeq returns the next sequence number the router expects from a
// worker and its epoch (false for a worker it has not heard from).
func (r *Router) NextSeq(worker string) (seq, epoch uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.x.byName[worker]
	if !ok {
		return 0, 0, false
	}
	s := &r.x.workers[w].seq
	return s.next, s.epoch, true
}

// Reconnected tells the router that the transport of an epoch-less
// stream (plain ZMQ) lost and regained its connection: the publisher may
// have restarted, so the next message numbered below the expected one is
// taken as a restart (the worker's blocks are cleared and [0, seq) is
// asked for) instead of a duplicate.
func (r *Router) Reconnected(worker string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.x.byName[worker]; ok {
		r.x.workers[w].seq.suspect = true
	}
}

// SetCursor records a transport position saved with the next snapshot.
func (r *Router) SetCursor(c uint64) {
	r.mu.Lock()
	r.cursor = c
	r.mu.Unlock()
}

// Cursor returns the transport position last set or restored.
func (r *Router) Cursor() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursor
}

// Dump lists every (block, worker) pair of the index, sorted by hash and
// worker name.
func (r *Router) Dump() []BlockState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.x.dump()
}

// Check verifies the index's internal invariants (tests and audits).
func (r *Router) Check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.x.check()
}

// Stats describes the index and the streams.
type Stats struct {
	Blocks      int    `json:"blocks"`
	Holders     int64  `json:"holders"`
	Bytes       int64  `json:"bytes"`
	BudgetBytes int64  `json:"budget_bytes"`
	Evicted     uint64 `json:"evicted"`
	Workers     []WorkerReport
}

// WorkerReport is one worker's line of Stats.
type WorkerReport struct {
	Name         string `json:"name"`
	Blocks       int    `json:"blocks"`
	ActiveBlocks int64  `json:"active_blocks"`
	NextSeq      uint64 `json:"next_seq"`
	Epoch        uint64 `json:"epoch"`
	SWABlocks    int    `json:"swa_window_blocks"`
	Mamba        bool   `json:"mamba"`
	WorkerStats
}

// Stats reports the index size, its budget and evictions, and per worker
// (sorted by name) what its stream carried.
func (r *Router) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Stats{Blocks: len(r.x.byHash), Holders: r.x.holders, Bytes: r.x.bytes,
		BudgetBytes: r.x.budget, Evicted: r.x.evicted}
	for _, ws := range r.x.workers {
		st.Workers = append(st.Workers, WorkerReport{Name: ws.name, Blocks: len(ws.blocks),
			ActiveBlocks: ws.active, NextSeq: ws.seq.next, Epoch: ws.seq.epoch,
			SWABlocks: ws.swaBlocks, Mamba: ws.mamba, WorkerStats: ws.stats})
	}
	sort.Slice(st.Workers, func(a, b int) bool { return st.Workers[a].Name < st.Workers[b].Name })
	return st
}

// AddWorker registers a worker before it publishes anything, so that it
// can be routed to with an empty cache.
func (r *Router) AddWorker(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty worker name", ErrInvalid)
	}
	r.mu.Lock()
	r.x.worker(name)
	r.mu.Unlock()
	return nil
}
