//go:build cgo && linux

package cuda_test

import (
	"fmt"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/cuda"
	"github.com/radixkv/radixkv/host/native"
)

// Example backs two pages of KV up from the device to pinned host memory
// as one batch and waits for its event. It runs on the fake driver; with a
// GPU, cuda.Load() instead of cuda.LoadFake gives the same calls on the
// device.
func Example() {
	drv, err := cuda.LoadFake(cuda.FakeConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dev, _ := drv.Open(0)
	defer dev.Close()
	g, _ := cuda.Preset("tiny") // 2 layers × 1 KV head × 16 × bf16: 128 bytes a token
	ps, err := cuda.NewPools(dev, cuda.PoolsConfig{Geometry: g, Tokens: 64, HostTokens: 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ps.Close()

	kv, host := ps.Pool(core.Full, native.Device), ps.Pool(core.Full, native.Host)
	src, _ := kv.Alloc(nil, 32) // two pages of 16 tokens
	dst, _ := host.Alloc(nil, 32)
	_ = kv.Write(src[17], []byte("token 17's KV"))

	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, src, dst)
	done, err := ps.Start(&b)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := done.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	got := make([]byte, 13)
	_ = host.Read(dst[17], got)
	st := ps.Stats()
	fmt.Printf("%q\n%d bytes device to host in %d copy\n", got, st.BytesD2H, st.Copies)
	// Output:
	// "token 17's KV"
	// 4096 bytes device to host in 1 copy
}
