package kvpub_test

import (
	"fmt"
	"log"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/host/native"
	"github.com/radixkv/radixkv/kvpub"
	"github.com/radixkv/radixkv/router"
)

// ExamplePump drains a controller's KV events after a request and hands
// them, as one batch, to a publisher; here the publisher encodes the batch
// as a vLLM worker would and gives it straight to a router (a real one
// would be kvpub.ZMQSink or kvpub.NATSSink).
func ExamplePump() {
	eng, _ := native.NewDirectEngine(core.Config{PageSize: 4, KVEvents: true})
	kv, _ := native.NewMemPool(64, 0)
	ctl, err := native.NewController(eng, native.NewPoolSet(kv), native.ControllerConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer ctl.Close()
	r, _ := router.New(router.Config{})
	seq := uint64(0)
	pump := &kvpub.Pump{Source: ctl, Now: func() float64 { return 0 }, Publish: func(b *events.Batch) error {
		payload, err := events.Encode(events.VLLMArray, b)
		if err != nil {
			return err
		}
		got, err := events.Decode(payload, events.VLLM)
		if err != nil {
			return err
		}
		_, err = r.Ingest(router.Message{Worker: "w0", Seq: seq, Batch: got})
		seq++
		return err
	}}

	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	req, _ := ctl.Arrive(core.Namespace{}, prompt)
	_ = ctl.Prefill(req, req.Pending())
	_ = ctl.Finish(req)
	n, err := pump.Drain()
	if err != nil {
		log.Fatal(err)
	}
	hs, _ := events.BlockHashes(nil, core.HashSGLang, "", prompt, 4)
	d, _ := r.Route(router.Request{BlockHashes: hs})
	fmt.Printf("%d event published; router: %s caches %d of %d blocks\n", n, d.Worker, d.Scores[0].Overlap, len(hs))
	// Output:
	// 1 event published; router: w0 caches 2 of 2 blocks
}
