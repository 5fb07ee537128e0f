package core

import "slices"

// policy orders Full eviction candidates: the smallest key goes first,
// ties broken by arena slot so the order is deterministic.
type policy struct {
	name string
	key  func(t *Tree, n *node) (int64, int64)
	// plain names the node fields key reads when it only reads fields
	// (buildHeap reads them without the call); keyFunc otherwise.
	plain plainKey
	// onEvict lets a policy update tree-wide state (gdsf's inflation).
	onEvict func(t *Tree, n *node)
	// onInsert lets a policy look at a new leaf (the adaptive policy's
	// ghost check).
	onInsert func(t *Tree, i int32)
	// trim makes a Full walk free only what it still wants from the end of
	// the chosen leaf (the rest stays cached) instead of the whole leaf; in
	// a Full-only tree (auxiliary values are not split by eviction).
	trim bool
	// trimAge makes a trimmed victim keep the leaf's last access (split
	// stamps it fresh) for onEvict to see its age: lhd needs it; lrfu's
	// smoothed victim age was measured without it and does worse with it
	// (RATIONALE.md).
	trimAge bool
	// decays makes each match fold into a node's decayed frequency (lrfu's
	// crf); other policies skip that work on the match path.
	decays bool
	// counts makes a match count a node's first return at its parent
	// (branch's statistic).
	counts bool
	// onMatch lets a policy see each node a match walks through, before
	// it is restamped (lhd's hit histogram).
	onMatch func(t *Tree, n *node)
}

// plainKey is a key that reads node fields only: (a, b) as named.
type plainKey uint8

const (
	keyFunc       plainKey = iota // call key
	keyLastAccess                 // (lastAccess, 0)
	keyCreation                   // (creation, 0)
	keyHits                       // (hits, lastAccess)
	keyPriority                   // (priority, lastAccess)
)

var policies = []policy{
	{name: "lru", key: func(_ *Tree, n *node) (int64, int64) { return n.lastAccess, 0 }, plain: keyLastAccess},
	{name: "lfu", key: func(_ *Tree, n *node) (int64, int64) { return n.hits, n.lastAccess }, plain: keyHits},
	{name: "fifo", key: func(_ *Tree, n *node) (int64, int64) { return n.creation, 0 }, plain: keyCreation},
	{name: "mru", key: func(_ *Tree, n *node) (int64, int64) { return -n.lastAccess, 0 }},
	{name: "filo", key: func(_ *Tree, n *node) (int64, int64) { return -n.creation, 0 }},
	{name: "priority", key: func(_ *Tree, n *node) (int64, int64) { return n.priority, n.lastAccess }, plain: keyPriority},
	{name: "slru", key: func(_ *Tree, n *node) (int64, int64) {
		if n.hits >= 2 {
			return 1, n.lastAccess
		}
		return 0, n.lastAccess
	}},
	// gdsf is greedy-dual with frequency (LFU with dynamic aging): a node's
	// credit is the inflation level at its last access plus its hit count;
	// evicting raises the inflation to the victim's credit, so old
	// popularity decays instead of pinning a node forever.
	{name: "gdsf", key: func(_ *Tree, n *node) (int64, int64) { return n.credit, n.lastAccess },
		onEvict: func(t *Tree, n *node) { t.inflation = max(t.inflation, n.credit) }},
	// lrfu is decayed frequency with adaptive half-life, ghost history and
	// trimming eviction (adaptive.go).
	{name: "lrfu", key: lrfuKey, onEvict: lrfuEvict, onInsert: lrfuInsert, trim: true, decays: true},
	// admit is lru with learned TinyLFU-style admission: never-reused
	// leaves past a window go first (admit.go).
	{name: "admit", key: admitKey, onEvict: admitEvict, onInsert: admitInsert, trim: true},
	// branch is admit that also keeps the new tails of branches whose
	// tails come back, learned per node (branch.go).
	{name: "branch", key: branchKey, onEvict: branchEvict, onInsert: branchInsert, trim: true, counts: true},
	// lhd ranks leaves by learned hit density per class of returns and age
	// (lhd.go).
	{name: "lhd", key: lhdKey, onEvict: lhdEvict, onInsert: lhdInsert, onMatch: lhdMatch, trim: true, trimAge: true},
}

// PolicyNames lists the known eviction policies.
func PolicyNames() []string {
	out := make([]string, len(policies))
	for i, p := range policies {
		out[i] = p.name
	}
	return out
}

func policyByName(name string) (policy, bool) {
	i := slices.IndexFunc(policies, func(p policy) bool { return p.name == name })
	if i < 0 {
		return policy{}, false
	}
	return policies[i], true
}
