package core

import (
	"math"
	"testing"
)

// TestLHD_Buckets: buckets are monotone in age, the first sub ages have
// one each, and every bucket holds exactly width(b) ages.
func TestLHD_Buckets(t *testing.T) {
	var s lhdState
	s.init()
	count := map[int]int{}
	prev := 0
	for age := int64(0); age < 1<<14; age++ {
		b := s.bucket(age)
		if b < prev || b > prev+1 {
			t.Fatalf("age %d: bucket %d after %d", age, b, prev)
		}
		if age < int64(s.sub) && b != int(age) {
			t.Fatalf("age %d: bucket %d", age, b)
		}
		count[b]++
		prev = b
	}
	for b := 0; b < prev; b++ { // the last one is cut off by the loop
		if float64(count[b]) != s.width(b) {
			t.Fatalf("bucket %d holds %d ages, width says %v", b, count[b], s.width(b))
		}
	}
	if b := s.bucket(math.MaxInt64); b != s.buckets()-1 {
		t.Fatalf("the oldest age is in bucket %d of %d", b, s.buckets())
	}
	if s.bucket(-5) != 0 {
		t.Fatal("a negative age is not bucket 0")
	}
}

// TestLHD_Refit checks densities against a hand computation: all of class
// 0's lifetimes end with a hit at age 10 (bucket 6 of width 2, which
// starts at age 10); class 1's half end with a hit at age 10 and half are
// censored at 10, so it has half the density.
func TestLHD_Refit(t *testing.T) {
	var s lhdState
	s.init()
	b := s.bucket(10)
	if lo := int64(10); s.bucket(lo-1) == b {
		t.Fatalf("bucket %d does not start at age 10", b)
	}
	s.hits[b] = 100
	s.hits[s.buckets()+b] = 50
	s.ends[s.buckets()+b] = 50
	s.refit()
	dens := func(c, age int) float64 {
		return math.Float64frombits(uint64(s.dens[c*s.buckets()+s.bucket(int64(age))]))
	}
	// At age 0: 100 hits over 100 lifetimes of 10 ticks to bucket 6 plus
	// half its width: 100 / (100·11) = 1/11, rounded down to 2 mantissa bits.
	want := math.Float64frombits(math.Float64bits(1.0/11) >> 50 << 50)
	if got := dens(0, 0); got != want {
		t.Fatalf("class 0 density at age 0: %v, want %v", got, want)
	}
	if got := dens(1, 0); got != math.Float64frombits(math.Float64bits(want/2)>>50<<50) {
		t.Fatalf("class 1 density at age 0: %v, want half of %v", got, want)
	}
	if got := dens(0, 12); got != 0 {
		t.Fatalf("density past every lifetime: %v, want 0", got)
	}
	s.decay()
	if s.hits[b] != 100-100>>lhdDecay {
		t.Fatalf("decay left %d", s.hits[b])
	}
}
