package workload

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func smallConfig() GenConfig {
	cfg := DefaultGenConfig()
	cfg.Requests = 400
	return cfg
}

func TestGenerate_Deterministic(t *testing.T) {
	cfg := smallConfig()
	a, err := Generate(cfg)
	require.NoError(t, err)
	b, err := Generate(cfg)
	require.NoError(t, err)
	require.Equal(t, a, b)

	cfg.Seed++
	c, err := Generate(cfg)
	require.NoError(t, err)
	require.NotEqual(t, a, c)
}

// TestGenerate_Golden pins the default workload, so that a change to the
// generator (or to math/rand/v2) that alters it is noticed.
func TestGenerate_Golden(t *testing.T) {
	reqs, err := Generate(DefaultGenConfig())
	require.NoError(t, err)
	h := fnv.New64a()
	var buf []byte
	for _, r := range reqs {
		buf = binary.LittleEndian.AppendUint64(buf[:0], uint64(r.Timestamp))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(r.OutputLength))
		buf = append(buf, r.Namespace...)
		for _, tok := range r.Tokens {
			buf = binary.LittleEndian.AppendUint32(buf, tok)
		}
		h.Write(buf)
	}
	require.Equal(t, goldenDefaultHash, h.Sum64(), "the default workload changed")
}

const goldenDefaultHash uint64 = 0x5bfdd6ee61a70c7f

func TestGenerate_Shape(t *testing.T) {
	cfg := DefaultGenConfig()
	reqs, err := Generate(cfg)
	require.NoError(t, err)
	require.Len(t, reqs, cfg.Requests)

	total := 0
	for i, r := range reqs {
		require.Equal(t, len(r.Tokens), r.InputLength)
		require.Positive(t, r.InputLength)
		require.Positive(t, r.OutputLength)
		require.Empty(t, r.Namespace)
		if i > 0 {
			require.GreaterOrEqual(t, r.Timestamp, reqs[i-1].Timestamp)
		}
		if m := slices.Max(r.Tokens); m >= uint32(cfg.VocabSize) {
			t.Fatalf("request %d has token %d outside the vocabulary", i, m)
		}
		require.Len(t, r.HashIDs, (r.InputLength+BlockTokens-1)/BlockTokens)
		total += r.InputLength
	}
	avg := total / len(reqs)
	require.Greater(t, avg, 2000)
	require.Less(t, avg, 10000)
}

func TestGenerate_SharedPrefixes(t *testing.T) {
	reqs, err := Generate(DefaultGenConfig())
	require.NoError(t, err)
	seen := make(map[string]bool)
	shared := 0
	for _, r := range reqs {
		if len(r.Tokens) < BlockTokens {
			continue
		}
		k := tokensKey(r.Tokens[:BlockTokens])
		if seen[k] {
			shared++
		}
		seen[k] = true
	}
	require.Greater(t, shared, len(reqs)*8/10, "requests sharing their first block with an earlier one")
}

func TestGenerate_HashIDs(t *testing.T) {
	reqs, err := Generate(smallConfig())
	require.NoError(t, err)
	// Equal ids exactly when the prefixes through that block are equal.
	byID := make(map[int64]string)
	for _, r := range reqs {
		for i, id := range r.HashIDs {
			k := tokensKey(r.Tokens[:min((i+1)*BlockTokens, len(r.Tokens))])
			if prev, ok := byID[id]; ok {
				require.Equal(t, prev, k, "id %d names two prefixes", id)
			}
			byID[id] = k
		}
	}
	ids := make(map[string]int64, len(byID))
	for id, k := range byID {
		_, dup := ids[k]
		require.False(t, dup, "one prefix has two ids")
		ids[k] = id
	}
}

func TestGenerate_Tenants(t *testing.T) {
	cfg := smallConfig()
	cfg.Tenants = 3
	reqs, err := Generate(cfg)
	require.NoError(t, err)
	seen := make(map[string]int)
	for _, r := range reqs {
		seen[r.Namespace]++
	}
	require.ElementsMatch(t, []string{"tenant-0", "tenant-1", "tenant-2"}, keys(seen))
}

func TestGenerate_OneKind(t *testing.T) {
	for _, mix := range []Mix{{Chat: 1}, {Agent: 1}, {FewShot: 1}, {DocQA: 1}} {
		cfg := smallConfig()
		cfg.Mix = mix
		cfg.SystemPrompts, cfg.ToolPrompts, cfg.FewShotTemplates, cfg.Documents = 0, 0, 0, 0
		switch {
		case mix.Chat > 0:
			cfg.SystemPrompts = 1
		case mix.Agent > 0:
			cfg.ToolPrompts = 1
		case mix.FewShot > 0:
			cfg.FewShotTemplates = 1
		default:
			cfg.Documents = 1
		}
		reqs, err := Generate(cfg)
		require.NoError(t, err, "%+v", mix)
		require.Len(t, reqs, cfg.Requests)
	}
}

func TestGenerate_InvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		edit func(*GenConfig)
		want string
	}{
		{func(c *GenConfig) { c.Requests = 0 }, "GenConfig.Requests 0 out of range"},
		{func(c *GenConfig) { c.Tenants = -1 }, "GenConfig.Tenants -1 out of range"},
		{func(c *GenConfig) { c.VocabSize = 100 }, "GenConfig.VocabSize 100 out of range"},
		{func(c *GenConfig) { c.Mix.Agent = -1 }, "GenConfig.Mix.Agent -1 out of range"},
		{func(c *GenConfig) { c.Mix = Mix{} }, "GenConfig.Mix has no positive weight"},
		{func(c *GenConfig) { c.Documents = 0 }, "GenConfig.Documents 0 out of range"},
		{func(c *GenConfig) { c.SessionGapMs = -5 }, "GenConfig.SessionGapMs -5 out of range"},
		{func(c *GenConfig) { *c = GenConfig{Requests: 10} }, "GenConfig.VocabSize 0 out of range"},
	} {
		cfg := DefaultGenConfig()
		tc.edit(&cfg)
		reqs, err := Generate(cfg)
		require.ErrorContains(t, err, "workload: "+tc.want)
		require.Nil(t, reqs)
	}
	// A pool may be empty when its kind is unused.
	cfg := DefaultGenConfig()
	cfg.Mix.DocQA, cfg.Documents = 0, 0
	_, err := Generate(cfg)
	require.NoError(t, err)
}

func BenchmarkGenerate(b *testing.B) {
	cfg := DefaultGenConfig()
	for b.Loop() {
		if _, err := Generate(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func tokensKey(toks []uint32) string {
	buf := make([]byte, 0, 4*len(toks))
	for _, t := range toks {
		buf = binary.LittleEndian.AppendUint32(buf, t)
	}
	return string(buf)
}

func keys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
