package pooltest

import (
	"errors"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/core"
	native "github.com/radixkv/radixkv/host/native"
)

func twoTier(t *testing.T) native.Pools {
	dev, err := native.NewMemPool(16, 8)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := native.NewMemPool(16, 8)
	ps := native.NewPoolSet(dev)
	_ = ps.Set(core.Full, native.Host, host)
	return ps
}

func TestTransport_DelayedCopyLandsAtCompletion(t *testing.T) {
	tr := New(twoTier(t), Config{Seed: 1, MaxDelay: 3})
	dev, host := tr.Pool(core.Full, native.Device), tr.Pool(core.Full, native.Host)
	src, _ := dev.Alloc(nil, 2)
	dst, _ := host.Alloc(nil, 2)
	_ = dev.Write(src[0], []byte("abcdefgh"))
	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, src, dst)
	c, err := tr.Start(&b)
	if err != nil {
		t.Fatal(err)
	}
	polls := 0
	for !c.Done() {
		polls++
	}
	if polls > 3 || c.Wait() != nil || tr.InFlight() != 0 {
		t.Fatalf("polls %d, err %v, in flight %d", polls, c.Wait(), tr.InFlight())
	}
	got := make([]byte, 8)
	_ = host.Read(dst[0], got)
	if string(got) != "abcdefgh" {
		t.Fatalf("host holds %q", got)
	}
	if v := tr.Violations(); v != nil {
		t.Fatal(v)
	}
}

func TestTransport_ViolationsAndFailures(t *testing.T) {
	tr := New(twoTier(t), Config{Seed: 2, MaxDelay: 100, FailRate: 1})
	dev, host := tr.Pool(core.Full, native.Device), tr.Pool(core.Full, native.Host)
	src, _ := dev.Alloc(nil, 2)
	dst, _ := host.Alloc(nil, 2)
	var b native.Batch
	b.Add(core.Full, native.Device, native.Host, src, dst)
	c, _ := tr.Start(&b)
	buf := make([]byte, 8)
	_ = dev.Read(src[0], buf) // reading a source is allowed
	if v := tr.Violations(); v != nil {
		t.Fatal(v)
	}
	_ = host.Write(dst[1], buf) // writing a destination is not
	_ = dev.Free(src[:1])       // nor freeing a source
	v := tr.Violations()
	if len(v) != 2 || !strings.Contains(v[0], "written") || !strings.Contains(v[1], "freed") {
		t.Fatalf("violations %q", v)
	}
	if err := c.Wait(); !errors.Is(err, ErrInjected) {
		t.Fatalf("failing batch: %v", err)
	}
	if s := tr.Stats(); s.Failed != 1 || s.Started != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestTransport_Async(t *testing.T) {
	tr := New(twoTier(t), Config{Seed: 3, Async: true})
	dev, host := tr.Pool(core.Full, native.Device), tr.Pool(core.Full, native.Host)
	src, _ := dev.Alloc(nil, 4)
	dst, _ := host.Alloc(nil, 4)
	var cs []native.Completion
	for k := range src {
		var b native.Batch
		b.Add(core.Full, native.Device, native.Host, src[k:k+1], dst[k:k+1])
		c, err := tr.Start(&b)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		if err := c.Wait(); err != nil || !c.Done() {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFaultPool(t *testing.T) {
	p, _ := native.NewMemPool(8, 8)
	f := NewFaultPool(p, Rates{Alloc: 1}, 1)
	if _, err := f.Alloc(nil, 2); !errors.Is(err, ErrInjected) || p.Available() != 8 {
		t.Fatalf("alloc: %v, %d free", err, p.Available())
	}
	f.Off = true
	s, err := f.Alloc(nil, 2)
	if err != nil || f.Counts.Alloc != 1 {
		t.Fatal(err, f.Counts)
	}
	f.Off, f.Rates = false, Rates{Free: 1}
	if err := f.Free(s); !errors.Is(err, ErrInjected) || p.Available() != 6 {
		t.Fatalf("free: %v, %d free", err, p.Available())
	}
}
