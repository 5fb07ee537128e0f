package blockcache_test

import (
	"fmt"

	"github.com/radixkv/radixkv/core/blockcache"
)

func Example() {
	c, _ := blockcache.New(blockcache.Config{BlockSize: 4})
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

	m, _ := c.Lookup(prompt, 0, 0) // cold: nothing cached
	fmt.Println("matched", m.MatchedTokens)
	// The engine prefilled into blocks 7, 8 and 9 (the last one partial).
	acq, _ := c.Insert(prompt, []uint32{7, 8, 9}, nil, m.MatchedTokens, 0)
	fmt.Println("adopted", acq.Blocks)
	_ = c.Release(prompt, 0) // the sequence finished

	m, _ = c.Lookup(append(prompt[:8:8], 42), 0, 0)
	fmt.Println("matched", m.MatchedTokens, "blocks", m.Blocks)
	_ = c.ReleaseMatched(prompt, m.MatchedTokens, 0)

	ev := c.Evict(2)
	fmt.Println("evicted", ev.Blocks)
	// Output:
	// matched 0
	// adopted [7 8 9]
	// matched 8 blocks [7 8]
	// evicted [8 9]
}
