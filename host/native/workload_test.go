package native

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/radixkv/radixkv/core"
	"github.com/stretchr/testify/require"
)

// workloadGen draws prompts that share prefixes: a few base documents per
// namespace, cut at random lengths, plus short random suffixes over a
// small alphabet (so partial overlaps and splits are frequent).
type workloadGen struct {
	rng  *rand.Rand
	nss  []core.Namespace
	docs [][]uint32
}

func newWorkloadGen(seed uint64) *workloadGen {
	g := &workloadGen{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	g.nss = []core.Namespace{{}, {CacheSalt: "tenant-a"}, {ExtraKey: "x", LoRA: "adapter"}}
	for range 6 {
		d := make([]uint32, 8+g.rng.IntN(33))
		for i := range d {
			d[i] = uint32(g.rng.IntN(4))
		}
		g.docs = append(g.docs, d)
	}
	return g
}

func (g *workloadGen) prompt() (core.Namespace, []uint32) {
	d := g.docs[g.rng.IntN(len(g.docs))]
	p := append([]uint32(nil), d[:g.rng.IntN(len(d)+1)]...)
	for range g.rng.IntN(13) {
		p = append(p, uint32(g.rng.IntN(6)))
	}
	return g.nss[g.rng.IntN(len(g.nss))], p
}

func (g *workloadGen) tokens(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(g.rng.IntN(6))
	}
	return out
}

// tolerate turns an out-of-slots error into an abort of r.
func tolerate(t testing.TB, c *Controller, r *Request, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	require.ErrorIs(t, err, ErrPoolExhausted)
	require.NoError(t, c.Abort(r))
	return false
}

func TestController_RandomWorkload(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		policies := core.PolicyNames()
		for seed := uint64(1); seed <= 8; seed++ {
			page := []int{1, 2, 4}[seed%3]
			policy := policies[int(seed)%len(policies)]
			t.Run(fmt.Sprintf("seed=%d/page=%d/%s", seed, page, policy), func(t *testing.T) {
				const capacity = 96
				c, kv := newCtlOn(t, newEngine, capacity, core.Config{PageSize: page, Policy: policy}, canaryOn)
				g := newWorkloadGen(seed)
				rng := g.rng
				var running []*Request
				drop := func(k int) { running = append(running[:k], running[k+1:]...) }

				for step := range 1500 {
					if len(running) == 0 || (len(running) < 6 && rng.IntN(4) == 0) {
						ns, p := g.prompt()
						r, err := c.Arrive(ns, p) // verifies the matched slots
						require.NoError(t, err)
						running = append(running, r)
						continue
					}
					k := rng.IntN(len(running))
					r := running[k]
					switch op := rng.IntN(10); {
					case op < 3: // prefill a chunk
						if r.Pending() == 0 {
							if !tolerate(t, c, r, c.Extend(r, g.tokens(1+rng.IntN(3))...)) {
								drop(k)
							}
							continue
						}
						if !tolerate(t, c, r, c.Prefill(r, 1+rng.IntN(r.Pending()))) {
							drop(k)
						}
					case op < 5: // cache what is computed so far
						require.NoError(t, c.FinishChunk(r, rng.IntN(r.Computed()+1)))
					case op < 6:
						require.NoError(t, c.Verify(r))
					case op < 7:
						require.NoError(t, c.Abort(r))
						drop(k)
					default: // finish, computing the rest first
						if !tolerate(t, c, r, c.Prefill(r, r.Pending())) {
							drop(k)
							continue
						}
						require.NoError(t, c.Finish(r))
						drop(k)
					}
					if step%50 == 0 {
						require.NoError(t, c.Audit())
					}
				}
				for _, r := range running {
					require.NoError(t, c.Finish(r))
				}
				require.NoError(t, c.Audit())
				ev, pr := sizes(t, c)
				require.Zero(t, pr, "no locks remain")
				require.Equal(t, capacity, kv.Available()+ev)

				// Every cached prefix still reads back as its own data.
				requireDocsReadBack(t, c, g)
				st := c.Stats()
				require.Zero(t, st.CanaryMismatches)
				require.NotZero(t, st.EvictedNodes, "capacity is small enough to force evictions")
				require.NotZero(t, st.MatchedTokens)
				require.NotZero(t, st.ChunkFinishes)
			})
		}
	})
}

func TestController_Hammer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, newEngine engineCtor) {
		const (
			workers  = 8
			requests = 150
			capacity = 384
		)
		c, kv := newCtlOn(t, newEngine, capacity, core.Config{PageSize: 2}, canaryOn)
		hammer(t, c, workers, requests, 100, func() { _ = c.Stats() })
		require.NoError(t, c.Audit())
		ev, pr := sizes(t, c)
		require.Zero(t, pr)
		require.Equal(t, capacity, kv.Available()+ev)
		st := c.Stats()
		require.Zero(t, st.CanaryMismatches)
		require.EqualValues(t, workers*requests, st.Requests)
		require.EqualValues(t, workers*requests, st.Finished+st.Aborted)
	})
}

// requireDocsReadBack requires that every base document, in every
// namespace, matches what is cached and reads back as its own data: the
// end check the random workloads share.
func requireDocsReadBack(t *testing.T, c *Controller, g *workloadGen) {
	t.Helper()
	for _, d := range g.docs {
		for _, ns := range g.nss {
			got, err := c.Match(nil, ns, d)
			require.NoError(t, err)
			require.NoError(t, c.VerifyMatch(ns, d, got))
		}
	}
}

// churnStep applies one random operation (a prefill chunk or decode, a
// chunk finish, a verify, an abort, a finish) to the running request r,
// as the host-tier and hybrid random workloads both do; an exhausted pool
// aborts r. It reports whether r is no longer running.
func churnStep(t *testing.T, c *Controller, g *workloadGen, r *Request) (gone bool) {
	t.Helper()
	rng := g.rng
	switch op := rng.IntN(12); {
	case op < 5: // prefill a chunk, or decode
		var err error
		if r.Pending() == 0 {
			err = c.Extend(r, g.tokens(1+rng.IntN(4))...)
		} else {
			err = c.Prefill(r, 1+rng.IntN(r.Pending()))
		}
		return !tolerate(t, c, r, err)
	case op < 7:
		err := c.FinishChunk(r, max(0, r.Computed()-rng.IntN(2)))
		return err != nil && !errorIsChunkWindow(err) && !tolerate(t, c, r, err)
	case op < 8:
		require.NoError(t, c.Verify(r))
		return false
	case op < 9:
		require.NoError(t, c.Abort(r))
		return true
	default:
		if !tolerate(t, c, r, c.Prefill(r, r.Pending())) {
			return true
		}
		require.NoError(t, c.Verify(r))
		require.NoError(t, c.Finish(r))
		return true
	}
}

// hammer runs workers goroutines of hammerWorker (seeded seed+w) on c
// while another audits in a loop, calling probe between audits, and
// requires that no call failed: the hammer tests of both tiers share it.
func hammer(t *testing.T, c *Controller, workers, requests int, seed uint64, probe func()) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, workers+1)
	stop := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- hammerWorker(c, newWorkloadGen(seed+uint64(w)), requests)
		}()
	}
	var auditor sync.WaitGroup
	auditor.Add(1)
	go func() { // audits interleave with the workers' calls
		defer auditor.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := c.Audit(); err != nil {
				errc <- err
				return
			}
			probe()
		}
	}()
	wg.Wait()
	close(stop)
	auditor.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
}

func hammerWorker(c *Controller, g *workloadGen, n int) error {
	for range n {
		ns, p := g.prompt()
		r, err := c.Arrive(ns, p)
		if err != nil {
			return err
		}
		if err := hammerOne(c, g, r); err != nil {
			if errors.Is(err, ErrPoolExhausted) {
				if err := c.Abort(r); err != nil {
					return err
				}
				continue
			}
			return err
		}
	}
	return nil
}

func hammerOne(c *Controller, g *workloadGen, r *Request) error {
	if r.Pending() > 1 && g.rng.IntN(2) == 0 {
		half := r.Pending() / 2
		if err := c.Prefill(r, half); err != nil {
			return err
		}
		if err := c.FinishChunk(r, r.Computed()); err != nil {
			return err
		}
	}
	if err := c.Prefill(r, r.Pending()); err != nil {
		return err
	}
	if err := c.Extend(r, g.tokens(g.rng.IntN(4))...); err != nil {
		return err
	}
	if err := c.Verify(r); err != nil {
		return err
	}
	if g.rng.IntN(8) == 0 {
		return c.Abort(r)
	}
	return c.Finish(r)
}
