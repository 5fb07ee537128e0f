package router

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/events"
)

// pub is an in-memory publisher: it numbers batches per epoch and keeps
// them all for replay.
type pub struct {
	name  string
	epoch uint64
	buf   []Message
}

func (p *pub) publish(b events.Batch) Message {
	m := Message{Worker: p.name, Epoch: p.epoch, Seq: uint64(len(p.buf)), Batch: b}
	p.buf = append(p.buf, m)
	return m
}

func (p *pub) replay(from uint64) []Message {
	if from >= uint64(len(p.buf)) {
		return nil
	}
	return p.buf[from:]
}

// restart starts a new epoch with an empty cache: its first batch clears.
func (p *pub) restart(epochs bool) {
	if epochs {
		p.epoch++
	}
	p.buf = nil
}

type faults struct {
	drop, dup, reorder float64
}

// deliver sends msgs through a faulty network; returns how many it sent.
func deliver(t *testing.T, r *Router, rng *rand.Rand, msgs []Message, f faults) int {
	var held []Message
	sent := 0
	send := func(m Message) {
		_, err := r.Ingest(m)
		require.NoError(t, err)
		sent++
	}
	for _, m := range msgs {
		switch x := rng.Float64(); {
		case x < f.drop:
			continue
		case x < f.drop+f.dup:
			send(m)
			send(m)
		case x < f.drop+f.dup+f.reorder:
			held = append(held, m)
		default:
			send(m)
		}
		if len(held) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(held))
			send(held[k])
			held = append(held[:k], held[k+1:]...)
		}
	}
	for _, m := range held {
		send(m)
	}
	return sent
}

// resync replays every gap from the publishers; returns messages replayed.
func resync(t *testing.T, r *Router, pubs map[string]*pub) int {
	n := 0
	for rounds := 0; rounds < 10; rounds++ {
		gaps := r.Gaps()
		// A tail loss leaves no gap: ask each publisher from NextSeq too.
		for name, p := range pubs {
			next, epoch, ok := r.NextSeq(name)
			if !ok || epoch != p.epoch || next < uint64(len(p.buf)) {
				gaps = append(gaps, Gap{Worker: name, From: next})
			}
		}
		if len(gaps) == 0 {
			return n
		}
		for _, g := range gaps {
			p := pubs[g.Worker]
			from := g.From
			if _, epoch, _ := r.NextSeq(g.Worker); epoch != p.epoch {
				from = 0
			}
			for _, m := range p.replay(from) {
				_, err := r.Ingest(m)
				require.NoError(t, err)
				n++
			}
		}
	}
	t.Fatalf("gaps did not close: %v", r.Gaps())
	return n
}

// workload makes random batches for nw workers; the truth router gets
// every message once, in order.
func runFaulty(t *testing.T, seed uint64, f faults, restarts, epochs, snapshot bool) {
	rng := rand.New(rand.NewPCG(seed, 5))
	const nw = 3
	pubs := map[string]*pub{}
	for i := 0; i < nw; i++ {
		n := fmt.Sprintf("w%d", i)
		pubs[n] = &pub{name: n, epoch: 1}
	}
	truth := newModel()
	r, err := New(Config{})
	require.NoError(t, err)
	var sent, replayed, produced int
	for round := 0; round < 8; round++ {
		var msgs []Message
		for k := 0; k < 60; k++ {
			name := fmt.Sprintf("w%d", rng.IntN(nw))
			p := pubs[name]
			if restarts && rng.IntN(150) == 0 {
				p.restart(epochs)
				clear(truth.blocks[name])
			}
			b := events.Batch{Events: []events.Event{randomEvent(rng, 40), randomEvent(rng, 40)}}
			for _, e := range b.Events {
				truth.apply(name, e)
			}
			msgs = append(msgs, p.publish(b))
			produced++
		}
		sent += deliver(t, r, rng, msgs, f)
		if snapshot && round == 4 {
			// The router restarts from a snapshot (taken before this
			// round's gaps were filled) and catches up by replay.
			snap := r.Snapshot()
			r, err = Restore(Config{}, snap)
			require.NoError(t, err)
			require.Equal(t, snap, r.Snapshot())
		}
		replayed += resync(t, r, pubs)
		require.NoError(t, r.Check())
		require.Equal(t, noParents(truth.dump()), noParents(r.Dump()), "seed %d round %d", seed, round)
	}
	t.Logf("seed %d: %d batches produced, %d delivered (with faults), %d replayed; index converged",
		seed, produced, sent, replayed)
}

// noParents drops the parent links: with chained hashes a block's parent
// is a function of its hash, but the random events here pick parents
// freely, so the last announced one depends on how workers interleave.
func noParents(bs []BlockState) []BlockState {
	for i := range bs {
		bs[i].Parent, bs[i].HasParent = 0, false
	}
	return bs
}

func TestFaultDropDupReorder(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		runFaulty(t, seed, faults{drop: 0.1, dup: 0.1, reorder: 0.15}, false, true, false)
	}
}

func TestFaultPublisherRestartWithEpochs(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		runFaulty(t, seed, faults{drop: 0.05, dup: 0.05, reorder: 0.1}, true, true, false)
	}
}

// Without epochs (plain ZMQ) a restart is seen as the sequence going back
// to 0; reordering across the restart cannot be told apart, so the
// network here only drops and duplicates.
func TestFaultPublisherRestartSeqReset(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		runFaultyNoEpoch(t, seed)
	}
}

func runFaultyNoEpoch(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	p := &pub{name: "w0"}
	truth := newModel()
	r, err := New(Config{})
	require.NoError(t, err)
	restarts := 0
	for round := 0; round < 6; round++ {
		var msgs []Message
		for k := 0; k < 40; k++ {
			if k == 20 && round%2 == 1 {
				// Deliver what came before, then restart.
				deliver(t, r, rng, msgs, faults{dup: 0.1})
				resync(t, r, map[string]*pub{"w0": p})
				msgs = nil
				p.restart(false)
				clear(truth.blocks["w0"])
				restarts++
			}
			b := events.Batch{Events: []events.Event{randomEvent(rng, 40)}}
			truth.apply("w0", b.Events[0])
			msgs = append(msgs, p.publish(b))
		}
		deliver(t, r, rng, msgs, faults{drop: 0.1, dup: 0.1})
		resync(t, r, map[string]*pub{"w0": p})
		require.Equal(t, noParents(truth.dump()), noParents(r.Dump()), "seed %d round %d", seed, round)
	}
	// A late duplicate of sequence 0 also reads as a restart (without
	// epochs the two cannot be told apart); replay repairs the state.
	got := r.Stats().Workers[0].Restarts
	require.GreaterOrEqual(t, got, uint64(restarts))
	t.Logf("seed %d: %d publisher restarts, %d detected", seed, restarts, got)
}

func TestFaultRouterRestartFromSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		runFaulty(t, seed, faults{drop: 0.1, dup: 0.05, reorder: 0.1}, true, true, true)
	}
}

func TestSnapshotErrors(t *testing.T) {
	r, _ := New(Config{})
	_, err := r.Ingest(Message{Worker: "w", Batch: events.Batch{Events: []events.Event{
		{Kind: events.BlockStored, BlockHashes: []int64{1, 2}, BlockSize: 1}}}})
	require.NoError(t, err)
	snap := r.Snapshot()
	for i := range snap {
		bad := append([]byte(nil), snap...)
		bad[i] ^= 0x40
		_, err := Restore(Config{}, bad)
		require.ErrorIs(t, err, ErrBadSnapshot, "byte %d", i)
	}
	for n := 0; n < len(snap); n++ {
		_, err := Restore(Config{}, snap[:n])
		require.ErrorIs(t, err, ErrBadSnapshot, "prefix %d", n)
	}
}

func FuzzRestore(f *testing.F) {
	r, _ := New(Config{})
	_, _ = r.Ingest(Message{Worker: "w", Batch: events.Batch{Events: []events.Event{
		{Kind: events.BlockStored, BlockHashes: []int64{1, 2}, BlockSize: 1, SpecKind: "mamba", GroupIdx: 1, HasGroupIdx: true}}}})
	f.Add(r.Snapshot())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Restore(Config{}, b)
		if err != nil {
			return
		}
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzRestoreBody fuzzes the snapshot body behind a valid magic and
// checksum, so that mutations reach the parser.
func FuzzRestoreBody(f *testing.F) {
	r, _ := New(Config{})
	_, _ = r.Ingest(Message{Worker: "w", Batch: events.Batch{Events: []events.Event{
		{Kind: events.BlockStored, BlockHashes: []int64{1, 2}, BlockSize: 1, SpecKind: "mamba", GroupIdx: 1, HasGroupIdx: true}}}})
	_, _ = r.Ingest(Message{Worker: "v", Batch: events.Batch{Events: []events.Event{
		{Kind: events.BlockStored, BlockHashes: []int64{2, 3}, BlockSize: 1, HasParent: true, ParentBlockHash: 1}}}})
	s := r.Snapshot()
	f.Add(s[len(snapMagic) : len(s)-4])
	f.Fuzz(func(t *testing.T, body []byte) {
		b := append([]byte(snapMagic), body...)
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
		r, err := Restore(Config{}, b)
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Snapshot(), b) {
			// Restore accepts only canonical snapshots it could have written.
			t.Fatalf("snapshot not canonical")
		}
	})
}

func TestReconnectedMarksRestart(t *testing.T) {
	r, _ := New(Config{})
	for s := uint64(0); s < 5; s++ {
		_, err := r.Ingest(Message{Worker: "w", Seq: s, Batch: events.Batch{Events: []events.Event{
			{Kind: events.BlockStored, BlockHashes: []int64{int64(s)}, BlockSize: 1}}}})
		require.NoError(t, err)
	}
	o, _ := r.Ingest(Message{Worker: "w", Seq: 2})
	require.Equal(t, Duplicate, o)
	r.Reconnected("w")
	o, _ = r.Ingest(Message{Worker: "w", Seq: 2, Batch: events.Batch{Events: []events.Event{
		{Kind: events.BlockStored, BlockHashes: []int64{77}, BlockSize: 1}}}})
	require.Equal(t, Restarted, o)
	require.Equal(t, []Gap{{Worker: "w", From: 0, To: 2}}, r.Gaps())
	require.Empty(t, r.Dump()) // old blocks gone; seq 2 waits for 0 and 1
	// A reconnect without a restart: the stream simply continues.
	r.SkipGap("w")
	r.Reconnected("w")
	o, _ = r.Ingest(Message{Worker: "w", Seq: 3})
	require.Equal(t, Applied, o)
}
