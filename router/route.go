package router

import (
	"fmt"
	"sort"
)

// Request is a route query: the request's block hashes in order (as its
// workers would publish them; see events.BlockHashes) and, optionally, the
// workers allowed (empty: every known worker).
type Request struct {
	BlockHashes []int64 `json:"block_hashes"`
	Workers     []string
}

// Score is one worker's line of a decision.
type Score struct {
	Worker string `json:"worker"`
	// Overlap is the resumable cached prefix in blocks; DeviceBlocks of it
	// are on the device, the rest on slower tiers.
	Overlap      int `json:"overlap_blocks"`
	DeviceBlocks int `json:"device_blocks"`
	// PrefillBlocks is what the worker would compute: the request's
	// blocks minus the tier-weighted overlap.
	PrefillBlocks float64 `json:"prefill_blocks"`
	ActiveBlocks  int64   `json:"active_blocks"`
	// Cost = PrefillWeight·PrefillBlocks + ActiveBlocks; lowest wins.
	Cost float64 `json:"cost"`
}

// Decision is the answer to a route query.
type Decision struct {
	Worker string  `json:"worker"`
	Scores []Score `json:"scores"` // sorted by cost, then worker name
}

// Route scores the workers for a request and picks the cheapest: cost =
// w·prefill_blocks + active_blocks (Dynamo's form), where prefill_blocks
// counts the blocks the worker lacks, a cached block counting as saved by
// its tier's credit, and active_blocks is what the worker already has in
// flight (see Start and Complete). Ties go to fewer active blocks, then
// the smaller worker name. Route does not change the load; call Start for
// the chosen worker. Errors: ErrInvalid when no worker is known or allowed.
func (r *Router) Route(q Request) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ov := r.x.match(q.BlockHashes, r.cfg.TierCredit)
	allowed := func(string) bool { return true }
	if len(q.Workers) > 0 {
		set := map[string]bool{}
		for _, w := range q.Workers {
			set[w] = true
		}
		allowed = func(n string) bool { return set[n] }
	}
	var d Decision
	n := float64(len(q.BlockHashes))
	for w, ws := range r.x.workers {
		if !allowed(ws.name) {
			continue
		}
		o := ov[w]
		pre := n - o.credit
		d.Scores = append(d.Scores, Score{Worker: ws.name, Overlap: o.blocks, DeviceBlocks: o.device,
			PrefillBlocks: pre, ActiveBlocks: ws.active, Cost: r.cfg.PrefillWeight*pre + float64(ws.active)})
	}
	if len(d.Scores) == 0 {
		return d, fmt.Errorf("%w: no worker to route to (none known or allowed)", ErrInvalid)
	}
	sort.Slice(d.Scores, func(a, b int) bool {
		sa, sb := &d.Scores[a], &d.Scores[b]
		if sa.Cost != sb.Cost {
			return sa.Cost < sb.Cost
		}
		if sa.ActiveBlocks != sb.ActiveBlocks {
			return sa.ActiveBlocks < sb.ActiveBlocks
		}
		return sa.Worker < sb.Worker
	})
	d.Worker = d.Scores[0].Worker
	return d, nil
}

// Start adds blocks to a worker's in-flight load (a request routed there
// began); Complete takes them off when it ends.
// Errors: ErrInvalid for an unknown worker or a negative count.
func (r *Router) Start(worker string, blocks int64) error { return r.addLoad(worker, blocks, 1) }

// Complete removes blocks from a worker's in-flight load (see Start).
func (r *Router) Complete(worker string, blocks int64) error { return r.addLoad(worker, blocks, -1) }

func (r *Router) addLoad(worker string, blocks, sign int64) error {
	if blocks < 0 {
		return fmt.Errorf("%w: negative block count %d", ErrInvalid, blocks)
	}
	delta := sign * blocks
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.x.byName[worker]
	if !ok {
		return fmt.Errorf("%w: unknown worker %q", ErrInvalid, worker)
	}
	ws := r.x.workers[w]
	if ws.active+delta < 0 {
		return fmt.Errorf("%w: worker %q would have %d active blocks", ErrInvalid, worker, ws.active+delta)
	}
	ws.active += delta
	return nil
}
