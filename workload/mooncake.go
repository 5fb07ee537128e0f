package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// BlockTokens is the number of tokens one Mooncake hash_id stands for.
const BlockTokens = 512

// Request is one request of a workload.
type Request struct {
	// Timestamp is the arrival time in milliseconds from the start of the
	// workload.
	Timestamp int64
	// InputLength is the number of input (prompt) tokens, len(Tokens).
	InputLength int
	// OutputLength is the number of tokens the request generates.
	OutputLength int
	// HashIDs names the input in blocks of [BlockTokens] tokens, the last
	// possibly shorter.
	HashIDs []int64
	// Tokens are the input tokens. They may share memory with other requests'
	// Tokens and must not be modified.
	Tokens []uint32
	// Namespace is the tenant the request belongs to; empty when the
	// workload has no tenants (as Mooncake traces have none).
	Namespace string
}

// ErrMalformedTrace is matched (with [errors.Is]) by every error that reports
// an invalid trace line or an inconsistent input_length and hash_ids.
var ErrMalformedTrace = errors.New("workload: malformed trace")

// ErrTooLarge is matched by the [*TraceError] of a line that claims more
// tokens than the reader's [MooncakeReader.Limit] allows.
var ErrTooLarge = errors.New("more than the run can hold")

// TraceError reports an invalid line of a trace. It matches
// [ErrMalformedTrace].
type TraceError struct {
	Name string // the trace's name, as given to the reader
	Line int    // 1-based line number
	Err  error  // what is wrong with the line
}

func (e *TraceError) Error() string {
	return fmt.Sprintf("workload: %s:%d: %v", e.Name, e.Line, e.Err)
}

// Unwrap returns [ErrMalformedTrace] and the underlying problem.
func (e *TraceError) Unwrap() []error { return []error{ErrMalformedTrace, e.Err} }

// maxHashID is the largest hash_id whose block fits in uint32 token ids.
const maxHashID = (math.MaxUint32 - (BlockTokens - 1)) / BlockTokens

// ExpandTokens appends to dst the inputLength tokens named by hashIDs and
// returns the extended slice. Block h at offset j is the token
// uint32(h*512 + j); every block holds 512 tokens except the last, which
// holds inputLength - 512*(len(hashIDs)-1), a number that must be in 1..512.
// With no hashIDs, inputLength must be 0. On error, which matches
// [ErrMalformedTrace], dst is returned unchanged.
func ExpandTokens(dst []uint32, hashIDs []int64, inputLength int) ([]uint32, error) {
	out, err := expand(dst, hashIDs, inputLength)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrMalformedTrace, err)
	}
	return out, nil
}

// expand is ExpandTokens with errors that carry no prefix.
func expand(dst []uint32, hashIDs []int64, inputLength int) ([]uint32, error) {
	if inputLength < 0 {
		return dst, fmt.Errorf("negative input_length %d", inputLength)
	}
	n := len(hashIDs)
	if n == 0 {
		if inputLength > 0 {
			return dst, fmt.Errorf("input_length %d with no hash_ids", inputLength)
		}
		return dst, nil
	}
	last := inputLength - BlockTokens*(n-1)
	if last < 1 || last > BlockTokens {
		return dst, fmt.Errorf("input_length %d does not fit %d hash_ids of %d tokens", inputLength, n, BlockTokens)
	}
	for i, h := range hashIDs {
		if h < 0 {
			return dst, fmt.Errorf("negative hash_ids[%d] %d", i, h)
		}
		if h > maxHashID {
			return dst, fmt.Errorf("hash_ids[%d] %d overflows uint32 token ids", i, h)
		}
	}
	start := len(dst)
	dst = grow(dst, inputLength)
	out := dst[start : start+inputLength]
	for i, h := range hashIDs {
		block := out[i*BlockTokens:]
		if i == n-1 {
			block = block[:last]
		} else {
			block = block[:BlockTokens]
		}
		base := uint32(h) * BlockTokens
		for j := range block {
			block[j] = base + uint32(j)
		}
	}
	return dst, nil
}

// grow extends s by n elements, reallocating at most once.
func grow(s []uint32, n int) []uint32 {
	if cap(s)-len(s) < n {
		t := make([]uint32, len(s), len(s)+n)
		copy(t, s)
		s = t
	}
	return s[:len(s)+n]
}

// ReadMooncake reads a whole Mooncake-format JSONL trace. name identifies the
// trace in error messages (a file name, usually). An empty trace gives no
// requests and no error. See [MooncakeReader] for the rules a line follows.
func ReadMooncake(r io.Reader, name string) ([]Request, error) {
	mr := NewMooncakeReader(r, name)
	var reqs []Request
	for {
		req, err := mr.Next()
		if err == io.EOF {
			return reqs, nil
		}
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, req)
	}
}

// MooncakeReader reads the requests of a Mooncake-format JSONL trace one at a
// time. Each returned Request owns its HashIDs and Tokens.
type MooncakeReader struct {
	br   *bufio.Reader
	name string
	line int
	off  int64  // bytes read through the last line
	buf  []byte // the current line when it outgrows br's buffer
	err  error  // sticky: io.EOF or the first error

	maxTokens   int64 // per request; 0: no limit
	totalTokens int64 // over the whole trace; 0: no limit
	total       int64 // tokens returned so far
}

// Limit bounds what the reader expands, so that a line claiming more than
// a run can hold fails before its tokens are allocated: perRequest bounds
// each request's input_length (a line longer than such a request's
// hash_ids could be is refused before it is parsed), total the input
// tokens of the whole trace. 0 means no limit. The errors are
// [*TraceError]s naming the line and the field.
func (m *MooncakeReader) Limit(perRequest, total int64) {
	m.maxTokens, m.totalTokens = max(perRequest, 0), max(total, 0)
}

// maxLineBytes is the longest line a request of m.maxTokens tokens can
// take: its hash_ids (at most 21 bytes each with the separator) and
// generous room for the other fields and spacing.
func (m *MooncakeReader) maxLineBytes() int64 {
	if m.maxTokens == 0 {
		return 0
	}
	return 4096 + 24*(m.maxTokens/BlockTokens+1)
}

// NewMooncakeReader returns a reader of the trace in r; name identifies the
// trace in error messages.
func NewMooncakeReader(r io.Reader, name string) *MooncakeReader {
	return &MooncakeReader{br: bufio.NewReaderSize(r, 64<<10), name: name}
}

// Line returns the 1-based number of the last line read.
func (m *MooncakeReader) Line() int { return m.line }

// Offset returns the number of bytes of the trace read through the last
// line read, its newline included.
func (m *MooncakeReader) Offset() int64 { return m.off }

// mooncakeLine is one trace line; nil fields were absent (or null).
type mooncakeLine struct {
	Timestamp    *int64  `json:"timestamp"`
	InputLength  *int64  `json:"input_length"`
	OutputLength *int64  `json:"output_length"`
	HashIDs      []int64 `json:"hash_ids"`
}

// Next returns the next request, skipping blank lines. At the end of the
// trace it returns io.EOF. An invalid line gives a [*TraceError]; a failure
// of the underlying reader is returned wrapped. After an error, Next keeps
// returning that error.
func (m *MooncakeReader) Next() (Request, error) {
	for m.err == nil {
		line, err := m.readLine()
		if err != nil {
			m.err = err
			break
		}
		m.line++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, err := m.parse(line)
		if err != nil {
			m.err = &TraceError{Name: m.name, Line: m.line, Err: err}
			break
		}
		return req, nil
	}
	return Request{}, m.err
}

// readLine returns the next line without its newline, valid until the next
// call; io.EOF when no line is left.
func (m *MooncakeReader) readLine() ([]byte, error) {
	m.buf = m.buf[:0]
	for {
		chunk, err := m.br.ReadSlice('\n')
		m.off += int64(len(chunk))
		switch err {
		case nil:
			if len(m.buf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			m.buf = append(m.buf, chunk[:len(chunk)-1]...)
			return m.buf, nil
		case bufio.ErrBufferFull:
			m.buf = append(m.buf, chunk...)
			if lim := m.maxLineBytes(); lim > 0 && int64(len(m.buf)) > lim {
				m.line++
				return nil, &TraceError{Name: m.name, Line: m.line, Err: fmt.Errorf(
					"line longer than %d bytes: %w: the hash_ids of a request of at most %d tokens take less", lim, ErrTooLarge, m.maxTokens)}
			}
		case io.EOF:
			m.buf = append(m.buf, chunk...)
			if len(m.buf) == 0 {
				return nil, io.EOF
			}
			return m.buf, nil // last line, without a newline
		default:
			return nil, fmt.Errorf("workload: %s: line %d: %w", m.name, m.line+1, err)
		}
	}
}

func (m *MooncakeReader) parse(line []byte) (Request, error) {
	var l mooncakeLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Request{}, fmt.Errorf("invalid JSON: %v", err)
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{
		{"timestamp", l.Timestamp},
		{"input_length", l.InputLength},
		{"output_length", l.OutputLength},
	} {
		if f.v == nil {
			return Request{}, fmt.Errorf("missing field %q", f.name)
		}
		if *f.v < 0 {
			return Request{}, fmt.Errorf("negative %s %d", f.name, *f.v)
		}
		if *f.v > math.MaxInt32 && f.v != l.Timestamp {
			return Request{}, fmt.Errorf("%s %d too large", f.name, *f.v)
		}
	}
	if l.HashIDs == nil {
		return Request{}, fmt.Errorf("missing field %q", "hash_ids")
	}
	if m.maxTokens > 0 && *l.InputLength > m.maxTokens {
		return Request{}, fmt.Errorf("input_length %d: %w: a request may have at most %d tokens", *l.InputLength, ErrTooLarge, m.maxTokens)
	}
	if m.totalTokens > 0 && m.total+*l.InputLength > m.totalTokens {
		return Request{}, fmt.Errorf("input_length %d: %w: the trace's requests up to here hold %d tokens, past the %d it can keep in memory", *l.InputLength, ErrTooLarge, m.total+*l.InputLength, m.totalTokens)
	}
	in := int(*l.InputLength)
	var tokens []uint32
	if in > 0 {
		tokens = make([]uint32, 0, in)
	}
	tokens, err := expand(tokens, l.HashIDs, in)
	if err != nil {
		return Request{}, err
	}
	m.total += int64(in)
	return Request{
		Timestamp:    *l.Timestamp,
		InputLength:  in,
		OutputLength: int(*l.OutputLength),
		HashIDs:      l.HashIDs,
		Tokens:       tokens,
	}, nil
}
