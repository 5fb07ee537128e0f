package main

import (
	"github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/internal/coresim"
	"github.com/radixkv/radixkv/workload"
)

// treeTuner tunes the tree's marconi alpha online: from the first state
// eviction on, every window requests it replays the last window (warmed
// with the window before) on fresh shadow trees per candidate alpha
// (coresim.TuneMambaAlpha) and sets the best on the engine, through the
// ABI for wasm and inprocess. Deterministic: it sees only the workload.
type treeTuner struct {
	cfg    coresim.MambaConfig
	reqs   []workload.Request
	setter native.MambaAlphaSetter
	window int
	next   int // request after which to tune; -1 until a state was evicted
	alpha  float64
	tunes  int
	at     int // request after which alpha was last tuned; -1: never
}

func (tt *treeTuner) after(k int, evicted bool) error {
	if tt.next < 0 {
		if evicted {
			tt.next = k + tt.window
		}
		return nil
	}
	if k != tt.next {
		return nil
	}
	w := tt.window
	alpha, err := coresim.TuneMambaAlpha(tt.cfg, tt.reqs[max(0, k+1-2*w):k+1-w], tt.reqs[k+1-w:k+1])
	if err != nil {
		return err
	}
	if err := tt.setter.SetMambaAlpha(alpha); err != nil {
		return err
	}
	tt.alpha, tt.at, tt.next = alpha, k, k+w
	tt.tunes++
	return nil
}
