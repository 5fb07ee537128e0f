package workload

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

const sharedTrace = "../../shared/traces/mooncake_synthetic_trace.jsonl"

func TestExpandTokens(t *testing.T) {
	got, err := ExpandTokens(nil, []int64{0, 3, 7}, 512+512+5)
	require.NoError(t, err)
	require.Len(t, got, 1029)
	for j := range 512 {
		require.Equal(t, uint32(j), got[j])
		require.Equal(t, uint32(3*512+j), got[512+j])
	}
	require.Equal(t, []uint32{7 * 512, 7*512 + 1, 7*512 + 2, 7*512 + 3, 7*512 + 4}, got[1024:])

	// Append style: dst's contents are kept.
	got, err = ExpandTokens([]uint32{42}, []int64{1}, 2)
	require.NoError(t, err)
	require.Equal(t, []uint32{42, 512, 513}, got)

	// A full last block, and the largest id that fits.
	got, err = ExpandTokens(nil, []int64{maxHashID}, 512)
	require.NoError(t, err)
	require.Equal(t, uint32(1<<32-1), got[511])

	got, err = ExpandTokens(nil, nil, 0)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestExpandTokens_Errors(t *testing.T) {
	for _, tc := range []struct {
		ids  []int64
		n    int
		want string
	}{
		{nil, 1, "input_length 1 with no hash_ids"},
		{[]int64{1}, 0, "input_length 0 does not fit 1 hash_ids of 512 tokens"},
		{[]int64{1}, 513, "input_length 513 does not fit 1 hash_ids of 512 tokens"},
		{[]int64{1, 2}, 512, "input_length 512 does not fit 2 hash_ids of 512 tokens"},
		{[]int64{1, -2}, 600, "negative hash_ids[1] -2"},
		{[]int64{maxHashID + 1}, 1, "hash_ids[0] 8388608 overflows uint32 token ids"},
		{[]int64{1}, -1, "negative input_length -1"},
	} {
		dst := []uint32{9}
		got, err := ExpandTokens(dst, tc.ids, tc.n)
		require.ErrorIs(t, err, ErrMalformedTrace)
		require.ErrorContains(t, err, tc.want)
		require.True(t, strings.HasPrefix(err.Error(), "workload: "), err.Error())
		require.Equal(t, dst, got)
	}
}

func TestReadMooncake(t *testing.T) {
	in := "\n" +
		`{"timestamp": 5, "input_length": 514, "output_length": 7, "hash_ids": [2, 9]}` + "\r\n" +
		"   \n" +
		`{"timestamp": 6, "input_length": 0, "output_length": 1, "hash_ids": [], "extra": "ignored"}` + "\n" +
		`{"timestamp": 9, "input_length": 3, "output_length": 0, "hash_ids": [4]}` // no final newline
	reqs, err := ReadMooncake(strings.NewReader(in), "t.jsonl")
	require.NoError(t, err)
	require.Len(t, reqs, 3)

	require.Equal(t, int64(5), reqs[0].Timestamp)
	require.Equal(t, 514, reqs[0].InputLength)
	require.Equal(t, 7, reqs[0].OutputLength)
	require.Equal(t, []int64{2, 9}, reqs[0].HashIDs)
	require.Len(t, reqs[0].Tokens, 514)
	require.Equal(t, uint32(1024), reqs[0].Tokens[0])
	require.Equal(t, []uint32{9 * 512, 9*512 + 1}, reqs[0].Tokens[512:])
	require.Empty(t, reqs[0].Namespace)

	require.Equal(t, 0, reqs[1].InputLength)
	require.Empty(t, reqs[1].Tokens)
	require.Equal(t, []uint32{2048, 2049, 2050}, reqs[2].Tokens)
}

func TestReadMooncake_Empty(t *testing.T) {
	for _, in := range []string{"", "\n\n  \n"} {
		reqs, err := ReadMooncake(strings.NewReader(in), "empty.jsonl")
		require.NoError(t, err)
		require.Empty(t, reqs)
	}
}

func TestReadMooncake_Errors(t *testing.T) {
	good := `{"timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}`
	for _, tc := range []struct {
		name, line, want string
	}{
		{"not json", `{"timestamp": 1,`, "invalid JSON"},
		{"not an object", `[1, 2]`, "invalid JSON"},
		{"float", `{"timestamp": 1.5, "input_length": 1, "output_length": 2, "hash_ids": [0]}`, "invalid JSON"},
		{"string id", `{"timestamp": 1, "input_length": 1, "output_length": 2, "hash_ids": ["a"]}`, "invalid JSON"},
		{"missing timestamp", `{"input_length": 1, "output_length": 2, "hash_ids": [0]}`, `missing field "timestamp"`},
		{"missing input_length", `{"timestamp": 1, "output_length": 2, "hash_ids": [0]}`, `missing field "input_length"`},
		{"missing output_length", `{"timestamp": 1, "input_length": 1, "hash_ids": [0]}`, `missing field "output_length"`},
		{"missing hash_ids", `{"timestamp": 1, "input_length": 1, "output_length": 2}`, `missing field "hash_ids"`},
		{"null hash_ids", `{"timestamp": 1, "input_length": 1, "output_length": 2, "hash_ids": null}`, `missing field "hash_ids"`},
		{"null", `null`, `missing field "timestamp"`},
		{"negative timestamp", `{"timestamp": -1, "input_length": 1, "output_length": 2, "hash_ids": [0]}`, "negative timestamp -1"},
		{"negative input_length", `{"timestamp": 1, "input_length": -1, "output_length": 2, "hash_ids": [0]}`, "negative input_length -1"},
		{"negative output_length", `{"timestamp": 1, "input_length": 1, "output_length": -2, "hash_ids": [0]}`, "negative output_length -2"},
		{"huge output_length", `{"timestamp": 1, "input_length": 1, "output_length": 99999999999, "hash_ids": [0]}`, "output_length 99999999999 too large"},
		{"negative hash id", `{"timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [0, -3]}`, "negative hash_ids[1] -3"},
		{"empty hash_ids", `{"timestamp": 1, "input_length": 5, "output_length": 2, "hash_ids": []}`, "input_length 5 with no hash_ids"},
		{"last block too long", `{"timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [0]}`, "input_length 600 does not fit 1 hash_ids of 512 tokens"},
		{"last block empty", `{"timestamp": 1, "input_length": 512, "output_length": 2, "hash_ids": [0, 1]}`, "input_length 512 does not fit 2 hash_ids of 512 tokens"},
		{"zero input with ids", `{"timestamp": 1, "input_length": 0, "output_length": 2, "hash_ids": [0]}`, "input_length 0 does not fit 1 hash_ids of 512 tokens"},
		{"overflow", `{"timestamp": 1, "input_length": 1, "output_length": 2, "hash_ids": [8388608]}`, "hash_ids[0] 8388608 overflows uint32 token ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bad line is line 4: a good line, a blank line, a good line.
			in := good + "\n\n" + good + "\n" + tc.line + "\n" + good + "\n"
			_, err := ReadMooncake(strings.NewReader(in), "trace.jsonl")
			require.ErrorIs(t, err, ErrMalformedTrace)
			require.ErrorContains(t, err, "workload: trace.jsonl:4: "+tc.want)
			var te *TraceError
			require.ErrorAs(t, err, &te)
			require.Equal(t, "trace.jsonl", te.Name)
			require.Equal(t, 4, te.Line)
		})
	}
}

func TestTraceError_Message(t *testing.T) {
	in := strings.Repeat("\n", 16) + `{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [3]}`
	_, err := ReadMooncake(strings.NewReader(in), "trace.jsonl")
	require.EqualError(t, err, "workload: trace.jsonl:17: input_length 600 does not fit 1 hash_ids of 512 tokens")
}

func TestMooncakeReader_Next(t *testing.T) {
	in := `{"timestamp": 1, "input_length": 1, "output_length": 2, "hash_ids": [0]}` + "\n" +
		`{"timestamp": 2, "input_length": 1, "output_length": 2, "hash_ids": [-1]}` + "\n"
	r := NewMooncakeReader(strings.NewReader(in), "x")
	req, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, int64(1), req.Timestamp)
	require.Equal(t, 1, r.Line())
	_, err = r.Next()
	require.ErrorIs(t, err, ErrMalformedTrace)
	_, err2 := r.Next()
	require.Equal(t, err, err2, "errors are sticky")

	r = NewMooncakeReader(strings.NewReader(""), "x")
	for range 2 {
		_, err = r.Next()
		require.Equal(t, io.EOF, err)
	}
}

func TestMooncakeReader_LongLines(t *testing.T) {
	// Lines far longer than the reader's buffer (padded with an unknown
	// field), read in full and a few bytes at a time.
	const blocks = 20_000
	pad := strings.Repeat("x", 300_000)
	var sb strings.Builder
	for line := range 3 {
		fmt.Fprintf(&sb, `{"pad": %q, "timestamp": %d, "input_length": %d, "output_length": 1, "hash_ids": [`, pad, line, blocks*512-line)
		for i := range blocks {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprint(&sb, 8_000_000+i+line)
		}
		sb.WriteString("]}\n")
	}
	in := sb.String()
	require.Greater(t, len(in)/3, 400_000)
	for _, r := range []io.Reader{strings.NewReader(in), iotest.HalfReader(strings.NewReader(in))} {
		reqs, err := ReadMooncake(r, "long.jsonl")
		require.NoError(t, err)
		require.Len(t, reqs, 3)
		for line, req := range reqs {
			require.Len(t, req.HashIDs, blocks)
			require.Len(t, req.Tokens, blocks*512-line)
			require.Equal(t, uint32((8_000_000+line)*512), req.Tokens[0])
		}
	}
}

func TestMooncakeReader_ReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(`{"timestamp": 1, "input_length": 1, "output_length": 2, "hash_ids": [0]}`+"\n"), iotest.ErrReader(boom))
	_, err := ReadMooncake(r, "x.jsonl")
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, ErrMalformedTrace)
	require.ErrorContains(t, err, "workload: x.jsonl")
}

func openSharedTrace(tb testing.TB) *os.File {
	tb.Helper()
	f, err := os.Open(sharedTrace)
	if errors.Is(err, os.ErrNotExist) {
		tb.Skipf("shared trace %s not present", sharedTrace)
	}
	require.NoError(tb, err)
	tb.Cleanup(func() { f.Close() })
	return f
}

func TestReadMooncake_SharedTrace(t *testing.T) {
	f := openSharedTrace(t)
	reqs, err := ReadMooncake(f, "mooncake_synthetic_trace.jsonl")
	require.NoError(t, err)
	require.Len(t, reqs, 3993)
	var prev int64
	for _, r := range reqs {
		require.Len(t, r.Tokens, r.InputLength)
		require.GreaterOrEqual(t, r.Timestamp, prev)
		prev = r.Timestamp
	}
}

func BenchmarkReadMooncake_SharedTrace(b *testing.B) {
	data, err := os.ReadFile(sharedTrace)
	if errors.Is(err, os.ErrNotExist) {
		b.Skipf("shared trace %s not present", sharedTrace)
	}
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		reqs, err := ReadMooncake(strings.NewReader(string(data)), "trace")
		if err != nil || len(reqs) != 3993 {
			b.Fatal(len(reqs), err)
		}
	}
}

func FuzzReadMooncake(f *testing.F) {
	f.Add([]byte(`{"timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}` + "\n"))
	f.Add([]byte("\n{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 0, \"hash_ids\": []}"))
	f.Add([]byte(`{"timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [0]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<12 {
			return
		}
		reqs, err := ReadMooncake(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrMalformedTrace) || !strings.HasPrefix(err.Error(), "workload: fuzz:") {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for _, r := range reqs {
			want, err := ExpandTokens(nil, r.HashIDs, r.InputLength)
			if err != nil || len(r.Tokens) != r.InputLength || fmt.Sprint(want) != fmt.Sprint(r.Tokens) {
				t.Fatalf("request %+v does not round-trip: %v", r, err)
			}
		}
	})
}
