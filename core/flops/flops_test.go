package flops_test

import (
	"fmt"
	"testing"

	"github.com/radixkv/radixkv/core/flops"
	"github.com/stretchr/testify/require"
)

func TestCounts(t *testing.T) {
	m := flops.Model{SSMLayers: 1, AttnLayers: 1, MLPLayers: 1, D: 2, N: 3}
	// l=5: attn 8*5*4+4*25*2 = 360, mlp 16*5*4 = 320, ssm 12*5*4+16*5*2*3+10*5*2 = 820.
	require.Equal(t, 360.0+320+820, m.PrefillFLOPs(5))
	require.Equal(t, m.PrefillFLOPs(5), m.SavedFLOPs(5, 0))
	require.Less(t, m.SavedFLOPs(5, 2), m.PrefillFLOPs(5))
	require.Equal(t, 2*2*3+8*(4+6.0), m.StateBytes())
	require.Equal(t, 4*7*2.0, m.KVBytes(7))
	require.True(t, flops.Model7BHybrid.Valid())
	require.False(t, flops.Model{AttnLayers: 1, D: 1, N: 1}.Valid())
	require.False(t, flops.Model{SSMLayers: 1, D: flops.MaxDim + 1, N: 1}.Valid())
	require.Equal(t, flops.Model7BHybrid, flops.Presets["7b-hybrid"])
}

func ExampleModel_SavedFLOPs() {
	m := flops.Model7BHybrid
	// A state 1024 tokens past its nearest ancestor state at 3072.
	fmt.Printf("%.3g FLOPs over %.3g bytes\n", m.SavedFLOPs(4096, 3072), m.StateBytes())
	// Output: 1.39e+13 FLOPs over 2.68e+07 bytes
}
