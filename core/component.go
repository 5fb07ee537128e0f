package core

// component is the seam through which a kind of cached data plugs into the
// tree. The tree owns the structure (keys, edges, splits, walks); each
// component owns its values, its lock walk, its eviction order and its
// contributions to match and insert results. Full is the first
// implementation; SWA and Mamba implement the same hooks.
//
// Hooks are called in canonical order (Full, SWA, Mamba, whatever order
// the configuration listed them in), except lock releases, which run in
// reverse.
type component interface {
	kind() Component

	// Match hooks pass state by value: pointers through an interface call
	// escape to the heap, and match must not allocate.

	// startMatch returns fresh per-match validator state; hostOK allows
	// host values to satisfy the validator.
	startMatch(hostOK bool) validator
	// accept is called on every node the match walk visits (no
	// short-circuit: stateful validators need the whole walk).
	accept(t *Tree, v validator, i int32) (validator, bool)
	// finishMatch fills the component's result fields.
	finishMatch(t *Tree, r MatchResult, w matchWalk) MatchResult
	// refreshLRU moves the node in the component's LRU for a phase.
	refreshLRU(t *Tree, phase lruPhase, i int32)

	// overlap handles an insert walking over existing node i covering
	// [cursor, cursor+p) of the key, and returns how much of the incoming
	// slice (from its start) the tree now duplicates.
	overlap(t *Tree, s *insertState, i int32, p int) int
	// recoverAfterUnevict lets an auxiliary component rebuild its value
	// when the insert restored an evicted node's Full value.
	recoverAfterUnevict(t *Tree, s *insertState, i int32, p int)
	// commit attaches the component's data to the insert target.
	commit(t *Tree, s *insertState, target int32, newLeaf bool)

	// split moves the component's data when child is split into the new
	// prefix node and itself at atom offset at.
	split(t *Tree, prefix, child int32, at int)

	// acquire takes the component's device lock for a receipt on node i.
	acquire(t *Tree, i int32, r *Receipt)
	// canRelease reports whether release would find every count it
	// decrements positive (checked before any mutation).
	canRelease(t *Tree, i int32, r *Receipt) bool
	// release drops the component's device lock taken by acquire.
	release(t *Tree, i int32, r *Receipt)

	// evict frees the component's data on node i for the given layer and
	// appends the frees as actions; it returns the atoms freed.
	evict(t *Tree, i int32, l layer, acts []Action) ([]Action, int)
	// priority is the cascade eviction priority; leaves are all equal.
	priority(leaf bool) int
}

// validator is per-match scratch state of one component's validator.
type validator struct {
	hostOK bool
	length int
}

// lruPhase names the moments at which auxiliary LRUs are refreshed.
type lruPhase uint8

const (
	phaseMatchEnd lruPhase = iota
	phaseInsertEnd
)

// layer selects the device tier, the host tier or both.
type layer uint8

const (
	layerDevice layer = 1 << iota
	layerHost
	layerAll = layerDevice | layerHost
)

func newComponent(c Component) component {
	switch c {
	case SWA:
		return swaComponent{}
	case Mamba:
		return mambaComponent{}
	}
	return fullComponent{}
}
