package snapshot_test

import (
	"fmt"

	"github.com/radixkv/radixkv/core/snapshot"
)

// A finish-leaf snapshot serves a later request whose KV match covers it;
// under pressure it spills to a tier and is faulted back in.
func Example() {
	idx, _ := snapshot.New(snapshot.Config{})
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	idx.Insert(prompt[:4], 0, 10, 0) // state after 4 tokens lives in slot 10

	m, _ := idx.Lookup(prompt, 8, 0, 0) // the KV cache matched all 8 tokens
	fmt.Println("anchor", m.Tokens, "slot", m.Slot, "recompute", 8-m.Tokens)

	ev, _, _ := idx.EvictToTier(0) // copy slot 10 out under ev.Key, free it
	fmt.Println(ev.Outcome == snapshot.Spill, ev.Slot)

	m, _ = idx.Lookup(prompt, 8, 0, 0)
	fmt.Println("tiered", m.Tiered, m.Key == ev.Key)
	_ = idx.Promote(m.Key, 0, 11, 0) // faulted into slot 11
	m, _ = idx.Lookup(prompt, 8, 0, 0)
	fmt.Println("slot", m.Slot)
	// Output:
	// anchor 4 slot 10 recompute 4
	// true 10
	// tiered true true
	// slot 11
}
