package flops

// Model is the layer geometry of a hybrid model: what its prefill costs
// and what one saved recurrent state weighs.
type Model struct {
	SSMLayers, AttnLayers, MLPLayers int
	D, N                             int // hidden size, SSM state size
}

// Model7BHybrid is the 7B Attention-Mamba2 hybrid of the Marconi paper:
// 24 SSM, 4 attention and 28 MLP layers, d = 4096, n = 128.
var Model7BHybrid = Model{SSMLayers: 24, AttnLayers: 4, MLPLayers: 28, D: 4096, N: 128}

// Presets names the model geometries users can pick (CLI --model).
var Presets = map[string]Model{"7b-hybrid": Model7BHybrid}

// MaxDim bounds each dimension, so that the float counts stay finite and
// exact enough to compare.
const MaxDim = 1 << 20

// Valid reports whether the geometry has SSM layers and a positive d and
// n, and every count within [0, MaxDim].
func (m Model) Valid() bool {
	in := func(x, lo int) bool { return x >= lo && x <= MaxDim }
	return in(m.SSMLayers, 1) && in(m.AttnLayers, 0) && in(m.MLPLayers, 0) && in(m.D, 1) && in(m.N, 1)
}

// attnFLOPs is one attention layer's prefill FLOPs over l tokens: 8ld² + 4l²d.
func (m Model) attnFLOPs(l float64) float64 {
	d := float64(m.D)
	return float64(8*l*d*d) + float64(4*l*l*d)
}

// mlpFLOPs is one MLP layer's: 16ld².
func (m Model) mlpFLOPs(l float64) float64 {
	d := float64(m.D)
	return float64(16 * l * d * d)
}

// ssmFLOPs is one SSM layer's: 12ld² + 16ldn + 10ld.
func (m Model) ssmFLOPs(l float64) float64 {
	d, n := float64(m.D), float64(m.N)
	return float64(12*l*d*d) + float64(16*l*d*n) + float64(10*l*d)
}

// PrefillFLOPs is the whole model's prefill FLOPs over l tokens: what a
// hit of l tokens saves.
func (m Model) PrefillFLOPs(l int) float64 {
	x := float64(l)
	return float64(float64(m.SSMLayers)*m.ssmFLOPs(x)) + float64(float64(m.AttnLayers)*m.attnFLOPs(x)) + float64(float64(m.MLPLayers)*m.mlpFLOPs(x))
}

// SavedFLOPs is what a state at length tot saves over resuming from one at
// par (< tot): the SSM layers over the tot-par tokens between, and the
// attention and MLP layers' growth from par to tot. (The Marconi artifact
// subtracts the attention count in the MLP term, an apparent bug; this
// uses the MLP count.)
func (m Model) SavedFLOPs(tot, par int) float64 {
	t, p := float64(tot), float64(par)
	return float64(float64(m.SSMLayers)*m.ssmFLOPs(t-p)) +
		float64(float64(m.AttnLayers)*(m.attnFLOPs(t)-m.attnFLOPs(p))) +
		float64(float64(m.MLPLayers)*(m.mlpFLOPs(t)-m.mlpFLOPs(p)))
}

// StateBytes is the size of one saved state: per SSM layer 2dn plus
// 8(2d+2n).
func (m Model) StateBytes() float64 {
	d, n := float64(m.D), float64(m.N)
	return float64(m.SSMLayers) * (2*d*n + 8*(2*d+2*n))
}

// KVBytes is the attention KV of l tokens: per attention layer 4ld (K and
// V in 16 bits), what evicting a leaf frees beside its state.
func (m Model) KVBytes(l int) float64 {
	return float64(m.AttnLayers) * 4 * float64(l) * float64(m.D)
}
