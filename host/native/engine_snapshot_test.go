package native

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/core/snapshot"
	"github.com/stretchr/testify/require"
)

var snapSentinels = []error{snapshot.ErrInvalidConfig, snapshot.ErrInvalidArgument, snapshot.ErrUnknownKey,
	snapshot.ErrUnknownSession, snapshot.ErrWrongAdapter, snapshot.ErrResident, snapshot.ErrSlotInUse, snapshot.ErrSanity}

// sentinelName names the snapshot sentinel err wraps ("" for nil).
func sentinelName(t *testing.T, err error) string {
	if err == nil {
		return ""
	}
	for _, s := range snapSentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	t.Fatalf("error wraps no snapshot sentinel: %v", err)
	return ""
}

func normDisplaced(d snapshot.Displaced) snapshot.Displaced {
	if len(d.Slots) == 0 {
		d.Slots = nil
	}
	if len(d.Blobs) == 0 {
		d.Blobs = nil
	}
	return d
}

// TestSnapshotEngines_Differential drives the snapshot index of every
// engine with the same random commands (all ops, bad input, Marconi,
// reset) and requires the same results and error sentinels everywhere.
func TestSnapshotEngines_Differential(t *testing.T) {
	steps := 400
	if raceEnabled {
		steps = 100
	}
	var engines []SnapshotEngine
	for _, k := range engineKinds {
		engines = append(engines, newEngine(t, k.new, core.Config{PageSize: 4}).(SnapshotEngine))
	}
	rng := rand.New(rand.NewPCG(14, 60))
	base := make([]uint32, 48)
	for i := range base {
		base[i] = uint32(rng.IntN(3))
	}
	var keys []uint64
	for step := range steps {
		var results []any
		var errs []string
		toks := base[:rng.IntN(len(base)+1)]
		adapter, session := uint64(rng.IntN(2)), uint64(rng.IntN(3))
		slot := int32(rng.IntN(20)) - 1
		key := uint64(rng.Uint64())
		if len(keys) > 0 && rng.IntN(4) > 0 {
			key = keys[rng.IntN(len(keys))]
		}
		op := rng.IntN(100)
		m, kind, toTier, gate, ended := rng.IntN(len(toks)+2), snapshot.Kind(rng.IntN(4)), rng.IntN(2) == 0, rng.IntN(20)-1, uint64(rng.IntN(4))
		cfg := snapshot.Config{Alpha: float64(rng.IntN(10)), LeaseTTL: rng.IntN(4)}
		if rng.IntN(2) == 0 {
			cfg.Marconi = &snapshot.MarconiConfig{Model: snapshot.Model7BHybrid, Alpha: float64(rng.IntN(3))}
		}
		for _, e := range engines {
			var res any
			var err error
			switch {
			case op < 25:
				res, err = e.SnapshotLookup(toks, m, session, adapter)
			case op < 55:
				var d snapshot.Displaced
				d, err = e.SnapshotInsert(kind, toks, adapter, slot, session)
				res = normDisplaced(d)
			case op < 72:
				ev, ok, e2 := e.SnapshotEvict(toTier, gate)
				res, err = []any{ev, ok}, e2
			case op < 80:
				err = e.SnapshotPromote(key, adapter, slot, session)
			case op < 86:
				err = e.SnapshotForget(key, adapter)
			case op < 90:
				var d snapshot.Displaced
				d, err = e.SnapshotEndSession(ended)
				res = normDisplaced(d)
			case op < 96:
				st, alpha, e2 := e.SnapshotStats()
				res, err = []any{st, alpha}, e2
			case op < 98:
				err = e.SnapshotConfigure(cfg)
			default:
				err = e.(Engine).Reset()
			}
			results = append(results, res)
			errs = append(errs, sentinelName(t, err))
		}
		require.Equal(t, results[0], results[1], "step %d op %d: direct vs inprocess", step, op)
		require.Equal(t, results[0], results[2], "step %d op %d: direct vs wasm", step, op)
		require.Equal(t, errs[0], errs[1], "step %d op %d", step, op)
		require.Equal(t, errs[0], errs[2], "step %d op %d", step, op)
		if ev, ok := results[0].([]any); ok && len(ev) == 2 {
			if te, ok := ev[0].(snapshot.TierEvict); ok && te.Outcome == snapshot.Spill {
				keys = append(keys, te.Key)
			}
		}
	}
}
