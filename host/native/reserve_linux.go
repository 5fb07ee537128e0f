//go:build linux

package native

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// reserveAnon maps size bytes of address space without committing memory:
// pages are backed only when first touched.
func reserveAnon(size uint64) ([]byte, error) {
	if size == 0 || size > math.MaxInt {
		return nil, fmt.Errorf("%w: cannot reserve %d bytes", ErrMmapUnavailable, size)
	}
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("%w: reserving %d bytes: %v", ErrMmapUnavailable, size, err)
	}
	return mem, nil
}
