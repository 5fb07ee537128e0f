package core_test

import (
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// A request's life: match the cached prefix, lock it while the request
// runs, insert the whole sequence with the fresh slots, free the
// duplicates the tree reports, unlock.
func Example() {
	tree, err := core.New(core.Config{PageSize: 2})
	if err != nil {
		panic(err)
	}
	// A first request computed KV for 6 tokens into slots 0..5.
	_, acts, _ := tree.Insert(core.InsertParams{
		Tokens: []uint32{10, 11, 12, 13, 14, 15},
		Slots:  []int32{0, 1, 2, 3, 4, 5},
	})
	fmt.Printf("first insert: %d actions\n", len(acts))

	// A second request shares the first four tokens.
	prompt := []uint32{10, 11, 12, 13, 20, 21, 22}
	res, _ := tree.Match(nil, core.Namespace{}, prompt)
	fmt.Println("cached:", res.DeviceLen, "slots", res.Indices)
	rcpt, _ := tree.Lock(res.LastDevice, 0)

	// Prefill the rest into fresh slots, then cache the sequence.
	slots := append(res.Indices, 6, 7, 8)
	_, acts, _ = tree.Insert(core.InsertParams{Tokens: prompt, Slots: slots, PrevPrefixLen: res.DeviceLen})
	fmt.Print(core.FormatActions(acts)) // nothing duplicated
	_ = tree.Unlock(res.LastDevice, rcpt, false)

	fmt.Print(tree.Render())
	fmt.Println("sane:", tree.SanityCheck() == nil)
	// Output:
	// first insert: 0 actions
	// cached: 4 slots [0 1 2 3]
	// tree page=2 policy=lru evictable=8 protected=0
	//   n2.1 key=[10-13] full=[0-3] hits=2 t=3/9
	//     n1.1 key=[14 15] full=[4 5] hits=1 t=3/5 leaf
	//     n3.1 key=[20 21] full=[6 7] hits=1 t=10/10 leaf
	// sane: true
}

func ExampleTree_Match() {
	tree, _ := core.New(core.Config{PageSize: 4})
	ns := core.Namespace{CacheSalt: "tenant-a"}
	_, _, _ = tree.Insert(core.InsertParams{Namespace: ns, Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, Slots: []int32{40, 41, 42, 43, 44, 45, 46, 47}})

	// Matching appends to dst; only whole pages match.
	dst := make([]int32, 0, 16)
	res, _ := tree.Match(dst, ns, []uint32{1, 2, 3, 4, 5, 6, 9, 9, 9})
	fmt.Println(res.DeviceLen, res.Indices)

	// Another tenant sees nothing.
	res, _ = tree.Match(dst, core.Namespace{CacheSalt: "tenant-b"}, []uint32{1, 2, 3, 4})
	fmt.Println(res.DeviceLen, res.LastDevice == tree.Root())
	// Output:
	// 4 [40 41 42 43]
	// 0 true
}

func ExampleTree_Evict() {
	tree, _ := core.New(core.Config{PageSize: 1, Policy: "lru"})
	_, _, _ = tree.Insert(core.InsertParams{Tokens: []uint32{1, 2, 3}, Slots: []int32{0, 1, 2}})
	_, _, _ = tree.Insert(core.InsertParams{Tokens: []uint32{1, 2, 7}, Slots: []int32{0, 1, 9}, PrevPrefixLen: 2})

	// Free at least 2 slots: whole leaves go, least recently used first,
	// and the host returns each action's slots to its pool.
	acts, freed, _ := tree.Evict(core.Full, 2, nil)
	fmt.Print(core.FormatActions(acts))
	fmt.Println("freed", freed, "left", tree.Evictable(core.Full))
	// Output:
	// FreeDeviceSlots full node=n1.1 slots=[2]
	// FreeDeviceSlots full node=n3.1 slots=[9]
	// freed 2 left 2
}

func ExampleTree_Lock() {
	tree, _ := core.New(core.Config{PageSize: 1})
	_, _, _ = tree.Insert(core.InsertParams{Tokens: []uint32{1, 2, 3}, Slots: []int32{0, 1, 2}})
	res, _ := tree.Match(nil, core.Namespace{}, []uint32{1, 2, 3})

	rcpt, _ := tree.Lock(res.LastDevice, 0)
	fmt.Println("protected", tree.Protected(core.Full), "delta", rcpt.Delta)
	_, freed, _ := tree.Evict(core.Full, 3, nil)
	fmt.Println("freed while locked:", freed)

	// The receipt releases once, on its own node.
	fmt.Println(tree.Unlock(res.LastDevice, rcpt, false))
	fmt.Println(tree.Unlock(res.LastDevice, rcpt, false) != nil)
	_, freed, _ = tree.Evict(core.Full, 3, nil)
	fmt.Println("freed after unlock:", freed)
	// Output:
	// protected 3 delta 3
	// freed while locked: 0
	// <nil>
	// true
	// freed after unlock: 3
}
