package router

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/radixkv/radixkv/events"
)

// benchStreams makes per-worker batches of BlockStored chains (16 blocks
// per event) over shared stems, with some removals.
func benchStreams(nw, batches int) [][]events.Batch {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]events.Batch, nw)
	for w := range out {
		for i := 0; i < batches; i++ {
			var b events.Batch
			for k := 0; k < 4; k++ {
				hs := make([]int64, 16)
				base := int64(rng.IntN(4096)) << 8
				for j := range hs {
					hs[j] = base + int64(j)
				}
				if k == 3 {
					b.Events = append(b.Events, events.Event{Kind: events.BlockRemoved, BlockHashes: hs[:4], Medium: "GPU"})
					continue
				}
				b.Events = append(b.Events, events.Event{Kind: events.BlockStored, BlockHashes: hs, BlockSize: 16, Medium: "GPU"})
			}
			out[w] = append(out[w], b)
		}
	}
	return out
}

// BenchmarkIngest measures events (one event = one BlockStored or
// BlockRemoved of 16 or 4 blocks) applied per second from 8 workers.
func BenchmarkIngest(b *testing.B) {
	const nw = 8
	streams := benchStreams(nw, 512)
	r, _ := New(Config{})
	seq := make([]uint64, nw)
	names := make([]string, nw)
	for i := range names {
		names[i] = fmt.Sprintf("w%d", i)
	}
	b.ResetTimer()
	evs := 0
	for i := 0; i < b.N; i++ {
		w := i % nw
		bt := streams[w][int(seq[w])%len(streams[w])]
		if _, err := r.Ingest(Message{Worker: names[w], Seq: seq[w], Batch: bt}); err != nil {
			b.Fatal(err)
		}
		seq[w]++
		evs += len(bt.Events)
	}
	b.ReportMetric(float64(evs)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRoute measures route queries of 64 blocks against an index
// holding 8 workers' streams.
func BenchmarkRoute(b *testing.B) {
	const nw = 8
	streams := benchStreams(nw, 512)
	r, _ := New(Config{})
	for w := 0; w < nw; w++ {
		for s, bt := range streams[w] {
			_, _ = r.Ingest(Message{Worker: fmt.Sprintf("w%d", w), Seq: uint64(s), Batch: bt})
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	qs := make([]Request, 256)
	for i := range qs {
		base := int64(rng.IntN(4096)) << 8
		hs := make([]int64, 64)
		for j := range hs {
			hs[j] = base + int64(j)
		}
		qs[i] = Request{BlockHashes: hs}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Route(qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}
