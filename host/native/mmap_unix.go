//go:build unix

package native

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func mapAnon(size int) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("%w: mapping %d bytes of anonymous memory: %v", ErrMmapUnavailable, size, err)
	}
	return mem, nil
}

func unmapAnon(mem []byte) error { return unix.Munmap(mem) }
