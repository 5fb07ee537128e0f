//go:build !linux

package native

import "fmt"

// reserveAnon is not available here; guestMemory falls back to doubling.
func reserveAnon(size uint64) ([]byte, error) {
	return nil, fmt.Errorf("%w: address-space reservation is implemented for linux only", ErrMmapUnavailable)
}
