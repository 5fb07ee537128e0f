package kvpub

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/router"
)

func storedBatch(hs ...int64) *events.Batch {
	return &events.Batch{TS: 1, Events: []events.Event{{Kind: events.BlockStored, BlockHashes: hs,
		BlockSize: 4, TokenIDs: make([]uint32, 4*len(hs)), Medium: "GPU"}}}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestZMQLateSubscriberReplays: batches published before the router
// subscribed reach it through the replay socket; later ones live.
func TestZMQLateSubscriberReplays(t *testing.T) {
	for _, f := range []events.Format{events.VLLMArray, events.SGLangMap} {
		p, err := NewZMQPublisher(ZMQConfig{Endpoint: "tcp://127.0.0.1:0", ReplayEndpoint: "tcp://127.0.0.1:0",
			Topic: "kv", Format: f})
		require.NoError(t, err)
		for i := int64(0); i < 5; i++ {
			require.NoError(t, p.Publish(storedBatch(10*i+1, 10*i+2)))
		}
		r, err := router.New(router.Config{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		s, err := NewZMQSubscriber(ctx, r, ZMQSource{Worker: "w0", Endpoint: p.Endpoint(),
			ReplayEndpoint: p.ReplayEndpoint(), Topic: "kv", Dialect: f.Dialect})
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		// Keep publishing until the subscription is live (PUB drops
		// messages until the SUB is connected).
		i := int64(5)
		waitFor(t, "live messages", func() bool {
			require.NoError(t, p.Publish(storedBatch(10*i+1, 10*i+2)))
			i++
			time.Sleep(10 * time.Millisecond)
			return s.Stats().Received > 0
		})
		waitFor(t, "replay to close the gap", func() bool {
			next, _, _ := r.NextSeq("w0")
			// Replayed is counted once the replay's end sentinel came.
			return next == uint64(i) && len(r.Gaps()) == 0 && s.Stats().Replayed > 0
		})
		require.Equal(t, 2*int(i), r.Stats().Blocks)
		st := s.Stats()
		require.Greater(t, st.Replayed, uint64(0))
		t.Logf("%v: %d batches published, %d received live, %d replayed", f, i, st.Received, st.Replayed)
		cancel()
		require.NoError(t, p.Close())
		s.sub.Close()
		<-done
	}
}

func TestReplayZMQFromStart(t *testing.T) {
	p, err := NewZMQPublisher(ZMQConfig{Endpoint: "tcp://127.0.0.1:0", ReplayEndpoint: "tcp://127.0.0.1:0", BufferSteps: 3})
	require.NoError(t, err)
	defer p.Close()
	for i := int64(0); i < 5; i++ {
		require.NoError(t, p.Publish(storedBatch(i)))
	}
	var seqs []uint64
	n, first, err := ReplayZMQ(context.Background(), p.ReplayEndpoint(), 1, func(seq uint64, payload []byte) {
		_, err := events.Decode(payload, events.VLLM)
		require.NoError(t, err)
		seqs = append(seqs, seq)
	})
	require.NoError(t, err)
	require.Equal(t, 3, n) // the buffer keeps 3
	require.Equal(t, uint64(2), first)
	require.Equal(t, []uint64{2, 3, 4}, seqs)
}

func TestZMQConfigErrors(t *testing.T) {
	_, err := NewZMQPublisher(ZMQConfig{})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewZMQPublisher(ZMQConfig{Endpoint: "tcp://127.0.0.1:0", BufferSteps: -1})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewZMQSubscriber(context.Background(), nil, ZMQSource{})
	require.ErrorIs(t, err, ErrInvalid)
}

// TestZMQPublisherRestart: the publisher process restarts on the same
// endpoints with its sequence back at 0 and an empty cache; the subscriber
// reconnects and the router replaces the worker's old blocks.
func TestZMQPublisherRestart(t *testing.T) {
	pubPort, repPort := freePort(t), freePort(t)
	cfg := ZMQConfig{Endpoint: fmt.Sprintf("tcp://127.0.0.1:%d", pubPort),
		ReplayEndpoint: fmt.Sprintf("tcp://127.0.0.1:%d", repPort)}
	var p *ZMQPublisher
	var err error
	waitFor(t, "the endpoints to bind", func() bool {
		p, err = NewZMQPublisher(cfg)
		return err == nil
	})
	r, _ := router.New(router.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := NewZMQSubscriber(ctx, r, ZMQSource{Worker: "w0", Endpoint: cfg.Endpoint, ReplayEndpoint: cfg.ReplayEndpoint})
	require.NoError(t, err)
	go func() { _ = s.Run(ctx) }()
	// The first run lives long enough that, when the subscriber has
	// reconnected, the new run's numbers are still below the old ones
	// (a run shorter than the reconnection is mistaken for a gap: plain
	// ZMQ has no epoch; see package router).
	i := int64(0)
	waitFor(t, "the subscription", func() bool {
		require.NoError(t, p.Publish(storedBatch(1000+i)))
		i++
		return s.Stats().Received > 0
	})
	for ; i < 500; i++ {
		require.NoError(t, p.Publish(storedBatch(1000+i)))
	}
	waitFor(t, "first run", func() bool {
		next, _, _ := r.NextSeq("w0")
		return next == uint64(i) && len(r.Gaps()) == 0
	})
	require.NoError(t, p.Close())
	waitFor(t, "the endpoints to bind again", func() bool { // the restarted worker
		p, err = NewZMQPublisher(cfg)
		return err == nil
	})
	defer p.Close()
	k := int64(0)
	waitFor(t, "restart seen", func() bool {
		// A real engine's first batch after a restart would clear; here
		// the index must drop the old blocks by itself.
		require.NoError(t, p.Publish(storedBatch(1000000+k)))
		k++
		time.Sleep(5 * time.Millisecond)
		next, _, _ := r.NextSeq("w0")
		return r.Stats().Workers[0].Restarts >= 1 && next == uint64(k) && len(r.Gaps()) == 0
	})
	require.Equal(t, uint64(1), r.Stats().Workers[0].Restarts)
	for _, b := range r.Dump() {
		require.True(t, b.Hash >= 1000000, "block %d of the old run survived the restart", b.Hash)
	}
	t.Logf("first run %d batches, second run %d batches, %d restarts detected, %d replayed",
		i, k, r.Stats().Workers[0].Restarts, s.Stats().Replayed)
}
