package events

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// BlockHashes returns the event block ids a radixkv worker (a core.Tree
// with KVEvents and the given hash convention) publishes for the whole
// pages of tokens: SHA-256 chained page by page over the tokens as
// little-endian u32, the first page seeded by the cache salt when salt is
// not empty, each digest turned into an id by conv. A router computes a
// request's block ids with it to look the request up in its index.
// Only single-token atoms (not bigram keys) and namespaces without an
// extra key or adapter are covered; tokens past the last whole page are
// ignored. Errors: ErrInvalidEvent for a page size below 1.
func BlockHashes(dst []int64, conv core.HashConvention, salt string, tokens []uint32, page int) ([]int64, error) {
	if page < 1 {
		return dst, fmt.Errorf("%w: page size %d, want ≥ 1", ErrInvalidEvent, page)
	}
	var prior [32]byte
	hasPrior := false
	if salt != "" {
		prior = sha256.Sum256(append([]byte("sglang-cache-salt-v1\x00"), salt...))
		hasPrior = true
	}
	buf := make([]byte, 0, 32+4*page)
	for off := 0; off+page <= len(tokens); off += page {
		buf = buf[:0]
		if hasPrior {
			buf = append(buf, prior[:]...)
		}
		for _, t := range tokens[off : off+page] {
			buf = binary.LittleEndian.AppendUint32(buf, t)
		}
		prior = sha256.Sum256(buf)
		hasPrior = true
		if conv == core.HashVLLM {
			dst = append(dst, int64(binary.BigEndian.Uint64(prior[24:])))
		} else {
			dst = append(dst, int64(binary.BigEndian.Uint64(prior[:8])))
		}
	}
	return dst, nil
}
