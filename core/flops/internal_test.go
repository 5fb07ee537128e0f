package flops

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The formulas of SNAPSHOTS.md §10 on a toy geometry whose numbers are easy
// to check by hand: d = 2, n = 3, one layer of each kind.
func TestModel_Formulas(t *testing.T) {
	m := Model{SSMLayers: 1, AttnLayers: 1, MLPLayers: 1, D: 2, N: 3}
	// l = 5: attention 8*5*4 + 4*25*2 = 160 + 200; MLP 16*5*4 = 320;
	// SSM 12*5*4 + 16*5*2*3 + 10*5*2 = 240 + 480 + 100.
	require.Equal(t, 360.0, m.attnFLOPs(5))
	require.Equal(t, 320.0, m.mlpFLOPs(5))
	require.Equal(t, 820.0, m.ssmFLOPs(5))
	// From 2 to 5: SSM over 3 tokens, attention and MLP growth.
	want := m.ssmFLOPs(3) + (m.attnFLOPs(5) - m.attnFLOPs(2)) + (m.mlpFLOPs(5) - m.mlpFLOPs(2))
	require.Equal(t, want, m.SavedFLOPs(5, 2))
	// The paper's 7B hybrid: 24 layers of 2*4096*128 + 8*(8192+256) bytes.
	require.Equal(t, 24*(2*4096*128+8*(2*4096+2*128.0)), Model7BHybrid.StateBytes())
}
