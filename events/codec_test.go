package events

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/radixkv/radixkv/core"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden payloads in testdata/")

// sampleBatch uses every field of every kind.
func sampleBatch() Batch {
	extra, _ := msgpack.Marshal([]any{nil, []any{"mm-1"}})
	return Batch{
		TS: 1712345678.25,
		Events: []Event{
			{Kind: BlockStored, BlockHashes: []int64{-2, 7}, TokenIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8},
				BlockSize: 4, Medium: MediumGPU},
			{Kind: BlockStored, BlockHashes: []int64{9}, ParentBlockHash: 7, HasParent: true,
				TokenIDs: []uint32{9, 10, 11, 12}, BlockSize: 4, LoRAID: 3, HasLoRAID: true,
				Medium: MediumCPUPinned, LoRAName: "ad", CacheSalt: "s", SessionID: "sess",
				ExtraKeys: extra, GroupIdx: 1, HasGroupIdx: true, SpecKind: "sliding_window", SlidingWindow: 128},
			{Kind: BlockRemoved, BlockHashes: []int64{9, 7}, Medium: MediumGPU, GroupIdx: 1, HasGroupIdx: true},
			{Kind: AllBlocksCleared},
		},
		DPRank: 2, HasDPRank: true,
	}
}

// project keeps what format f carries of b, as decoding gives it back.
func project(f Format, b Batch) Batch {
	out := Batch{TS: b.TS}
	if f.Version > V0 {
		out.DPRank, out.HasDPRank = b.DPRank, b.HasDPRank
	}
	stored, removed, _ := f.layouts()
	for _, e := range b.Events {
		var l layout
		switch e.Kind {
		case BlockStored:
			l = stored
		case BlockRemoved:
			l = removed
		}
		p := Event{Kind: e.Kind}
		for _, fl := range l.fields {
			copyField(&p, &e, fl)
		}
		out.Events = append(out.Events, p)
	}
	return out
}

func copyField(dst, src *Event, f field) {
	switch f {
	case fBlockHashes:
		dst.BlockHashes = src.BlockHashes
	case fParent:
		dst.ParentBlockHash, dst.HasParent = src.ParentBlockHash, src.HasParent
	case fTokenIDs:
		dst.TokenIDs = src.TokenIDs
	case fBlockSize:
		dst.BlockSize = src.BlockSize
	case fLoRAID:
		dst.LoRAID, dst.HasLoRAID = src.LoRAID, src.HasLoRAID
	case fMedium:
		dst.Medium = src.Medium
	case fLoRAName:
		dst.LoRAName = src.LoRAName
	case fExtraKeys:
		dst.ExtraKeys = src.ExtraKeys
	case fGroupIdx:
		dst.GroupIdx, dst.HasGroupIdx = src.GroupIdx, src.HasGroupIdx
	case fSpecKind:
		dst.SpecKind = src.SpecKind
	case fSlidingWindow:
		dst.SlidingWindow = src.SlidingWindow
	case fCacheSalt:
		dst.CacheSalt = src.CacheSalt
	case fSessionID:
		dst.SessionID = src.SessionID
	}
}

func goldenName(f Format) string {
	return strings.ReplaceAll(f.String(), "/", "_") + ".hex"
}

// TestGolden pins the bytes of the sample batch in every format and
// checks that each decodes back to what the format carries.
func TestGolden(t *testing.T) {
	b := sampleBatch()
	for _, f := range AllFormats() {
		t.Run(f.String(), func(t *testing.T) {
			got, err := Encode(f, &b)
			require.NoError(t, err)
			path := filepath.Join("testdata", goldenName(f))
			if *rewrite {
				require.NoError(t, os.WriteFile(path, []byte(hex.EncodeToString(got)+"\n"), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./events -run Golden -rewrite")
			require.Equal(t, strings.TrimSpace(string(want)), hex.EncodeToString(got))
			dec, err := Decode(got, f.Dialect)
			require.NoError(t, err)
			require.Equal(t, project(f, b), dec)
		})
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

// TestHandAssembled checks the encoders against payloads assembled byte
// by byte from the msgpack spec the way msgspec lays the engines' structs
// out (SPEC.md §4 lists them).
func TestHandAssembled(t *testing.T) {
	stored := Event{Kind: BlockStored, BlockHashes: []int64{1, 2}, TokenIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8},
		BlockSize: 4, Medium: MediumGPU}
	b := Batch{TS: 1.5, Events: []Event{stored}, DPRank: 0, HasDPRank: true}
	cases := []struct {
		f   Format
		hex string
	}{
		// [1.5, [["BlockStored", [1,2], nil, [1..8], 4, nil, "GPU", nil]], 0]
		{VLLMArray, `93 cb3ff8000000000000 91 98 ab426c6f636b53746f726564 920102 c0
			98 0102030405060708 04 c0 a3475055 c0 00`},
		// SGLang: lora_name is defaulted and last, so it is omitted.
		{SGLangArray, `93 cb3ff8000000000000 91 97 ab426c6f636b53746f726564 920102 c0
			98 0102030405060708 04 c0 a3475055 00`},
		// {"ts":1.5,"events":[{"type":"BlockStored",...}],"data_parallel_rank":0}
		{VLLMMap, `83 a27473 cb3ff8000000000000 a66576656e7473 91
			88 a474797065 ab426c6f636b53746f726564
			ac626c6f636b5f686173686573 920102
			b1706172656e745f626c6f636b5f68617368 c0
			a9746f6b656e5f696473 98 0102030405060708
			aa626c6f636b5f73697a65 04
			a76c6f72615f6964 c0
			a66d656469756d a3475055
			a96c6f72615f6e616d65 c0
			b2646174615f706172616c6c656c5f72616e6b 00`},
	}
	for _, c := range cases {
		want := mustHex(t, c.hex)
		got, err := Encode(c.f, &b)
		require.NoError(t, err)
		require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got), c.f.String())
		dec, err := Decode(want, c.f.Dialect)
		require.NoError(t, err)
		require.Equal(t, project(c.f, b), dec)
	}
}

// TestTolerantDecode: unknown keys, extra trailing elements, unknown event
// types, byte-string hashes, integer timestamps and bigram tokens.
func TestTolerantDecode(t *testing.T) {
	payload, err := msgpack.Marshal(map[string]any{
		"ts": 3,
		"events": []any{
			map[string]any{"type": "BlockStored", "block_hashes": [][]byte{{0xff, 1, 2, 3, 4, 5, 6, 7, 8}},
				"token_ids": []any{[]int{1, 2}, []int{2, 3}}, "block_size": 2, "future_field": []int{1}},
			map[string]any{"type": "BlockMoved", "block_hashes": []int{1}},
			[]any{"BlockRemoved", []int{5}, "GPU", nil, "trailing", 42},
			[]any{"AllBlocksCleared", "extra"},
		},
		"new_batch_field": "x",
	})
	require.NoError(t, err)
	b, err := Decode(payload, VLLM)
	require.NoError(t, err)
	require.Equal(t, 3.0, b.TS)
	require.Equal(t, 1, b.Skipped)
	require.Len(t, b.Events, 3)
	require.Equal(t, []int64{0x0102030405060708}, b.Events[0].BlockHashes)
	require.Equal(t, []uint32{1, 2, 2, 3}, b.Events[0].TokenIDs)
	require.False(t, b.Events[0].HasParent)
	require.Equal(t, Event{Kind: BlockRemoved, BlockHashes: []int64{5}, Medium: "GPU"}, b.Events[1])
	require.Equal(t, AllBlocksCleared, b.Events[2].Kind)
	require.False(t, b.HasDPRank)

	// Unsigned 64-bit hashes keep their bits.
	big, _ := msgpack.Marshal([]any{0.0, []any{[]any{"BlockRemoved", []uint64{1 << 63}}}})
	b, err = Decode(big, VLLM)
	require.NoError(t, err)
	require.Equal(t, int64(-1<<63), b.Events[0].BlockHashes[0])
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]any{
		"not a batch":        "hello",
		"short batch":        []any{1.0},
		"events not list":    []any{1.0, 5},
		"missing hashes":     map[string]any{"ts": 1.0, "events": []any{map[string]any{"type": "BlockRemoved"}}},
		"too few fields":     []any{1.0, []any{[]any{"BlockStored", []int{1}}}},
		"hash not int":       []any{1.0, []any{[]any{"BlockRemoved", []any{1.5}}}},
		"token out of range": []any{1.0, []any{[]any{"BlockStored", []int{1}, nil, []int64{-1}, 1, nil}}},
		"map without ts":     map[string]any{"events": []any{}},
	}
	for name, v := range cases {
		p, err := msgpack.Marshal(v)
		require.NoError(t, err)
		_, err = Decode(p, VLLM)
		var de *DecodeError
		require.ErrorAs(t, err, &de, name)
		require.ErrorIs(t, err, ErrMalformed, name)
	}
	_, err := Decode([]byte{0x93, 0xcb, 0x3f}, SGLang)
	require.ErrorIs(t, err, ErrMalformed)
	require.Contains(t, err.Error(), "ts")
}

func TestEncodeErrors(t *testing.T) {
	_, err := Encode(Format{Dialect: 7}, &Batch{})
	require.ErrorIs(t, err, ErrInvalidFormat)
	_, err = Encode(VLLMArray, &Batch{Events: []Event{{Kind: BlockStored, BlockHashes: []int64{1}}}})
	require.ErrorIs(t, err, ErrInvalidEvent)
	_, err = Encode(VLLMArray, nil)
	require.ErrorIs(t, err, ErrInvalidEvent)
}

func TestParseFormat(t *testing.T) {
	for _, f := range AllFormats() {
		g, err := ParseFormat(f.String())
		require.NoError(t, err)
		require.Equal(t, f, g)
	}
	f, err := ParseFormat("SGLang/Map")
	require.NoError(t, err)
	require.Equal(t, SGLangMap, f)
	for _, bad := range []string{"", "vllm", "trt/array", "vllm/list", "vllm/array/v9"} {
		_, err := ParseFormat(bad)
		require.ErrorIs(t, err, ErrInvalidFormat, bad)
	}
}

// TestCoreEventsRoundTrip drives a core tree with events on and checks that
// its events survive every latest format and that BlockHashes predicts the
// ids it publishes, for both conventions and with a cache salt.
func TestCoreEventsRoundTrip(t *testing.T) {
	for _, conv := range []core.HashConvention{core.HashSGLang, core.HashVLLM} {
		for _, salt := range []string{"", "tenant"} {
			tr, err := core.New(core.Config{PageSize: 4, KVEvents: true, HashConvention: conv})
			require.NoError(t, err)
			ns := core.Namespace{CacheSalt: salt}
			tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
			slots := make([]int32, len(tokens))
			for i := range slots {
				slots[i] = int32(i)
			}
			_, _, err = tr.Insert(core.InsertParams{Namespace: ns, Tokens: tokens, Slots: slots})
			require.NoError(t, err)
			_, _, err = tr.Insert(core.InsertParams{Namespace: ns, Tokens: append(tokens[:8:8], 20, 21, 22, 23),
				Slots: []int32{20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}, PrevPrefixLen: 8})
			require.NoError(t, err)
			evs, err := FromCoreEvents(tr.TakeEvents(nil))
			require.NoError(t, err)
			want, err := BlockHashes(nil, conv, salt, tokens, 4)
			require.NoError(t, err)
			require.Equal(t, want, evs[0].BlockHashes, "conv %v salt %q", conv, salt)
			b := Batch{TS: 1, Events: evs}
			for _, f := range []Format{VLLMArray, VLLMMap, SGLangArray, SGLangMap} {
				p, err := Encode(f, &b)
				require.NoError(t, err)
				d, err := Decode(p, f.Dialect)
				require.NoError(t, err)
				require.Equal(t, project(f, b), d, f.String())
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	b := sampleBatch()
	for _, fm := range AllFormats() {
		p, _ := Encode(fm, &b)
		f.Add(p, uint8(fm.Dialect))
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, uint8(0))
	f.Add([]byte{0x92, 0x00, 0x91, 0x92, 0xab}, uint8(1))
	f.Fuzz(func(t *testing.T, p []byte, d uint8) {
		dial := Dialect(d % 2)
		b, err := Decode(p, dial)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// A decoded batch re-encodes (when valid) and decodes to itself.
		valid := true
		for i := range b.Events {
			if b.Events[i].Validate() != nil {
				valid = false
			}
		}
		if !valid || b.TS != b.TS {
			return
		}
		for _, s := range []Shape{Array, Map} {
			fm := Format{Dialect: dial, Shape: s, Version: Latest}
			q, err := Encode(fm, &b)
			if err != nil {
				continue // e.g. an infinite timestamp
			}
			c, err := Decode(q, dial)
			if err != nil {
				t.Fatalf("re-decode %v: %v", fm, err)
			}
			q2, _ := Encode(fm, &c)
			if !bytes.Equal(q, q2) {
				t.Fatalf("%v not stable", fm)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	batch := sampleBatch()
	for _, f := range []Format{VLLMArray, VLLMMap} {
		p, _ := Encode(f, &batch)
		b.Run(f.String(), func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			for i := 0; i < b.N; i++ {
				if _, err := Decode(p, f.Dialect); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch.Events))/b.Elapsed().Seconds(), "events/s")
		})
	}
}
