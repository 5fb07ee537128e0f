package snapshot

// FNV-1a 64-bit constants. The hash folds whole 32-bit tokens (not bytes),
// so it is "FNV-shaped" rather than byte-wise FNV-1a; it must stay
// bit-identical to the reference module's prefix hash because tier keys
// (blob names) and cross-process caches are keyed by it.
const (
	fnvBasis = 0xcbf29ce484222325
	fnvPrime = 0x100000001b3
)

// Hash returns the prefix hash of tokens under adapter: start from the FNV
// basis; when adapter is not 0, fold it in first (xor, multiply); then per
// token xor the whole token and multiply by the FNV prime. Adapter 0 is
// the plain, adapter-free hash, so base-model keys are unchanged by
// adapter support.
//
// The adapter fold is indistinguishable from a leading token: Hash(T, a)
// equals Hash([a]+T, 0) for any a < 2^32. The index therefore stores each
// entry's adapter and length and checks both on lookup (see RATIONALE.md).
func Hash(tokens []uint32, adapter uint64) uint64 {
	h := seed(adapter)
	for _, t := range tokens {
		h = step(h, t)
	}
	return h
}

func seed(adapter uint64) uint64 {
	h := uint64(fnvBasis)
	if adapter != 0 {
		h ^= adapter
		h *= fnvPrime
	}
	return h
}

func step(h uint64, t uint32) uint64 {
	h ^= uint64(t)
	return h * fnvPrime
}

// appendPrefixHashes appends Hash(tokens[:i], adapter) for i = 0..n to dst.
func appendPrefixHashes(dst []uint64, tokens []uint32, n int, adapter uint64) []uint64 {
	h := seed(adapter)
	dst = append(dst, h)
	for _, t := range tokens[:n] {
		h = step(h, t)
		dst = append(dst, h)
	}
	return dst
}
