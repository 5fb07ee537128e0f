package events_test

import (
	"fmt"
	"log"

	"github.com/radixkv/radixkv/events"
)

// Example encodes one batch in SGLang's array shape and reads it back.
func Example() {
	b := events.Batch{TS: 1.5, Events: []events.Event{{
		Kind: events.BlockStored, BlockHashes: []int64{11, 12},
		TokenIDs: []uint32{1, 2, 3, 4}, BlockSize: 2, Medium: events.MediumGPU,
	}}}
	payload, err := events.Encode(events.SGLangArray, &b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %x\n", events.SGLangArray, payload)
	got, err := events.Decode(payload, events.SGLang)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Events[0].Kind, got.Events[0].BlockHashes, got.Events[0].Medium)
	// Output:
	// sglang/array/v1: 92cb3ff80000000000009197ab426c6f636b53746f726564920b0cc0940102030402c0a3475055
	// BlockStored [11 12] GPU
}
