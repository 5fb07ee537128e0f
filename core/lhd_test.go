package core_test

import (
	"testing"

	"github.com/radixkv/radixkv/core"
)

// TestLHD_LearnsLongReuse: returners that come back after more distinct
// leaves than the cache holds (a scan of one-off leaves in between) never
// hit under lru; lhd learns from their ghosts that they return while the
// one-offs do not, and keeps them.
func TestLHD_LearnsLongReuse(t *testing.T) {
	const (
		page     = 4
		returner = 8  // returning leaves, one asked for per round
		oneOffs  = 2  // new one-off leaves per round
		capLeafs = 10 // cache capacity in leaves: less than a reuse distance (24 leaves)
		rounds   = 400
	)
	hits := map[string]int{}
	for _, pol := range []string{"lru", "lhd"} {
		tr, err := core.New(core.Config{PageSize: page, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		free := make([]int32, 0, 4*capLeafs+4*page)
		for s := range int32(cap(free)) {
			free = append(free, s)
		}
		put := func(key []uint32) {
			t.Helper()
			for len(free) < page {
				acts, _, err := tr.Evict(core.Full, page, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range acts {
					free = append(free, a.Slots...)
				}
			}
			slots := free[len(free)-page:]
			free = free[:len(free)-page]
			_, acts, err := tr.Insert(core.InsertParams{Tokens: key, Slots: slots})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range acts {
				if a.Kind == core.ActionFreeDeviceKV {
					free = append(free, a.Slots...)
				}
			}
		}
		next := uint32(1 << 20)
		for r := range rounds {
			p := uint32(r%returner) * page
			key := []uint32{p + 1, p + 2, p + 3, p + 4}
			m, err := tr.Match(nil, core.Namespace{}, key)
			if err != nil {
				t.Fatal(err)
			}
			if m.DeviceLen == page {
				if r >= rounds/2 {
					hits[pol]++
				}
			} else {
				put(key)
			}
			for range oneOffs {
				put([]uint32{next, next + 1, next + 2, next + 3})
				next += page
			}
			// Keep capLeafs leaves at most.
			for tr.Evictable(core.Full) > capLeafs*page {
				acts, _, err := tr.Evict(core.Full, page, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range acts {
					free = append(free, a.Slots...)
				}
			}
		}
		if err := tr.SanityCheck(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("returner hits in the second half: %v", hits)
	if hits["lru"] != 0 {
		t.Errorf("lru hit %d returners; the test expects none (reuse beyond its reach)", hits["lru"])
	}
	if want := rounds / 2 * 8 / 10; hits["lhd"] < want {
		t.Errorf("lhd hit %d of %d returners in the second half; want at least %d", hits["lhd"], rounds/2, want)
	}
}
