package native_test

import (
	"fmt"
	"log"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/host/native/pooltest"
)

// ExampleNewPagedMemPool: a pool of 4-slot pages hands out whole pages,
// and takes them back whole.
func ExampleNewPagedMemPool() {
	p, err := native.NewPagedMemPool(16, 0, 4)
	if err != nil {
		log.Fatal(err)
	}
	slots, _ := p.AllocPages(nil, 2)
	fmt.Println(slots, p.AvailablePages())
	fmt.Println(p.FreePages(slots[:3]) != nil) // not a whole page
	fmt.Println(p.FreePages(slots), p.AvailablePages())
	// Output:
	// [0 1 2 3 4 5 6 7] 2
	// true
	// <nil> 4
}

// ExampleTransport: a write-through backup whose copy is still in flight
// when Finish returns; the controller commits it once the batch
// completed (here at Drain), and Audit accounts for the host slots in
// between.
func ExampleTransport() {
	cfg := core.Config{PageSize: 4, HostTier: true, WritePolicy: core.WriteThrough}
	eng, err := native.NewDirectEngine(cfg)
	if err != nil {
		log.Fatal(err)
	}
	dev, _ := native.NewPagedMemPool(32, native.CanaryBytes, 4)
	host, _ := native.NewMemPool(32, native.CanaryBytes)
	set := native.NewPoolSet(dev)
	_ = set.Set(core.Full, native.Host, host)
	// Batches complete only when waited for: Done never reports them.
	slow := pooltest.New(set, pooltest.Config{MaxDelay: 1 << 30})
	ctl, err := native.NewController(eng, slow, native.ControllerConfig{Canary: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ctl.Close()

	r, _ := ctl.Arrive(core.Namespace{}, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9})
	_ = ctl.Prefill(r, r.Pending())
	_ = ctl.Finish(r)
	fmt.Println("in flight:", ctl.InFlight(), "audit:", ctl.Audit())
	_ = ctl.Drain()
	st := ctl.Stats()
	fmt.Println("in flight:", ctl.InFlight(), "write-throughs:", st.WriteThroughs, "host slots held:", ctl.HostHeld(core.Full))
	// Output:
	// in flight: 1 audit: <nil>
	// in flight: 0 write-throughs: 1 host slots held: 8
}
