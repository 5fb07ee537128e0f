package cuda

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Geometry is the shape of a model's KV cache as the pools lay it out.
//
// A token's KV is 2 × Layers rows (K then V of each layer) of
// KVHeads × HeadDim × DTypeBytes bytes. Pools are page-major: page p holds
// every row of its PageSize tokens in one contiguous region,
//
//	page p: [layer 0 K: PageSize rows][layer 0 V][layer 1 K] ... [layer L-1 V]
//
// so a whole page moves between device and host in one copy, and part of a
// page in one 2D copy (one row per layer and K/V).
type Geometry struct {
	Layers     int // attention layers with a full KV cache
	KVHeads    int // key/value heads (after grouped-query sharing)
	HeadDim    int // head dimension
	DTypeBytes int // bytes per element: 2 for bf16/fp16, 1 for fp8
	PageSize   int // tokens per page, the tree's page size
	// SWALayers is the number of sliding-window layers of a hybrid model;
	// their KV lives in the SWA pool with the same head shape. 0: none.
	SWALayers int
	// StateBytes is the size of one recurrent (Mamba) state, conv and SSM
	// state of every Mamba layer together. 0: none.
	StateBytes int
}

// RowBytes is one token's K (or V) of one layer.
func (g Geometry) RowBytes() int { return g.KVHeads * g.HeadDim * g.DTypeBytes }

// TokenBytes is one token's full KV: 2 × Layers × RowBytes.
func (g Geometry) TokenBytes() int { return 2 * g.Layers * g.RowBytes() }

// SWATokenBytes is one token's sliding-window KV.
func (g Geometry) SWATokenBytes() int { return 2 * g.SWALayers * g.RowBytes() }

// PageBytes is one page of full KV.
func (g Geometry) PageBytes() int { return g.PageSize * g.TokenBytes() }

// Validate checks that every field is positive where it must be and that a
// page fits in an int.
func (g Geometry) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", g.Layers}, {"KV heads", g.KVHeads}, {"head dim", g.HeadDim}, {"dtype bytes", g.DTypeBytes}, {"page size", g.PageSize}} {
		if f.v < 1 {
			return fmt.Errorf("%w: %s is %d, want ≥ 1", ErrGeometry, f.name, f.v)
		}
	}
	if g.SWALayers < 0 || g.StateBytes < 0 {
		return fmt.Errorf("%w: SWA layers %d and state bytes %d must not be negative", ErrGeometry, g.SWALayers, g.StateBytes)
	}
	p := uint64(g.PageSize) * 2 * uint64(max(g.Layers, g.SWALayers))
	for _, f := range []int{g.KVHeads, g.HeadDim, g.DTypeBytes} {
		p *= uint64(f)
		if p > math.MaxInt32 {
			return fmt.Errorf("%w: a page of %d tokens × %d layers × %d heads × %d dims × %d bytes is over 2 GiB",
				ErrGeometry, g.PageSize, g.Layers, g.KVHeads, g.HeadDim, g.DTypeBytes)
		}
	}
	return nil
}

// String renders the geometry the way the flags spell it.
func (g Geometry) String() string {
	s := fmt.Sprintf("layers=%d kv-heads=%d head-dim=%d dtype-bytes=%d page=%d (%s/token)",
		g.Layers, g.KVHeads, g.HeadDim, g.DTypeBytes, g.PageSize, FormatBytes(float64(g.TokenBytes())))
	if g.SWALayers > 0 {
		s += fmt.Sprintf(" swa-layers=%d", g.SWALayers)
	}
	if g.StateBytes > 0 {
		s += fmt.Sprintf(" state=%s", FormatBytes(float64(g.StateBytes)))
	}
	return s
}

// presets are KV geometries of common models (bf16, page size 16).
var presets = map[string]Geometry{
	// 32 layers × 8 KV heads × 128 × 2 bytes × K,V = 128 KiB per token.
	"llama-3-8b": {Layers: 32, KVHeads: 8, HeadDim: 128, DTypeBytes: 2, PageSize: 16},
	// 80 layers: 320 KiB per token.
	"llama-3-70b": {Layers: 80, KVHeads: 8, HeadDim: 128, DTypeBytes: 2, PageSize: 16},
	// 126 layers: 504 KiB per token.
	"llama-3.1-405b": {Layers: 126, KVHeads: 8, HeadDim: 128, DTypeBytes: 2, PageSize: 16},
	// 32 layers × 8 KV heads: 128 KiB per token.
	"mistral-7b": {Layers: 32, KVHeads: 8, HeadDim: 128, DTypeBytes: 2, PageSize: 16},
	// 28 layers × 4 KV heads: 56 KiB per token.
	"qwen2.5-7b": {Layers: 28, KVHeads: 4, HeadDim: 128, DTypeBytes: 2, PageSize: 16},
	// A small shape for tests and CPU runs: 2 layers × 1 head × 16 × 2
	// bytes = 128 bytes per token.
	"tiny": {Layers: 2, KVHeads: 1, HeadDim: 16, DTypeBytes: 2, PageSize: 16},
}

// Preset returns the geometry of a named model (PresetNames lists them).
func Preset(name string) (Geometry, error) {
	g, ok := presets[strings.ToLower(name)]
	if !ok {
		return Geometry{}, fmt.Errorf("%w: no preset %q (have %s)", ErrGeometry, name, strings.Join(PresetNames(), ", "))
	}
	return g, nil
}

// PresetNames lists the presets in sorted order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FormatBytes renders a byte count with a binary unit (128 KiB, 1.5 GiB).
func FormatBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	k := 0
	for b >= 1024 && k < len(units)-1 {
		b /= 1024
		k++
	}
	if b == math.Trunc(b) {
		return fmt.Sprintf("%.0f %s", b, units[k])
	}
	return fmt.Sprintf("%.2f %s", b, units[k])
}

// layout is how a pool maps slots to bytes: pageTokens slots per page,
// each page rows × pageTokens × rowBytes, row r of slot s at
//
//	(s / pageTokens) × pageBytes + r × pageTokens × rowBytes + (s % pageTokens) × rowBytes
//
// KV pools use pageTokens = PageSize, rows = 2 × layers; state pools one
// slot per page and one row.
type layout struct {
	pageTokens, rows, rowBytes int
}

func (l layout) pageBytes() int { return l.pageTokens * l.rows * l.rowBytes }
func (l layout) slotBytes() int { return l.rows * l.rowBytes }
func (l layout) pitch() int     { return l.pageTokens * l.rowBytes }
func (l layout) rowOff(s int32, r int) int {
	p, o := int(s)/l.pageTokens, int(s)%l.pageTokens
	return p*l.pageBytes() + r*l.pitch() + o*l.rowBytes
}

func kvLayout(g Geometry, layers int) layout {
	return layout{pageTokens: g.PageSize, rows: 2 * layers, rowBytes: g.RowBytes()}
}

func stateLayout(stateBytes int) layout { return layout{pageTokens: 1, rows: 1, rowBytes: stateBytes} }
