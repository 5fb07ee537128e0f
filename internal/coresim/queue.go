package coresim

import (
	"fmt"

	"github.com/radixkv/radixkv/workload"
)

// queue is the scheduler model of a replay with a ServiceRate: one FIFO
// server whose prefill time is a request's input tokens over the rate.
// The schedule depends only on the trace and the rate, not on the cache,
// so every policy sees the same queue.
type queue struct {
	reqs    []workload.Request
	rate    float64  // tokens per second
	free    float64  // when the server is next free, in ms
	next    int      // the first request not yet seen arriving
	serial  []uint64 // per request: its live protection, 0 = none
	waitSum int64
}

// queuedRequest starts request k: it releases k's own protection (k is
// admitted), protects the prefixes of the requests that arrived by now
// and still wait, then serves k.
func (s *sim) queuedRequest(k int, req *workload.Request) error {
	q := &s.q
	start := max(float64(req.Timestamp), q.free)
	q.free = start + float64(len(req.Tokens))*1000/q.rate
	if sn := q.serial[k]; sn != 0 {
		if err := s.tree.Unprotect(sn); err != nil {
			return fmt.Errorf("coresim: request %d: unprotect: %w", k, err)
		}
		q.serial[k] = 0
	}
	q.next = max(q.next, k+1)
	for q.next < len(q.reqs) && float64(q.reqs[q.next].Timestamp) <= start {
		w := &q.reqs[q.next]
		p, err := s.tree.Protect(namespaceOf(w), w.Tokens)
		if err != nil {
			return fmt.Errorf("coresim: request %d: protect queued request %d: %w", k, q.next, err)
		}
		q.serial[q.next] = p.Serial
		s.st.Protections++
		s.st.ProtectedTokens += int64(p.Len)
		q.next++
	}
	waiting := q.next - k - 1
	q.waitSum += int64(waiting)
	s.st.QueueMax = max(s.st.QueueMax, waiting)
	return s.request(k, req)
}
