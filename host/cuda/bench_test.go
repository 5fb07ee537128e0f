//go:build cgo && linux

package cuda

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
)

// benchDevice is the real device 0, or the fake with
// RADIXKV_CUDA_BENCH_FAKE=1 (to check the benchmark itself; its numbers
// are host memcpy speeds, not GPU figures).
func benchDevice(b *testing.B) (*Device, bool) {
	if os.Getenv("RADIXKV_CUDA_BENCH_FAKE") != "" {
		return fakeDevice(b, FakeConfig{}), true
	}
	return realDevice(b), false
}

// BenchmarkTransfer measures backups (d2h) and load-backs (h2d) of a page
// list through Pools.Start, for pages of 16, 64 and 256 tokens at 128 KiB
// (8B-class) and 320 KiB (70B-class) per token, contiguous and scattered
// page lists, with memcpy and with the kernel, and in the same run one
// contiguous cuMemcpyAsync of the same bytes between the same pinned and
// device memory. Metrics: GB/s of the batch, GB/s of the single copy, and
// the batch as a percentage of it (the target is ≥ 90%).
func BenchmarkTransfer(b *testing.B) {
	dev, fake := benchDevice(b)
	batchBytes := 512 << 20
	if fake {
		batchBytes = 4 << 20
	}
	for _, kib := range []int{128, 320} {
		for _, page := range []int{16, 64, 256} {
			// 8 KV heads × 128 × bf16 rows; layers give the KiB per token.
			g := Geometry{Layers: kib / 4, KVHeads: 8, HeadDim: 128, DTypeBytes: 2, PageSize: page}
			if fake {
				g = Geometry{Layers: kib / 32, KVHeads: 1, HeadDim: 64, DTypeBytes: 2, PageSize: page} // 1/64 scale
			}
			pages := max(4, batchBytes/g.PageBytes())
			ps, err := NewPools(dev, PoolsConfig{Geometry: g, Tokens: 2 * pages * page, HostTokens: pages * page, Timing: true})
			if err != nil {
				b.Fatalf("pools for %s: %v", g, err)
			}
			d, _ := ps.Pool(core.Full, native.Device).Alloc(nil, 2*pages*page)
			h, _ := ps.Pool(core.Full, native.Host).Alloc(nil, pages*page)
			lists := map[string][]int32{
				"contiguous": d[:pages*page],
				"scattered":  scatteredPages(d, page, pages),
			}
			for _, dir := range []string{"d2h", "h2d"} {
				for _, list := range []string{"contiguous", "scattered"} {
					for _, mode := range []CopyMode{CopyMemcpy, CopyKernel} {
						if list == "contiguous" && mode == CopyKernel {
							continue // contiguous pages are one copy either way
						}
						name := fmt.Sprintf("%s/page=%d/kib=%d/%s/%s", dir, page, kib, list, mode)
						b.Run(name, func(b *testing.B) {
							ps.mode = mode
							var batch native.Batch
							if dir == "d2h" {
								batch.Add(core.Full, native.Device, native.Host, lists[list], h)
							} else {
								batch.Add(core.Full, native.Host, native.Device, h, lists[list])
							}
							n := pages * g.PageBytes()
							b.SetBytes(int64(n))
							start := ps.Stats().DeviceTime
							for b.Loop() {
								c, err := ps.Start(&batch)
								if err != nil {
									b.Fatal(err)
								}
								if err := c.Wait(); err != nil {
									b.Fatal(err)
								}
							}
							dt := ps.Stats().DeviceTime - start
							wall := b.Elapsed()
							batchGBps := GBps(uint64(n)*uint64(b.N), wall)
							contig := contiguousGBps(b, ps, dir, n, b.N)
							b.ReportMetric(batchGBps, "GB/s")
							b.ReportMetric(contig, "contig-GB/s")
							if contig > 0 {
								b.ReportMetric(100*batchGBps/contig, "%contig")
							}
							if dt > 0 {
								b.ReportMetric(GBps(uint64(n)*uint64(b.N), dt), "event-GB/s")
							}
						})
					}
				}
			}
			ps.mode = CopyMemcpy
			ps.Pool(core.Full, native.Device).Free(d)
			ps.Pool(core.Full, native.Host).Free(h)
			ps.Close()
		}
	}
}

// scatteredPages picks pages whole pages of d's pool in a shuffled order,
// none adjacent to the one before it.
func scatteredPages(d []int32, page, pages int) []int32 {
	rng := rand.New(rand.NewPCG(uint64(page), uint64(pages)))
	order := rng.Perm(2 * pages)
	out := make([]int32, 0, pages*page)
	prev := -2
	for _, p := range order {
		if len(out) == pages*page {
			break
		}
		if p == prev+1 {
			continue
		}
		prev = p
		out = append(out, d[p*page:(p+1)*page]...)
	}
	for p := 0; len(out) < pages*page; p += 2 { // top up from even pages not taken
		seen := false
		for k := 0; k < len(out); k += page {
			if int(out[k])/page == p {
				seen = true
				break
			}
		}
		if !seen {
			out = append(out, d[p*page:(p+1)*page]...)
		}
	}
	return out
}

// contiguousGBps times n iterations of one plain copy of size bytes between
// the pools' base addresses on the direction's stream.
func contiguousGBps(b *testing.B, ps *Pools, dir string, size, iters int) float64 {
	dp, hp := ps.DevicePool(core.Full), ps.HostPool(core.Full)
	kind, s := kindDtoH, ps.dev.d2h
	op := copyOp(kindDtoH, hp.mem.addr(), dp.mem.ptr, size, 1, size, size)
	if dir == "h2d" {
		kind, s = kindHtoD, ps.dev.h2d
		op = copyOp(kindHtoD, dp.mem.ptr, hp.mem.addr(), size, 1, size, size)
	}
	_ = kind
	iters = max(1, min(iters, 50))
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		if err := s.issue(copyBatch{op}); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	return GBps(uint64(size)*uint64(iters), time.Since(t0))
}
