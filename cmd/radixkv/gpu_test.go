package main

import (
	"errors"
	"testing"

	"github.com/radixkv/radixkv/host/cuda"
	"github.com/stretchr/testify/require"
)

// TestReplay_CUDAFake: --pools cuda-fake runs the replay on CUDA pools over
// the fake driver, with the same hit rate as the Go-memory pools, the
// canary clean and the host tier's copies batched through the transport.
func TestReplay_CUDAFake(t *testing.T) {
	if !cuda.Available {
		t.Skip("built without cgo: no CUDA pools")
	}
	args := []string{"--engine", "direct", "--requests", "120", "--capacity", "30000", "--host-capacity", "30000", "--quiet"}
	mem := replayJSON(t, args...)
	gpu := replayJSON(t, append(args, "--pools", "cuda-fake")...)
	require.Equal(t, num(t, mem, "hit_rate"), num(t, gpu, "hit_rate"))
	// Backups complete later on CUDA pools (the fake answers the first
	// event query "not ready"), so what is backed up may differ; the hits
	// may not.
	require.NotZero(t, num(t, gpu, "host_tier", "backed_up_tokens"))
	require.NotZero(t, num(t, gpu, "gpu", "batches"))
	require.Zero(t, num(t, gpu, "canary", "mismatches"))
	require.NotZero(t, num(t, gpu, "canary", "checked_slots"))
	require.Equal(t, float64(128), num(t, gpu, "gpu", "token_bytes"))
	require.NotZero(t, num(t, gpu, "gpu", "bytes_total"))

	code, out, _ := cli(t, append([]string{"replay"}, append(args, "--pools", "cuda-fake", "--components", "full,mamba")...)...)
	require.Equal(t, 0, code)
	require.Contains(t, out, "fake driver: host memory, no GPU")
}

func TestReplay_CUDAErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pools", "tpu"}, `--pools "tpu"`},
		{[]string{"--pools", "cuda-fake", "--capacity", "10001"}, "multiple of --page-size"},
		{[]string{"--pools", "cuda-fake", "--model", "gpt-9"}, "no preset"},
		{[]string{"--pools", "cuda-fake", "--cuda-copy", "dma"}, "--cuda-copy"},
		{[]string{"--pools", "cuda-fake", "--cuda-device", "3"}, "no CUDA device"},
	} {
		if !cuda.Available && tc.args[1] == "cuda-fake" {
			continue
		}
		code, _, errOut := cli(t, append([]string{"replay", "--engine", "direct", "--requests", "5", "--quiet"}, tc.args...)...)
		require.NotEqual(t, 0, code, "%v", tc.args)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	// Without a driver (this machine, CI) --pools cuda says what it looked for.
	if _, err := cuda.Load(); errors.Is(err, cuda.ErrNoDriver) {
		code, _, errOut := cli(t, "replay", "--engine", "direct", "--requests", "5", "--quiet", "--pools", "cuda")
		require.NotEqual(t, 0, code)
		require.Contains(t, errOut, "libcuda.so.1")
	}
}
