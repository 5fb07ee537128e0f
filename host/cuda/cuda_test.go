package cuda

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResult_Name(t *testing.T) {
	require.Equal(t, "CUDA_ERROR_OUT_OF_MEMORY", OutOfMemory.Name())
	require.Equal(t, "CUDA_ERROR_NOT_READY", NotReady.Name())
	require.Equal(t, "CUDA_ERROR_ILLEGAL_ADDRESS", IllegalAddress.Name())
	require.Equal(t, "CUresult(12345)", Result(12345).Name())
}

func TestError_Is(t *testing.T) {
	err := newError("cuMemAlloc_v2", OutOfMemory, "", "device KV pool of 4 GiB")
	require.EqualError(t, err, "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): device KV pool of 4 GiB")
	require.True(t, IsOutOfMemory(err))
	require.True(t, IsOutOfMemory(fmt.Errorf("wrapped: %w", err)))
	require.False(t, errors.Is(err, ErrNoDevice))
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, OutOfMemory, e.Code)

	// The driver's own name wins over the table.
	require.EqualError(t, newError("cuInit", 34, "CUDA_ERROR_STUB_LIBRARY", ""), "cuda: cuInit: CUDA_ERROR_STUB_LIBRARY (34)")
	for _, c := range []Result{NoDevice, InvalidDevice} {
		require.ErrorIs(t, newError("cuDeviceGet", c, "", ""), ErrNoDevice)
	}
	require.NoError(t, newError("cuInit", Success, "", ""))
}

func TestGeometry_Presets(t *testing.T) {
	g, err := Preset("llama-3-8b")
	require.NoError(t, err)
	require.Equal(t, 128<<10, g.TokenBytes(), "Llama-3-8B: 32 layers × 8 KV heads × 128 × bf16 × K,V")
	require.Equal(t, 2048, g.RowBytes())
	require.Equal(t, 16*128<<10, g.PageBytes())
	g, err = Preset("Llama-3-70B")
	require.NoError(t, err)
	require.Equal(t, 320<<10, g.TokenBytes(), "Llama-3-70B: 80 layers")
	for _, n := range PresetNames() {
		g, err := Preset(n)
		require.NoError(t, err)
		require.NoError(t, g.Validate(), n)
	}
	_, err = Preset("gpt-5")
	require.ErrorIs(t, err, ErrGeometry)
	require.Contains(t, err.Error(), "llama-3-8b")
	require.Equal(t, "128 KiB", FormatBytes(128<<10))
	require.Equal(t, "1.50 GiB", FormatBytes(1.5*(1<<30)))
}

func TestGeometry_Validate(t *testing.T) {
	ok := Geometry{Layers: 1, KVHeads: 1, HeadDim: 1, DTypeBytes: 1, PageSize: 1}
	require.NoError(t, ok.Validate())
	for _, bad := range []func(*Geometry){
		func(g *Geometry) { g.Layers = 0 },
		func(g *Geometry) { g.KVHeads = -1 },
		func(g *Geometry) { g.HeadDim = 0 },
		func(g *Geometry) { g.DTypeBytes = 0 },
		func(g *Geometry) { g.PageSize = 0 },
		func(g *Geometry) { g.SWALayers = -1 },
		func(g *Geometry) { g.StateBytes = -1 },
		func(g *Geometry) { g.Layers, g.KVHeads, g.HeadDim, g.PageSize = 1000, 64, 256, 1024 },
	} {
		g := ok
		bad(&g)
		require.ErrorIs(t, g.Validate(), ErrGeometry, "%+v", g)
	}
}

func TestLayout_RowOff(t *testing.T) {
	// Page-major: page p holds rows × pageTokens rows of rowBytes.
	l := layout{pageTokens: 4, rows: 3, rowBytes: 8}
	require.Equal(t, 96, l.pageBytes())
	require.Equal(t, 0, l.rowOff(0, 0))
	require.Equal(t, 8, l.rowOff(1, 0))
	require.Equal(t, 32, l.rowOff(0, 1))
	require.Equal(t, 96+2*32+3*8, l.rowOff(7, 2))
	// Every (slot, row) byte range of two pages is distinct and inside them.
	seen := map[int]bool{}
	for s := int32(0); s < 8; s++ {
		for r := 0; r < 3; r++ {
			o := l.rowOff(s, r)
			require.False(t, seen[o])
			require.Less(t, o+l.rowBytes-1, 2*l.pageBytes())
			seen[o] = true
		}
	}
}

// TestPTX_WellFormed checks the page copy kernel's PTX text as far as can
// be done without a driver or ptxas here: header directives, the entry and
// its parameters, every register within its declared range, every label
// branched to defined, each statement terminated. It does not prove the
// driver's JIT accepts it; a GPU run (scripts/gpu-check.sh) does.
func TestPTX_WellFormed(t *testing.T) {
	src := CopyPagesPTX
	for _, d := range []string{".version 7.0", ".target sm_70", ".address_size 64", ".visible .entry " + CopyPagesKernel + "("} {
		require.Contains(t, src, d)
	}
	require.Equal(t, strings.Count(src, "{"), strings.Count(src, "}"))
	params := regexp.MustCompile(`\.param \.(u64|u32) (\w+)`).FindAllStringSubmatch(src, -1)
	require.Len(t, params, 6)
	declared := map[string]bool{}
	for _, p := range params {
		declared[p[2]] = true
	}
	for _, m := range regexp.MustCompile(`ld\.param\.\w+\s+%\w+, \[(\w+)\]`).FindAllStringSubmatch(src, -1) {
		require.True(t, declared[m[1]], "ld.param of undeclared %s", m[1])
	}
	regs := map[string]int{}
	for _, m := range regexp.MustCompile(`\.reg \.\w+\s+%(\w+)<(\d+)>;`).FindAllStringSubmatch(src, -1) {
		n, _ := strconv.Atoi(m[2])
		regs[m[1]] = n
	}
	require.Equal(t, map[string]int{"p": 3, "r": 16, "rd": 24}, regs)
	body := src[strings.Index(src, "{"):]
	for _, m := range regexp.MustCompile(`%(p|r|rd)(\d+)\b`).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[2])
		require.Less(t, n, regs[m[1]], "register %%%s%s out of its declared range", m[1], m[2])
	}
	labels := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(\$\w+):$`).FindAllStringSubmatch(src, -1) {
		labels[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`bra(?:\.uni)?\s+(\$\w+);`).FindAllStringSubmatch(src, -1) {
		require.True(t, labels[m[1]], "branch to undefined label %s", m[1])
	}
	inBody := false
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "{":
			inBody = true
			continue
		case line == "}":
			inBody = false
			continue
		}
		if !inBody || line == "" || strings.HasPrefix(line, "//") || strings.HasSuffix(line, ":") {
			continue
		}
		require.True(t, strings.HasSuffix(line, ";"), "unterminated statement %q", line)
	}
}
