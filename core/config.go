package core

import (
	"fmt"
	"strings"

	"github.com/radixkv/radixkv/core/flops"
)

// Component names one kind of per-node cache data. Full is the base
// full-attention KV every tree has; SWA and Mamba are the auxiliary
// components of hybrid models.
type Component uint8

const (
	// Full is full-attention KV: one device slot per cached atom.
	Full Component = iota
	// SWA is sliding-window attention KV: slots only inside the window.
	SWA
	// Mamba is a recurrent state: one slot per node that saved one.
	Mamba

	numComponents = 3
)

// String returns the component's lower-case name.
func (c Component) String() string {
	switch c {
	case Full:
		return "full"
	case SWA:
		return "swa"
	case Mamba:
		return "mamba"
	}
	return fmt.Sprintf("component(%d)", uint8(c))
}

// ComponentSet is a bit set of components.
type ComponentSet uint8

// Has reports whether c is in the set.
func (s ComponentSet) Has(c Component) bool { return c < numComponents && s&(1<<c) != 0 }

// With returns the set with c added.
func (s ComponentSet) With(c Component) ComponentSet { return s | 1<<c }

// members lists the set's components in canonical order (Full, SWA,
// Mamba).
func (s ComponentSet) members() []Component {
	var out []Component
	for c := Component(0); c < numComponents; c++ {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// String lists the members, e.g. "{full,swa}".
func (s ComponentSet) String() string {
	var parts []string
	for _, c := range s.members() {
		parts = append(parts, c.String())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// WritePolicy decides when device KV is copied to the host tier.
type WritePolicy uint8

const (
	// WriteThrough backs a node up once its hit count reaches the threshold.
	WriteThrough WritePolicy = iota
	// WriteBack backs a node up only when it is evicted from the device.
	WriteBack
)

// String returns "write_through" or "write_back".
func (w WritePolicy) String() string {
	if w == WriteBack {
		return "write_back"
	}
	return "write_through"
}

// Config is validated once by [New]; the tree keeps its own copy.
type Config struct {
	// PageSize is the matching granularity in atoms (≥ 1). Keys are
	// truncated to whole pages.
	PageSize int
	// Components is the component set; it must contain Full. An empty
	// list means [Full]. The order is immaterial (the tree always runs
	// its components Full, SWA, Mamba); a duplicate is an error.
	Components []Component
	// Policy names the device eviction order: lru, lfu, fifo, mru, filo,
	// priority, slru, gdsf, lrfu, admit, branch or lhd (case-insensitive). Empty means lru.
	Policy string
	// Bigram makes each key atom a pair of adjacent tokens (EAGLE
	// speculative decoding): n tokens give n-1 atoms.
	Bigram bool
	// HostTier enables the host-memory tier (HiCache).
	HostTier bool
	// WritePolicy chooses write-through or write-back for the host tier.
	WritePolicy WritePolicy
	// WriteThroughThreshold is the hit count that triggers a write-through
	// backup; 0 picks the default (1 when the policy is write-through).
	WriteThroughThreshold int
	// KVEvents enables BlockStored/BlockRemoved event recording, drained
	// with Tree.TakeEvents.
	KVEvents bool
	// HashConvention picks how page digests become event block ids.
	HashConvention HashConvention

	// SWAWindow is the sliding-window size in atoms; required (≥ 1) with
	// the SWA component, zero otherwise.
	SWAWindow int
	// MambaChunkSize is the Mamba checkpoint granularity in atoms (the
	// branching length is a multiple of lcm(MambaChunkSize, PageSize)); 0
	// means one page. Only with the Mamba component.
	MambaChunkSize int
	// ExternalLinker enables the external cache linker: write-through
	// backups also go to an external store, tracked per node (pending,
	// stored). Not available with Mamba.
	ExternalLinker bool
	// MambaMaxPathStates caps how many Mamba states one root path keeps on
	// the device (older, shallower ones are dropped after an insert); 0
	// means no cap. Only with the Mamba component.
	MambaMaxPathStates int
	// MambaPolicy names the Mamba device eviction order: lru (empty: the
	// recency list) or marconi (lowest utility first, see marconi.go).
	// Only with the Mamba component.
	MambaPolicy string
	// MambaModel is the hybrid geometry marconi's FLOP and byte counts use;
	// the zero value means flops.Model7BHybrid. Only with marconi.
	MambaModel flops.Model
	// MambaAlpha weighs FLOPs saved per byte against recency under
	// marconi, in [0, MaxMambaAlpha]; 0 is recency only. A host tunes it
	// later with Tree.SetMambaAlpha.
	MambaAlpha float64
}

// validated is the normalised configuration a Tree runs on.
type validated struct {
	page       int
	width      int         // key words per atom: 1, or 2 for bigram keys
	comps      []Component // canonical order: Full, SWA, Mamba
	set        ComponentSet
	policy     policy
	bigram     bool
	hostTier   bool
	writeBack  bool
	wtThresh   int64
	kvEvents   bool
	hashConv   HashConvention
	policyName string
	linker     bool
	window     int // SWA window in atoms
	mambaGrid  int // lcm(Mamba chunk, page)
	pathCap    int // Mamba states per path; 0 = no cap
	mar        marconiConfig
}

func (c Config) validate() (validated, error) {
	var v validated
	var err error
	if c.PageSize < 1 {
		return v, fmt.Errorf("%w: page size %d must be at least 1", ErrInvalidConfig, c.PageSize)
	}
	if c.PageSize > 1<<16 {
		return v, fmt.Errorf("%w: page size %d is larger than 65536", ErrInvalidConfig, c.PageSize)
	}
	set := ComponentSet(0)
	if len(c.Components) == 0 {
		set = set.With(Full)
	}
	for _, comp := range c.Components {
		if comp >= numComponents {
			return v, fmt.Errorf("%w: unknown component %d", ErrInvalidConfig, comp)
		}
		if set.Has(comp) {
			return v, fmt.Errorf("%w: component %s listed twice", ErrInvalidConfig, comp)
		}
		set = set.With(comp)
	}
	if !set.Has(Full) {
		return v, fmt.Errorf("%w: component set %s lacks full, which every tree needs", ErrInvalidConfig, set)
	}
	// The caller's order is not kept: the tree fans hooks out Full, SWA,
	// Mamba (releases in reverse), and several walks rely on comps[0]
	// being Full.
	comps := set.members()
	if set.Has(SWA) != (c.SWAWindow != 0) {
		return v, fmt.Errorf("%w: SWA window %d with component set %s (the window is required with swa and only with swa)", ErrInvalidConfig, c.SWAWindow, set)
	}
	if c.SWAWindow < 0 || c.SWAWindow > 1<<30 {
		return v, fmt.Errorf("%w: SWA window %d out of range [1, 2^30]", ErrInvalidConfig, c.SWAWindow)
	}
	if !set.Has(Mamba) && (c.MambaChunkSize != 0 || c.MambaMaxPathStates != 0) {
		return v, fmt.Errorf("%w: Mamba chunk size %d / path cap %d set without the mamba component", ErrInvalidConfig, c.MambaChunkSize, c.MambaMaxPathStates)
	}
	if c.MambaChunkSize < 0 || c.MambaChunkSize > 1<<20 {
		return v, fmt.Errorf("%w: Mamba chunk size %d out of range [0, 2^20]", ErrInvalidConfig, c.MambaChunkSize)
	}
	if c.MambaMaxPathStates < 0 {
		return v, fmt.Errorf("%w: Mamba path cap %d is negative", ErrInvalidConfig, c.MambaMaxPathStates)
	}
	name := strings.ToLower(strings.TrimSpace(c.Policy))
	if name == "" {
		name = "lru"
	}
	pol, ok := policyByName(name)
	if !ok {
		return v, fmt.Errorf("%w: %q (known: %s)", ErrUnknownPolicy, c.Policy, strings.Join(PolicyNames(), ", "))
	}
	if c.WritePolicy > WriteBack {
		return v, fmt.Errorf("%w: unknown write policy %d", ErrInvalidConfig, c.WritePolicy)
	}
	if c.WriteThroughThreshold < 0 {
		return v, fmt.Errorf("%w: write-through threshold %d is negative", ErrInvalidConfig, c.WriteThroughThreshold)
	}
	if c.ExternalLinker && set.Has(Mamba) {
		return v, fmt.Errorf("%w: the external cache linker cannot carry mamba states (component set %s)", ErrUnsupported, set)
	}
	if c.HashConvention > HashVLLM {
		return v, fmt.Errorf("%w: unknown hash convention %d", ErrInvalidConfig, c.HashConvention)
	}
	thresh := int64(c.WriteThroughThreshold)
	if thresh == 0 {
		thresh = 2
		if c.WritePolicy == WriteThrough {
			thresh = 1
		}
	}
	v = validated{
		page:       c.PageSize,
		width:      1,
		comps:      comps,
		set:        set,
		policy:     pol,
		bigram:     c.Bigram,
		hostTier:   c.HostTier,
		writeBack:  c.WritePolicy == WriteBack,
		wtThresh:   thresh,
		kvEvents:   c.KVEvents,
		hashConv:   c.HashConvention,
		policyName: name,
		window:     c.SWAWindow,
		linker:     c.ExternalLinker,
		pathCap:    c.MambaMaxPathStates,
	}
	if v.mar, err = c.validateMamba(set); err != nil {
		return validated{}, err
	}
	if set.Has(Mamba) {
		chunk := c.MambaChunkSize
		if chunk == 0 {
			chunk = c.PageSize
		}
		v.mambaGrid = chunk / gcd(chunk, c.PageSize) * c.PageSize
	}
	if c.Bigram {
		v.width = 2
	}
	return v, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
