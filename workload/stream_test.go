package workload

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// readResult is everything a reader or a stream gives: the requests, the
// line and offset after each, and the error that ended it (nil at io.EOF).
type readResult struct {
	reqs    []Request
	lines   []int
	offsets []int64
	err     error
	errLine int
}

// readAll drains a MooncakeReader.
func readAll(m *MooncakeReader) readResult {
	var res readResult
	for {
		req, err := m.Next()
		if err != nil {
			if err != io.EOF {
				res.err, res.errLine = err, m.Line()
			}
			return res
		}
		res.reqs = append(res.reqs, req)
		res.lines = append(res.lines, m.Line())
		res.offsets = append(res.offsets, m.Offset())
	}
}

// streamAll drains a Stream and checks that its error is sticky.
func streamAll(t *testing.T, s *Stream) readResult {
	t.Helper()
	defer s.Close()
	var res readResult
	for {
		req, err := s.Next()
		if err != nil {
			if err != io.EOF {
				res.err, res.errLine = err, s.Line()
			}
			_, again := s.Next()
			require.Equal(t, err, again, "the stream's error is sticky")
			return res
		}
		res.reqs = append(res.reqs, req)
		res.lines = append(res.lines, s.Line())
		res.offsets = append(res.offsets, s.Offset())
	}
}

// requireSameRead checks that streaming in gives what reading it gives,
// for several queue lengths, with and without limits.
func requireSameRead(t *testing.T, in string, perRequest, total int64) readResult {
	t.Helper()
	want := func() readResult {
		m := NewMooncakeReader(strings.NewReader(in), "t.jsonl")
		m.Limit(perRequest, total)
		return readAll(m)
	}()
	for _, ahead := range []int{0, 1, 3, 1000} {
		for _, half := range []bool{false, true} {
			var r io.Reader = strings.NewReader(in)
			if half {
				r = iotest.HalfReader(r)
			}
			m := NewMooncakeReader(r, "t.jsonl")
			m.Limit(perRequest, total)
			got := streamAll(t, m.Stream(ahead))
			require.Equal(t, want.reqs, got.reqs, "ahead %d", ahead)
			require.Equal(t, want.lines, got.lines)
			require.Equal(t, want.offsets, got.offsets)
			require.Equal(t, want.errLine, got.errLine)
			if want.err == nil {
				require.NoError(t, got.err)
			} else {
				require.EqualError(t, got.err, want.err.Error())
			}
		}
	}
	return want
}

// mooncakeText writes reqs as a Mooncake trace whose hash_ids are small
// ids numbering the distinct blocks of reqs' HashIDs in order of first
// appearance, so that the trace shares blocks exactly as reqs do. Some
// blank lines and a missing final newline exercise the line reader.
func mooncakeText(reqs []Request) string {
	ids := map[int64]int64{}
	var sb strings.Builder
	for k, r := range reqs {
		fmt.Fprintf(&sb, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, r.Timestamp, len(r.Tokens), r.OutputLength)
		for i, h := range r.HashIDs {
			id, ok := ids[h]
			if !ok {
				id = int64(len(ids))
				ids[h] = id
			}
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprint(&sb, id)
		}
		sb.WriteString("]}")
		if k%7 == 3 {
			sb.WriteString("\n  ")
		}
		if k < len(reqs)-1 {
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func TestStream_SameAsReader_Generated(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		cfg := DefaultGenConfig()
		cfg.Seed, cfg.Requests = seed, 300
		reqs, err := Generate(cfg)
		require.NoError(t, err)
		in := mooncakeText(reqs)
		res := requireSameRead(t, in, 0, 0)
		require.NoError(t, res.err)
		require.Len(t, res.reqs, len(reqs))
		for k := range reqs {
			require.Len(t, res.reqs[k].Tokens, len(reqs[k].Tokens))
		}
		require.Equal(t, int64(len(in)), res.offsets[len(res.offsets)-1])
	}
}

func TestStream_SameAsReader_SharedTrace(t *testing.T) {
	data, err := os.ReadFile(sharedTrace)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("shared trace %s not present", sharedTrace)
	}
	require.NoError(t, err)
	want, err := ReadMooncake(strings.NewReader(string(data)), "t.jsonl")
	require.NoError(t, err)
	m := NewMooncakeReader(strings.NewReader(string(data)), "t.jsonl")
	got := streamAll(t, m.Stream(0))
	require.NoError(t, got.err)
	require.Len(t, got.reqs, len(want))
	for k := range want {
		w, g := want[k], got.reqs[k]
		require.True(t, w.Timestamp == g.Timestamp && w.InputLength == g.InputLength && w.OutputLength == g.OutputLength &&
			slices.Equal(w.HashIDs, g.HashIDs) && slices.Equal(w.Tokens, g.Tokens) && w.Namespace == g.Namespace, "request %d", k)
	}
	require.Equal(t, int64(len(data)), got.offsets[len(got.offsets)-1])
	for k, line := range got.lines {
		require.Equal(t, k+1, line, "the shared trace has no blank lines")
	}
}

func TestStream_BadInput(t *testing.T) {
	good := `{"timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}`
	lines := func(bad string, at int) string {
		var sb strings.Builder
		for i := 1; i <= at+3; i++ {
			switch {
			case i == at:
				sb.WriteString(bad)
			case i%5 == 0:
				// blank
			default:
				sb.WriteString(good)
			}
			sb.WriteString("\n")
		}
		return sb.String()
	}
	for _, tc := range []struct {
		name, bad  string
		perRequest int64
		total      int64
		want       string
	}{
		{name: "not json", bad: `{"timestamp": 1,`, want: "invalid JSON"},
		{name: "missing field", bad: `{"timestamp": 1, "input_length": 1, "hash_ids": [0]}`, want: `missing field "output_length"`},
		{name: "bad length", bad: `{"timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [0]}`, want: "input_length 600 does not fit 1 hash_ids"},
		{name: "too large", bad: `{"timestamp": 1, "input_length": 1500, "output_length": 2, "hash_ids": [0, 1, 2]}`, perRequest: 1000, want: "input_length 1500: more than the run can hold"},
		{name: "trace too large", bad: good, total: 600*37 + 100, want: "input_length 600: more than the run can hold: the trace's requests up to here hold 22800 tokens, past the 22300"},
		{name: "line too long", bad: `{"pad": "` + strings.Repeat("x", 200_000) + `"}`, perRequest: 1000, want: "line longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bad line comes after 37 good requests.
			at := 47
			in := lines(tc.bad, at)
			res := requireSameRead(t, in, tc.perRequest, tc.total)
			require.Len(t, res.reqs, 37)
			require.ErrorIs(t, res.err, ErrMalformedTrace)
			require.ErrorContains(t, res.err, fmt.Sprintf("workload: t.jsonl:%d: %s", at, tc.want))
			var te *TraceError
			require.ErrorAs(t, res.err, &te)
			require.Equal(t, at, te.Line)
			require.Equal(t, at, res.errLine)
		})
	}
}

func TestStream_ReadError(t *testing.T) {
	boom := errors.New("boom")
	good := `{"timestamp": 1, "input_length": 1, "output_length": 2, "hash_ids": [0]}` + "\n"
	r := io.MultiReader(strings.NewReader(good+good), iotest.ErrReader(boom))
	got := streamAll(t, NewMooncakeReader(r, "x.jsonl").Stream(1))
	require.Len(t, got.reqs, 2)
	require.ErrorIs(t, got.err, boom)
	require.NotErrorIs(t, got.err, ErrMalformedTrace)
	require.ErrorContains(t, got.err, "workload: x.jsonl: line 3")
}

func TestStream_Empty(t *testing.T) {
	for _, in := range []string{"", "\n \n"} {
		got := streamAll(t, NewMooncakeReader(strings.NewReader(in), "e").Stream(0))
		require.NoError(t, got.err)
		require.Empty(t, got.reqs)
	}
}

// blockingReader hands out its data, then blocks until released.
type blockingReader struct {
	data    []byte
	release chan struct{}
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		<-b.release
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// TestStream_FirstBeforeRest: the first request is returned while
// the rest of the trace has not even arrived, and Close stops a producer
// that is still running ahead.
func TestStream_FirstBeforeRest(t *testing.T) {
	line := `{"timestamp": 1, "input_length": 1, "output_length": 2, "hash_ids": [0]}` + "\n"
	br := &blockingReader{data: []byte(line), release: make(chan struct{})}
	s := NewMooncakeReader(br, "slow").Stream(1)
	req, err := s.Next()
	require.NoError(t, err)
	require.Equal(t, []uint32{0}, req.Tokens)
	require.Equal(t, 1, s.Line())
	close(br.release)
	_, err = s.Next()
	require.Equal(t, io.EOF, err)
	s.Close()
	s.Close()

	// A producer blocked on a full queue stops at Close.
	s = NewMooncakeReader(strings.NewReader(strings.Repeat(line, 100)), "many").Stream(1)
	_, err = s.Next()
	require.NoError(t, err)
	s.Close()
}

func BenchmarkStream_SharedTrace(b *testing.B) {
	data, err := os.ReadFile(sharedTrace)
	if errors.Is(err, os.ErrNotExist) {
		b.Skipf("shared trace %s not present", sharedTrace)
	}
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s := NewMooncakeReader(strings.NewReader(string(data)), "trace").Stream(0)
		n := 0
		for {
			_, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		s.Close()
		if n != 3993 {
			b.Fatal(n)
		}
	}
}

// TestGenerateStream: the generator on its goroutine gives Generate's
// requests, in order, then io.EOF; an invalid configuration fails at once.
func TestGenerateStream(t *testing.T) {
	for _, tc := range []struct {
		seed                     uint64
		requests, tenants, ahead int
	}{
		{1, 2000, 0, 0}, {7, 300, 3, 1}, {9, 1, 0, 5},
	} {
		cfg := DefaultGenConfig()
		cfg.Seed, cfg.Requests, cfg.Tenants = tc.seed, tc.requests, tc.tenants
		want, err := Generate(cfg)
		require.NoError(t, err)
		s, err := GenerateStream(cfg, tc.ahead)
		require.NoError(t, err)
		got := streamAll(t, s)
		require.NoError(t, got.err)
		require.Equal(t, want, got.reqs)
	}
	cfg := DefaultGenConfig()
	cfg.Requests = 0
	_, err := GenerateStream(cfg, 0)
	_, want := Generate(cfg)
	require.Error(t, err)
	require.EqualError(t, err, want.Error())
}
