package native

import (
	"errors"
	"testing"

	"github.com/radixkv/radixkv/core"
)

func TestBatch_Validate(t *testing.T) {
	var b Batch
	b.Add(core.Full, Device, Host, []int32{1, 2}, []int32{5, 6})
	b.Add(core.Mamba, Device, Device, []int32{0}, []int32{3})
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.Slots() != 3 {
		t.Fatalf("slots %d, want 3", b.Slots())
	}
	bad := []Batch{
		{Segments: []Segment{{Component: core.Full, From: Device, To: Host, Src: []int32{1}, Dst: []int32{1, 2}}}},
		{Segments: []Segment{{Component: core.Full, From: Device, To: Host, Src: []int32{1, 2}, Dst: []int32{4, 4}}}},
		{Segments: []Segment{{Component: core.Full, From: Device, To: Host, Src: []int32{1}, Dst: []int32{4}},
			{Component: core.Full, From: Device, To: Host, Src: []int32{2}, Dst: []int32{4}}}},
		{Segments: []Segment{{Component: core.Mamba, From: Device, To: Device, Src: []int32{1}, Dst: []int32{1}}}},
		{Segments: []Segment{{Component: core.Full, From: Device, To: Host, Src: []int32{-1}, Dst: []int32{4}}}},
		{Segments: []Segment{{Component: core.Full, From: Device, To: 7, Src: []int32{1}, Dst: []int32{4}}}},
	}
	for k := range bad {
		if err := bad[k].Validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("batch %d: %v, want ErrInvalidArgument", k, err)
		}
	}
	b.Reset()
	if len(b.Segments) != 0 {
		t.Fatal("Reset kept segments")
	}
}

// copyPools is a Pools whose host pool hides the span fast path, so
// CopyBatch goes through Read and Write.
type readWriteOnly struct{ Pool }

func TestCopyBatch(t *testing.T) {
	dev, _ := NewMemPool(8, 4)
	host, _ := NewMemPool(8, 4)
	for _, hp := range []Pool{host, readWriteOnly{host}} {
		ps := NewPoolSet(dev)
		if err := ps.Set(core.Full, Host, hp); err != nil {
			t.Fatal(err)
		}
		src, _ := dev.Alloc(nil, 2)
		dst, _ := host.Alloc(nil, 2)
		_ = dev.Write(src[0], []byte{1, 2, 3, 4})
		_ = dev.Write(src[1], []byte{5, 6, 7, 8})
		var b Batch
		b.Add(core.Full, Device, Host, src, dst)
		c, err := transportOf(ps).Start(&b)
		if err != nil || !c.Done() || c.Wait() != nil {
			t.Fatal(err, c.Wait())
		}
		got := make([]byte, 4)
		_ = host.Read(dst[1], got)
		if string(got) != string([]byte{5, 6, 7, 8}) {
			t.Fatalf("copied %v", got)
		}
		// A freed destination fails the batch with ErrTransfer.
		_ = host.Free(dst[1:])
		c, _ = transportOf(ps).Start(&b)
		if err := c.Wait(); !errors.Is(err, ErrTransfer) || !errors.Is(err, ErrSlotNotAllocated) {
			t.Fatalf("copy into a free slot: %v", err)
		}
		_ = host.Free(dst[:1])
		_ = dev.Free(src)
	}
	// No host pool: ErrNoPool.
	var b Batch
	b.Add(core.Full, Device, Host, []int32{0}, []int32{0})
	if _, err := CopyBatch(NewPoolSet(dev), &b, nil); !errors.Is(err, ErrNoPool) {
		t.Fatal(err)
	}
}
