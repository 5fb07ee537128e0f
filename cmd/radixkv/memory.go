package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/host/native"
)

// poolBytesPerSlot is what a pool costs per slot besides the slot's
// bytes: a 4-byte free-list entry and a bit of the in-use map.
const poolBytesPerSlot = 4 + 1.0/8

// pool is one pool replay would create.
type poolPlan struct {
	name     string
	flag     string
	capacity int
}

// pools lists the pools replay creates for s (after resolveCapacity).
func (s *settings) poolPlans() []poolPlan {
	out := []poolPlan{{"device KV", s.capFlag(), s.capacity}}
	if s.has(core.SWA) {
		out = append(out, poolPlan{"device SWA", "--swa-capacity", s.swaCapacity})
	}
	if s.has(core.Mamba) {
		out = append(out, poolPlan{"device Mamba", "--mamba-capacity", s.mambaCapacity})
	}
	if s.hostCapacity > 0 {
		comps, _, _ := s.componentSet()
		for _, c := range comps {
			out = append(out, poolPlan{"host " + c.String(), "--host-capacity", s.hostPoolCapacity(c)})
		}
	}
	return out
}

// memoryNeed is the bytes the pools of s take, and the biggest pool.
func (s *settings) memoryNeed() (float64, poolPlan) {
	slotBytes := 0
	if s.canary {
		slotBytes = native.CanaryBytes
	}
	var total, most float64
	var big poolPlan
	for _, p := range s.poolPlans() {
		b := float64(p.capacity) * (poolBytesPerSlot + float64(slotBytes))
		total += b
		if b > most {
			most, big = b, p
		}
	}
	return total, big
}

// checkMemory refuses, before any pool is allocated, settings whose pools
// would not fit in the memory this machine has available, naming what
// they would need and the flags to change.
func (s *settings) checkMemory() error {
	need, big := s.memoryNeed()
	avail, ok := availableMemory()
	if !ok || need <= float64(avail) {
		return nil
	}
	hint := ""
	if s.canary {
		hint = fmt.Sprintf(" or --canary=false (%d bytes a slot less)", native.CanaryBytes)
	}
	return fmt.Errorf("the pools need about %s of memory (the largest, the %s pool of %d slots, is set by %s) but this machine has %s available; lower %s%s",
		bytesText(need), big.name, big.capacity, big.flag, bytesText(float64(avail)), big.flag, hint)
}

// availableMemory is MemAvailable from /proc/meminfo (Linux); ok is false
// where the system does not say. Tests replace it.
var availableMemory = procMemAvailable

func procMemAvailable() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "MemAvailable" {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// bytesText renders a byte count in binary units.
func bytesText(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
