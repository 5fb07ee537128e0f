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
func (ns Namespace) IsDefault() bool { return ns.isDefault() }

// isDefault compares lengths: a comparison with Namespace{} is a call of
// the struct's generated equality function.
func (ns *Namespace) isDefault() bool {
	return len(ns.ExtraKey)|len(ns.CacheSalt)|len(ns.LoRA) == 0
}

// nsLookup returns the interned id of ns without creating one; ok is false
// when the namespace was never inserted (so nothing can match). It takes
// a pointer and is small enough to inline, so the default namespace costs
// neither a copy of the struct nor a call.
func (t *Tree) nsLookup(ns *Namespace) (uint32, bool) {
	if ns.isDefault() {
		return 0, true
	}
	return t.nsFind(ns)
}

// nsFind looks up a non-default namespace: first the one found last (a
// tenant's requests tend to come in runs; comparing strings is cheaper
// than hashing them), then the map.
func (t *Tree) nsFind(ns *Namespace) (uint32, bool) {
	if m := t.nsMemo; m != 0 && t.nsList[m] == *ns {
		return m, true
	}
	id, ok := t.nsIDs[*ns]
	if ok {
		t.nsMemo = id
	}
	return id, ok
}

// nsIntern returns the id of ns, creating it on first use. Ids are handed
// out in first-use order, so they are deterministic for a given command
// stream.
func (t *Tree) nsIntern(ns *Namespace) uint32 {
	if id, ok := t.nsLookup(ns); ok {
		return id
	}
	id := uint32(len(t.nsList))
	t.nsIDs[*ns] = id
	t.nsList = append(t.nsList, *ns)
	t.nsMemo = id
	return id
}
