package workload

import (
	"io"
	"sync"
)

// Stream produces a workload's requests ahead of its consumer: a goroutine
// of its own fills a bounded queue, so the first request is ready as soon
// as it is made and later ones are made while the consumer works on
// earlier ones. [MooncakeReader.Stream] parses and expands a trace's lines
// this way: Next returns exactly what the reader's Next would, in the same
// order, errors included, so a bad line is returned (as the same
// [*TraceError], naming the file, the line and the field) after every
// request before it, however far the consumer has got. [GenerateStream]
// runs the built-in generator this way.
//
// A Stream is for one consumer goroutine. Close it when done, also
// after an error or io.EOF: Close stops the goroutine, and the underlying
// io.Reader is not read after Close returns.
type Stream struct {
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

// DefaultAhead is the number of requests a [Stream] makes ahead of its
// consumer when asked for 0 or fewer.
const DefaultAhead = 64

// Stream starts reading m ahead of its consumer, at most ahead requests
// (DefaultAhead when ahead <= 0); m's limits apply. m must not be used
// directly afterwards.
func (m *MooncakeReader) Stream(ahead int) *Stream {
	return newStream(ahead, func() streamItem {
		req, err := m.Next()
		return streamItem{req: req, line: m.Line(), offset: m.Offset(), err: err}
	})
}

// GenerateStream is [Generate] on a goroutine of its own, ahead of the
// consumer (at most ahead requests; DefaultAhead when ahead <= 0): the same
// requests in the same order, then io.EOF. An invalid cfg fails here, as
// Generate would. Line and Offset are 0.
func GenerateStream(cfg GenConfig, ahead int) (*Stream, error) {
	st, err := newGenState(cfg)
	if err != nil {
		return nil, err
	}
	return newStream(ahead, func() streamItem {
		r, ok := st.next()
		if !ok {
			return streamItem{err: io.EOF}
		}
		return streamItem{req: r}
	}), nil
}

// newStream starts a goroutine that queues what next makes until an
// item with an error.
func newStream(ahead int, next func() streamItem) *Stream {
	if ahead <= 0 {
		ahead = DefaultAhead
	}
	s := &Stream{
		items: make(chan streamItem, ahead),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go s.produce(next)
	return s
}

// produce sends next's items, up to and including the first with an
// error (io.EOF at the end).
func (s *Stream) produce(next func() streamItem) {
	defer close(s.done)
	for {
		it := next()
		err := it.err
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
func (s *Stream) Next() (Request, error) {
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

// Line returns the 1-based trace line of the request (or error) Next
// returned last: on a [*TraceError], the bad line (0 for a generated
// workload).
func (s *Stream) Line() int { return s.last.line }

// Offset returns the bytes of the trace read through the line of the
// request Next returned last (a measure of progress through the file).
func (s *Stream) Offset() int64 { return s.last.offset }

// Close stops the reading goroutine and waits for it to end. It is safe to
// call more than once.
func (s *Stream) Close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}
