package core

// Namespace partitions the tree at the root: nothing inserted under one
// namespace ever matches a request of another. The zero value is the
// default namespace. An empty field counts as absent.
type Namespace struct {
	// ExtraKey is an arbitrary caller partition key (SGLang's extra_key).
	ExtraKey string
	// CacheSalt isolates tenants that must not share cached prefixes.
	CacheSalt string
	// LoRA is the adapter id whose weights produced the KV.
	LoRA string
}

// IsDefault reports whether all fields are empty.
func (ns Namespace) IsDefault() bool { return ns == Namespace{} }

// nsLookup returns the interned id of ns without creating one; ok is false
// when the namespace was never inserted (so nothing can match).
func (t *Tree) nsLookup(ns Namespace) (uint32, bool) {
	if ns.IsDefault() {
		return 0, true
	}
	id, ok := t.nsIDs[ns]
	return id, ok
}

// nsIntern returns the id of ns, creating it on first use. Ids are handed
// out in first-use order, so they are deterministic for a given command
// stream.
func (t *Tree) nsIntern(ns Namespace) uint32 {
	if id, ok := t.nsLookup(ns); ok {
		return id
	}
	id := uint32(len(t.nsList))
	t.nsIDs[ns] = id
	t.nsList = append(t.nsList, ns)
	return id
}
