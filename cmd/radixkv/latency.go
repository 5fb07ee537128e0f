package main

import (
	"slices"
	"time"
)

// latency collects the durations of one kind of operation. It keeps every
// sample (8 bytes each), so the percentiles are exact.
type latency struct {
	ns []int64
}

func (l *latency) add(d time.Duration) { l.ns = append(l.ns, int64(d)) }

// latencySummary is the JSON form of a latency distribution, in
// nanoseconds; percentiles use the nearest-rank method.
type latencySummary struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50"`
	P90   int64 `json:"p90"`
	P99   int64 `json:"p99"`
	Max   int64 `json:"max"`
	Total int64 `json:"total"`
}

func (l *latency) summary() latencySummary {
	s := latencySummary{Count: len(l.ns)}
	if len(l.ns) == 0 {
		return s
	}
	v := slices.Clone(l.ns)
	slices.Sort(v)
	rank := func(p int) int64 {
		// nearest rank: the smallest value with at least p% of samples at or below it
		i := (p*len(v) + 99) / 100
		return v[max(i, 1)-1]
	}
	s.P50, s.P90, s.P99, s.Max = rank(50), rank(90), rank(99), v[len(v)-1]
	for _, x := range v {
		s.Total += x
	}
	return s
}
