package router_test

import (
	"fmt"
	"log"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/router"
)

// Example indexes one worker's stored prefix and routes a request that
// shares it.
func Example() {
	r, err := router.New(router.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_ = r.AddWorker("w1")
	system := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	hashes, _ := events.BlockHashes(nil, core.HashSGLang, "", system, 4)
	_, err = r.Ingest(router.Message{Worker: "w0", Seq: 0, Batch: events.Batch{Events: []events.Event{{
		Kind: events.BlockStored, BlockHashes: hashes, BlockSize: 4, Medium: events.MediumGPU}}}})
	if err != nil {
		log.Fatal(err)
	}
	q, _ := events.BlockHashes(nil, core.HashSGLang, "", append(system, 9, 10, 11, 12), 4)
	d, err := r.Route(router.Request{BlockHashes: q})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range d.Scores {
		fmt.Printf("%s: overlap %d blocks, cost %.0f\n", s.Worker, s.Overlap, s.Cost)
	}
	fmt.Println("route to", d.Worker)
	// Output:
	// w0: overlap 2 blocks, cost 1
	// w1: overlap 0 blocks, cost 3
	// route to w0
}
