package workload

import (
	"io"
	"sync"
)

// MooncakeStream reads a Mooncake trace ahead of its consumer: a goroutine
// of its own parses and expands the lines of a [MooncakeReader] into a
// bounded queue, so the first request is ready as soon as its own line is
// read and later lines are expanded while the consumer works on earlier
// ones. Next returns exactly what the reader's Next would, in the same
// order, errors included: a bad line is returned (as the same
// [*TraceError], naming the file, the line and the field) after every
// request before it, however far the consumer has got.
//
// A MooncakeStream is for one consumer goroutine. Close it when done, also
// after an error or io.EOF: Close stops the goroutine, and the underlying
// io.Reader is not read after Close returns.
type MooncakeStream struct {
	items chan streamItem
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	last streamItem // the last item Next returned
	end  bool       // last.err is set: Next keeps returning it
}

// streamItem is one request (with the line it came from and the bytes of
// the trace read through that line), or the error that ends the stream.
type streamItem struct {
	req    Request
	line   int
	offset int64
	err    error
}

// DefaultAhead is the number of requests a [MooncakeStream] parses ahead
// of its consumer when asked for 0 or fewer.
const DefaultAhead = 64

// Stream starts reading m ahead of its consumer, at most ahead requests
// (DefaultAhead when ahead <= 0); m's limits apply. m must not be used
// directly afterwards.
func (m *MooncakeReader) Stream(ahead int) *MooncakeStream {
	if ahead <= 0 {
		ahead = DefaultAhead
	}
	s := &MooncakeStream{
		items: make(chan streamItem, ahead),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go s.produce(m)
	return s
}

// produce sends m's requests, then its final error (io.EOF at the end).
func (s *MooncakeStream) produce(m *MooncakeReader) {
	defer close(s.done)
	for {
		req, err := m.Next()
		it := streamItem{req: req, line: m.Line(), offset: m.Offset(), err: err}
		select {
		case s.items <- it:
		case <-s.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// Next returns the next request, io.EOF at the end of the trace, or the
// error of the first bad line (or of the underlying reader); after an
// error or io.EOF it keeps returning it.
func (s *MooncakeStream) Next() (Request, error) {
	if s.end {
		return Request{}, s.last.err
	}
	it, ok := <-s.items
	if !ok { // cannot happen: the producer never closes items
		it.err = io.ErrUnexpectedEOF
	}
	s.last = it
	if it.err != nil {
		s.end = true
		s.last.req = Request{}
	}
	return s.last.req, s.last.err
}

// Line returns the 1-based line number of the request (or error) Next
// returned last: on a [*TraceError], the bad line.
func (s *MooncakeStream) Line() int { return s.last.line }

// Offset returns the bytes of the trace read through the line of the
// request Next returned last (a measure of progress through the file).
func (s *MooncakeStream) Offset() int64 { return s.last.offset }

// Close stops the reading goroutine and waits for it to end. It is safe to
// call more than once.
func (s *MooncakeStream) Close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}
