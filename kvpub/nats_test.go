package kvpub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/internal/natsembed"
	"github.com/radixkv/radixkv/router"
)

func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	require.NoError(t, err)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

// randomBatch stores or removes blocks of a small universe per worker.
func randomBatch(rng *rand.Rand) *events.Batch {
	hs := []int64{int64(rng.IntN(50)), int64(rng.IntN(50) + 50)}
	if rng.IntN(3) == 0 {
		return &events.Batch{Events: []events.Event{{Kind: events.BlockRemoved, BlockHashes: hs, Medium: "GPU"}}}
	}
	return storedBatch(hs...)
}

// TestNATSFaults runs three workers' publishers and a router consumer on
// an embedded JetStream server through a server restart mid-stream, a
// publisher restart (new epoch) and a router restart from a snapshot, and
// checks after each phase that the index equals a reference router fed the
// same batches directly.
func TestNATSFaults(t *testing.T) {
	srv, err := natsembed.Start(t.TempDir())
	require.NoError(t, err)
	defer srv.Stop()
	ctx := context.Background()
	nc, js := connect(t, srv.URL())
	defer nc.Close()

	truth, _ := router.New(router.Config{})
	truthSeq := map[string]uint64{}
	pubs := map[string]*NATSPublisher{}
	formats := []events.Format{events.VLLMArray, events.SGLangArray, events.VLLMMap}
	newPub := func(i int, epoch uint64) {
		name := fmt.Sprintf("w%d", i)
		p, err := NewNATSPublisher(ctx, js, NATSConfig{Model: "m", Worker: name, Format: formats[i], Epoch: epoch, Timeout: 200 * time.Millisecond})
		require.NoError(t, err)
		pubs[name] = p
	}
	for i := 0; i < 3; i++ {
		newPub(i, 1)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	published := 0
	queued := 0
	publish := func(n int) {
		for k := 0; k < n; k++ {
			name := fmt.Sprintf("w%d", rng.IntN(3))
			b := randomBatch(rng)
			// The reference sees the batch as the format carries it.
			p := pubs[name]
			payload, _ := events.Encode(p.cfg.Format, b)
			db, _ := events.Decode(payload, p.cfg.Format.Dialect)
			_, err := truth.Ingest(router.Message{Worker: name, Epoch: p.cfg.Epoch, Seq: truthSeq[name], Batch: db})
			require.NoError(t, err)
			truthSeq[name]++
			err = p.Publish(ctx, b)
			if err != nil {
				require.ErrorIs(t, err, ErrQueued)
				queued++
			}
			published++
		}
	}
	flushAll := func() {
		for _, p := range pubs {
			waitFor(t, "flush", func() bool { return p.Flush(ctx) == nil })
		}
	}
	r, _ := router.New(router.Config{})
	cons, err := ConsumeNATS(ctx, js, r, NATSConsumerConfig{})
	require.NoError(t, err)
	converge := func(phase string) {
		waitFor(t, phase, func() bool {
			for name, n := range truthSeq {
				next, _, _ := r.NextSeq(name)
				if next != n {
					return false
				}
			}
			return true
		})
		require.Equal(t, noParentDump(truth), noParentDump(r), phase)
		require.NoError(t, r.Check())
		t.Logf("%s: %d batches published (%d queued during outages), consumer received %d", phase, published, queued, cons.Stats().Received)
	}

	publish(100)
	converge("steady")

	// NATS server restart mid-stream: publishes during the outage queue
	// and go out after it, de-duplicated by message id.
	srv.Stop()
	publish(20)
	require.NoError(t, srv.Restart())
	publish(30)
	flushAll()
	converge("server restart")

	// Publisher restart: worker w1 comes back with a new epoch and an
	// empty cache.
	newPub(1, 2)
	truthSeq["w1"] = 0
	_, _ = truth.Ingest(router.Message{Worker: "w1", Epoch: 2, Seq: 0, Batch: events.Batch{Events: []events.Event{{Kind: events.AllBlocksCleared}}}})
	truthSeq["w1"] = 1
	require.NoError(t, pubs["w1"].Publish(ctx, &events.Batch{Events: []events.Event{{Kind: events.AllBlocksCleared}}}))
	publish(50)
	converge("publisher restart")

	// Router restart from a snapshot: it resumes after the snapshot's
	// stream cursor and needs only the messages published since.
	cons.Stop()
	snap := r.Snapshot()
	publish(40)
	before := cons.Stats().Received
	r, err = router.Restore(router.Config{}, snap)
	require.NoError(t, err)
	cons, err = ConsumeNATS(ctx, js, r, NATSConsumerConfig{})
	require.NoError(t, err)
	converge("router restart from snapshot")
	require.LessOrEqual(t, cons.Stats().Received, uint64(40))
	t.Logf("router restart: first consumer had received %d messages; the restored one needed %d", before, cons.Stats().Received)
	cons.Stop()
}

func noParentDump(r *router.Router) []router.BlockState {
	d := r.Dump()
	for i := range d {
		d[i].Parent, d[i].HasParent = 0, false
	}
	return d
}
