package pooltest

import (
	"fmt"
	"math/rand/v2"
	"runtime"

	native "github.com/radixkv/radixkv/host/native"
)

func runtimeYield() { runtime.Gosched() }

// Rates are per-call failure probabilities of a FaultPool, one per
// method; the zero value injects nothing.
type Rates struct {
	Alloc, Free, Read, Write, Copy float64
}

// FaultCounts counts the faults a FaultPool injected, per method.
type FaultCounts struct {
	Alloc, Free, Read, Write, Copy uint64
}

// FaultPool wraps a native.Pool and fails its calls at the given rates,
// as the Pool contract allows: a failed call changes nothing (Alloc takes
// no slot, Free frees none, Write writes nothing). Faults are drawn from
// a seeded generator, so a run is reproducible. Off disables injection
// (e.g. for the Audit after a step).
type FaultPool struct {
	native.Pool
	Rates  Rates
	Off    bool
	Counts FaultCounts
	rng    *rand.Rand
}

// NewFaultPool wraps p.
func NewFaultPool(p native.Pool, rates Rates, seed uint64) *FaultPool {
	return &FaultPool{Pool: p, Rates: rates, rng: rand.New(rand.NewPCG(seed, seed+1))}
}

func (f *FaultPool) hit(rate float64, n *uint64, what string) error {
	if f.Off || rate <= 0 || f.rng.Float64() >= rate {
		return nil
	}
	*n++
	return fmt.Errorf("%w: %s", ErrInjected, what)
}

func (f *FaultPool) Alloc(dst []int32, n int) ([]int32, error) {
	if err := f.hit(f.Rates.Alloc, &f.Counts.Alloc, "alloc"); err != nil {
		return dst, err
	}
	return f.Pool.Alloc(dst, n)
}

func (f *FaultPool) Free(slots []int32) error {
	if err := f.hit(f.Rates.Free, &f.Counts.Free, "free"); err != nil {
		return err
	}
	return f.Pool.Free(slots)
}

func (f *FaultPool) Read(slot int32, dst []byte) error {
	if err := f.hit(f.Rates.Read, &f.Counts.Read, "read"); err != nil {
		return err
	}
	return f.Pool.Read(slot, dst)
}

func (f *FaultPool) Write(slot int32, data []byte) error {
	if err := f.hit(f.Rates.Write, &f.Counts.Write, "write"); err != nil {
		return err
	}
	return f.Pool.Write(slot, data)
}

func (f *FaultPool) Copy(dst, src int32) error {
	if err := f.hit(f.Rates.Copy, &f.Counts.Copy, "copy"); err != nil {
		return err
	}
	return f.Pool.Copy(dst, src)
}

var _ native.Pool = (*FaultPool)(nil)

// Allocated implements native.SlotLister when the wrapped pool does; it
// injects no fault.
func (f *FaultPool) Allocated(dst []int32) ([]int32, error) {
	l, ok := f.Pool.(native.SlotLister)
	if !ok {
		return dst, fmt.Errorf("%w: the wrapped %T cannot list its slots", native.ErrInvalidArgument, f.Pool)
	}
	return l.Allocated(dst)
}
