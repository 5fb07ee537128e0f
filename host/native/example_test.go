package native_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
)

// Example runs two requests that share a system prompt through the
// controller: the second finds the first's pages cached and computes only
// its own tokens; the canary proves the shared slots hold its prefix.
func Example() {
	eng, err := native.NewDirectEngine(core.Config{PageSize: 4})
	if err != nil {
		log.Fatal(err)
	}
	kv, err := native.NewMemPool(32, native.CanaryBytes)
	if err != nil {
		log.Fatal(err)
	}
	ctl, err := native.NewController(eng, native.NewPoolSet(kv),
		native.ControllerConfig{Canary: true, VerifyMatches: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ctl.Close()

	system := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	serve := func(prompt []uint32, output ...uint32) {
		r, err := ctl.Arrive(core.Namespace{}, prompt) // match + lock
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("prompt %d tokens, cached %d\n", len(prompt), r.CachedLen())
		if err := ctl.Prefill(r, r.Pending()); err != nil { // slots for the rest
			log.Fatal(err)
		}
		if err := ctl.Extend(r, output...); err != nil { // decoded tokens
			log.Fatal(err)
		}
		if err := ctl.Finish(r); err != nil { // insert, free the tail, unlock
			log.Fatal(err)
		}
		fmt.Printf("free slots %d of %d\n", kv.Available(), kv.Capacity())
	}
	serve(append(system, 10, 11), 12, 13, 14)
	serve(append(system, 20, 21, 22, 23), 24)

	if err := ctl.Audit(); err != nil {
		log.Fatal(err)
	}
	st := ctl.Stats()
	fmt.Printf("matched %d of %d input tokens, canary mismatches %d\n",
		st.MatchedTokens, st.InputTokens, st.CanaryMismatches)
	// Output:
	// prompt 10 tokens, cached 0
	// free slots 20 of 32
	// prompt 12 tokens, cached 8
	// free slots 16 of 32
	// matched 8 of 22 input tokens, canary mismatches 0
}

// Example_hybrid serves a model with sliding-window attention and Mamba
// layers: the controller also owns an SWA pool (reached through the
// Full→SWA slot mapping) and a Mamba state pool. The first request
// decodes past its window, so its early positions keep only Full KV;
// the second shares its prompt, forks its cached state and hits.
func Example_hybrid() {
	eng, err := native.NewDirectEngine(core.Config{
		PageSize:   4,
		Components: []core.Component{core.Full, core.SWA, core.Mamba},
		SWAWindow:  8, MambaChunkSize: 4,
	})
	if err != nil {
		log.Fatal(err)
	}
	kv, _ := native.NewMemPool(64, native.CanaryBytes)
	swa, _ := native.NewMemPool(32, native.CanaryBytes)
	states, _ := native.NewMemPool(4, native.CanaryBytes)
	pools := native.NewPoolSet(kv)
	_ = pools.Set(core.SWA, native.Device, swa)
	_ = pools.Set(core.Mamba, native.Device, states)
	ctl, err := native.NewController(eng, pools, native.ControllerConfig{Canary: true, VerifyMatches: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ctl.Close()

	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	r, err := ctl.Arrive(core.Namespace{}, prompt)
	if err != nil {
		log.Fatal(err)
	}
	if err := ctl.Prefill(r, r.Pending()); err != nil {
		log.Fatal(err)
	}
	for tok := uint32(100); tok < 106; tok++ { // decode one token at a time
		if err := ctl.Extend(r, tok); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("computed %d, SWA slots dropped below %d, SWA free %d of %d\n",
		r.Computed(), r.SWAEvictedLen(), swa.Available(), swa.Capacity())
	if err := ctl.Finish(r); err != nil {
		log.Fatal(err)
	}

	r, err = ctl.Arrive(core.Namespace{}, append(prompt, 100, 101, 102, 103, 104, 105, 7))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("cached %d, forked state %v\n", r.CachedLen(), r.MambaSlot() >= 0)
	if err := ctl.Abort(r); err != nil {
		log.Fatal(err)
	}
	if err := ctl.Audit(); err != nil {
		log.Fatal(err)
	}
	st := ctl.Stats()
	fmt.Printf("forks %d, states donated %d, canary mismatches %d\n", st.MambaForks, st.MambaDonated, st.CanaryMismatches)
	// Output:
	// computed 18, SWA slots dropped below 8, SWA free 22 of 32
	// cached 16, forked state true
	// forks 1, states donated 1, canary mismatches 0
}

// Example_hostTier adds a host tier (HiCache) under write-back: a device
// pool of 16 slots holds one 12-token prompt, so the next prompt evicts
// it, and the eviction copies it to the host pool instead of losing it.
// When the first prompt comes back it is loaded back from host memory.
func Example_hostTier() {
	eng, err := native.NewDirectEngine(core.Config{PageSize: 4, HostTier: true, WritePolicy: core.WriteBack})
	if err != nil {
		log.Fatal(err)
	}
	kv, _ := native.NewMemPool(16, native.CanaryBytes)
	host, _ := native.NewMemPool(64, native.CanaryBytes) // same slot size as the device pool
	pools := native.NewPoolSet(kv)
	_ = pools.Set(core.Full, native.Host, host)
	ctl, err := native.NewController(eng, pools, native.ControllerConfig{Canary: true, VerifyMatches: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ctl.Close()

	serve := func(prompt []uint32) {
		r, err := ctl.Arrive(core.Namespace{}, prompt) // match, load-back, lock
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("cached %d (from host %d)\n", r.CachedLen(), r.HostHitLen())
		if err := ctl.Prefill(r, r.Pending()); err != nil { // evicts to the host
			log.Fatal(err)
		}
		if err := ctl.Finish(r); err != nil {
			log.Fatal(err)
		}
	}
	a := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	b := []uint32{21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}
	serve(a)
	serve(b) // a is backed up and demoted to make room
	serve(a) // a comes back from the host; b goes there

	if err := ctl.Audit(); err != nil {
		log.Fatal(err)
	}
	st := ctl.Stats()
	fmt.Printf("backups %d, demoted %d, load-backs %d, host slots held %d, canary mismatches %d\n",
		st.Backups, st.Demoted, st.LoadBacks, ctl.HostHeld(core.Full), st.CanaryMismatches)
	// Output:
	// cached 0 (from host 0)
	// cached 0 (from host 0)
	// cached 12 (from host 12)
	// backups 2, demoted 2, load-backs 1, host slots held 24, canary mismatches 0
}

// ExampleController_ReplaceEngine recovers from a guest trap: the call
// that meets it fails with ErrEngineFailed, a fresh engine takes the old
// one's place, every slot is back in its pool, and the request that was
// running is lost cleanly.
func ExampleController_ReplaceEngine() {
	cfg := core.Config{PageSize: 4}
	eng, err := native.NewInProcessEngine(cfg)
	if err != nil {
		log.Fatal(err)
	}
	kv, err := native.NewMemPool(32, native.CanaryBytes)
	if err != nil {
		log.Fatal(err)
	}
	ctl, err := native.NewController(eng, native.NewPoolSet(kv), native.ControllerConfig{Canary: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ctl.Close()
	var running []*native.Request
	for _, p := range [][]uint32{{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 9}} {
		r, err := ctl.Arrive(core.Namespace{}, p)
		if err != nil {
			log.Fatal(err)
		}
		if err := ctl.Prefill(r, r.Pending()); err != nil {
			log.Fatal(err)
		}
		running = append(running, r)
	}
	if err := native.InjectTrap(eng, 0); err != nil { // the guest traps on its next call
		log.Fatal(err)
	}
	err = ctl.Finish(running[0])
	fmt.Println("finish failed with the engine:", errors.Is(err, native.ErrEngineFailed))

	fresh, err := native.NewInProcessEngine(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := ctl.ReplaceEngine(fresh); err != nil {
		log.Fatal(err)
	}
	fmt.Println("audit:", ctl.Audit(), "free slots:", kv.Available())
	r := running[1]
	fmt.Println("request lost:", errors.Is(ctl.Finish(r), native.ErrEngineReplaced), r.Done())
	// Output:
	// finish failed with the engine: true
	// audit: <nil> free slots: 32
	// request lost: true true
}
