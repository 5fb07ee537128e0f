// Command quickstart walks through one request lifecycle on a small tree:
// insert two requests that share a prefix, match a third, lock it, evict
// under pressure, and print what the tree decided at each step.
package main

import (
	"fmt"
	"log"

	"github.com/radixkv/radixkv/core"
)

func main() {
	tree, err := core.New(core.Config{PageSize: 4, Policy: "lru"})
	if err != nil {
		log.Fatal(err)
	}
	next := int32(0)
	slots := func(n int) []int32 { // a toy allocator: fresh slot numbers
		out := make([]int32, n)
		for i := range out {
			out[i] = next
			next++
		}
		return out
	}
	system := []uint32{1, 2, 3, 4, 5, 6, 7, 8} // a shared system prompt
	reqA := append(append([]uint32{}, system...), 10, 11, 12, 13)
	reqB := append(append([]uint32{}, system...), 20, 21, 22, 23, 24, 25)

	step := func(title string) { fmt.Printf("\n== %s\n", title) }

	step("insert request A (12 tokens)")
	_, acts, err := tree.Insert(core.InsertParams{Tokens: reqA, Slots: slots(len(reqA))})
	check(err)
	fmt.Print(core.FormatActions(acts), tree.Render())

	step("request B arrives: match its prompt")
	m, err := tree.Match(nil, core.Namespace{}, reqB)
	check(err)
	fmt.Printf("cached prefix: %d tokens, slots %v (the tree split A's node at the shared prefix)\n", m.DeviceLen, m.Indices)
	rcpt, err := tree.Lock(m.LastDevice, 0)
	check(err)
	fmt.Printf("locked %v: %d tokens protected\n", m.LastDevice, rcpt.Delta)

	step("B finishes: insert it; only its new tokens get fresh slots")
	full := append(append([]int32{}, m.Indices...), slots(len(reqB)-m.DeviceLen)...)
	_, acts, err = tree.Insert(core.InsertParams{Tokens: reqB, Slots: full, PrevPrefixLen: m.DeviceLen})
	check(err)
	check(tree.Unlock(m.LastDevice, rcpt, false))
	fmt.Print(core.FormatActions(acts), tree.Render())

	step("memory pressure: evict at least 4 tokens (least recently used leaf first)")
	acts, freed, err := tree.Evict(core.Full, 4, nil)
	check(err)
	fmt.Printf("freed %d tokens\n", freed)
	fmt.Print(core.FormatActions(acts), tree.Render())

	step("sanity check")
	check(tree.SanityCheck())
	fmt.Println("all invariants hold")
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
