//go:build !unix

package native

import (
	"fmt"
	"runtime"
)

func mapAnon(size int) ([]byte, error) {
	return nil, fmt.Errorf("%w: %s/%s has no mmap (wanted %d bytes)", ErrMmapUnavailable, runtime.GOOS, runtime.GOARCH, size)
}

func unmapAnon([]byte) error { return nil }
