package kvpub

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/router"
)

// TestPumpController: a controller's events, pumped through a publisher
// into a router, make the router's overlap equal the controller's match.
func TestPumpController(t *testing.T) {
	const page = 4
	eng, err := native.NewDirectEngine(core.Config{PageSize: page, KVEvents: true})
	require.NoError(t, err)
	kv, err := native.NewMemPool(64, 0)
	require.NoError(t, err)
	ctl, err := native.NewController(eng, native.NewPoolSet(kv), native.ControllerConfig{})
	require.NoError(t, err)
	defer ctl.Close()
	r, _ := router.New(router.Config{})
	var seq uint64
	pump := &Pump{Source: ctl, Now: func() float64 { return 0 }, Publish: func(b *events.Batch) error {
		p, err := events.Encode(events.SGLangArray, b)
		if err != nil {
			return err
		}
		d, err := events.Decode(p, events.SGLang)
		if err != nil {
			return err
		}
		_, err = r.Ingest(router.Message{Worker: "w0", Seq: seq, Batch: d})
		seq++
		return err
	}}
	serve := func(toks []uint32) {
		req, err := ctl.Arrive(core.Namespace{}, toks)
		require.NoError(t, err)
		require.NoError(t, ctl.Prefill(req, req.Pending()))
		require.NoError(t, ctl.Finish(req))
		_, err = pump.Drain()
		require.NoError(t, err)
	}
	sys := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	for i := uint32(0); i < 12; i++ { // the pool evicts as it fills
		serve(append(append([]uint32(nil), sys...), 100+i, 101+i, 102+i, 103+i, 104+i, 105+i, 106+i, 107+i))
	}
	for i := uint32(0); i < 12; i++ {
		q := append(append([]uint32(nil), sys...), 100+i, 101+i, 102+i, 103+i, 104+i, 105+i, 106+i, 107+i)
		hs, _ := events.BlockHashes(nil, core.HashSGLang, "", q, page)
		d, err := r.Route(router.Request{BlockHashes: hs})
		require.NoError(t, err)
		slots, err := ctl.Match(nil, core.Namespace{}, q)
		require.NoError(t, err)
		require.Equal(t, len(slots)/page, d.Scores[0].Overlap, "request %d", i)
	}
	b, e := pump.Counts()
	require.Greater(t, e, b)
	n, err := pump.Drain() // nothing new
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = (&Pump{}).Drain()
	require.ErrorIs(t, err, ErrInvalid)
}
