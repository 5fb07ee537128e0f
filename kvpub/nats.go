package kvpub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/router"
)

// Defaults of the NATS transport.
const (
	DefaultStream        = "RADIXKV_KV"
	DefaultSubjectPrefix = "radixkv.kv"
	DefaultDurable       = "radixkv-router"
)

// Header names of radixkv's JetStream messages.
const (
	HeaderWorker = "Radixkv-Worker"
	HeaderSeq    = "Radixkv-Seq"
	HeaderEpoch  = "Radixkv-Epoch"
	HeaderFormat = "Radixkv-Format"
)

// ErrQueued reports a batch that could not be published yet: it stays
// queued, in order, and goes out with the next Publish or Flush.
var ErrQueued = errors.New("kvpub: batch queued (JetStream unavailable)")

// token makes s usable as one subject token.
func token(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// Subject returns the subject of a model's worker: prefix.model.worker.
func Subject(prefix, model, worker string) string {
	if prefix == "" {
		prefix = DefaultSubjectPrefix
	}
	return prefix + "." + token(model) + "." + token(worker)
}

// EnsureStream creates (or updates) the stream that holds every worker's
// events: subjects prefix.>, file storage, a 2-minute de-duplication
// window for message ids.
func EnsureStream(ctx context.Context, js jetstream.JetStream, stream, prefix string) error {
	if stream == "" {
		stream = DefaultStream
	}
	if prefix == "" {
		prefix = DefaultSubjectPrefix
	}
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage,
		Duplicates: 2 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("kvpub: stream %s: %w", stream, err)
	}
	return nil
}

// NATSConfig configures a NATSPublisher.
type NATSConfig struct {
	Stream, SubjectPrefix string // defaults DefaultStream, DefaultSubjectPrefix
	Model, Worker         string // required: the subject is prefix.model.worker
	Format                events.Format
	// Epoch identifies this publisher run; 0 takes the current time in
	// nanoseconds, so that a restarted worker is seen as one.
	Epoch uint64
	// MaxQueued bounds the batches kept while JetStream is unreachable
	// (0: 100000); beyond it Publish fails and the batch is lost (the
	// router sees a gap and gives it up).
	MaxQueued int
	// Timeout bounds one publish attempt (0: 2s).
	Timeout time.Duration
}

// NATSStats counts a publisher's messages.
type NATSStats struct {
	Published  uint64 // acknowledged by JetStream
	Duplicates uint64 // acknowledged as duplicates (a retried message)
	Retries    uint64 // failed attempts, later retried
	Queued     int    // waiting now
	Dropped    uint64 // lost to a full queue
}

// NATSPublisher publishes batches to JetStream, one subject per model and
// worker, each message with the id worker:epoch:seq so that a retry after
// a lost acknowledgement is de-duplicated by the server. Safe for
// concurrent use.
type NATSPublisher struct {
	js      jetstream.JetStream
	cfg     NATSConfig
	subject string

	mu    sync.Mutex
	seq   uint64
	queue []*nats.Msg
	stats NATSStats
}

// NewNATSPublisher makes sure the stream exists and returns a publisher.
// Errors: ErrInvalid, or the stream creation error.
func NewNATSPublisher(ctx context.Context, js jetstream.JetStream, cfg NATSConfig) (*NATSPublisher, error) {
	if js == nil || cfg.Model == "" || cfg.Worker == "" {
		return nil, fmt.Errorf("%w: NATS publisher needs JetStream, a model and a worker", ErrInvalid)
	}
	if cfg.MaxQueued < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: negative MaxQueued or Timeout", ErrInvalid)
	}
	if cfg.MaxQueued == 0 {
		cfg.MaxQueued = 100000
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Epoch == 0 {
		cfg.Epoch = uint64(time.Now().UnixNano())
	}
	if err := EnsureStream(ctx, js, cfg.Stream, cfg.SubjectPrefix); err != nil {
		return nil, err
	}
	return &NATSPublisher{js: js, cfg: cfg, subject: Subject(cfg.SubjectPrefix, cfg.Model, cfg.Worker)}, nil
}

// Subject returns the subject this publisher sends on.
func (p *NATSPublisher) Subject() string { return p.subject }

// Stats returns the counters.
func (p *NATSPublisher) Stats() NATSStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Queued = len(p.queue)
	return st
}

// Publish encodes b with the next sequence number and sends it after any
// queued batches. When JetStream does not acknowledge, the batch stays
// queued and Publish returns ErrQueued; a full queue drops it and returns
// an error that is not ErrQueued. Encoding errors leave nothing queued.
func (p *NATSPublisher) Publish(ctx context.Context, b *events.Batch) error {
	payload, err := events.Encode(p.cfg.Format, b)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := p.seq
	if len(p.queue) >= p.cfg.MaxQueued {
		p.seq++
		p.stats.Dropped++
		return fmt.Errorf("kvpub: queue full (%d batches), batch %d dropped", len(p.queue), seq)
	}
	p.seq++
	m := nats.NewMsg(p.subject)
	m.Data = payload
	m.Header.Set(HeaderWorker, p.cfg.Worker)
	m.Header.Set(HeaderSeq, strconv.FormatUint(seq, 10))
	m.Header.Set(HeaderEpoch, strconv.FormatUint(p.cfg.Epoch, 10))
	m.Header.Set(HeaderFormat, p.cfg.Format.String())
	m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s:%d:%d", p.cfg.Worker, p.cfg.Epoch, seq))
	p.queue = append(p.queue, m)
	return p.flushLocked(ctx)
}

// Flush retries the queued batches in order. Errors: ErrQueued when some
// remain.
func (p *NATSPublisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flushLocked(ctx)
}

func (p *NATSPublisher) flushLocked(ctx context.Context) error {
	for len(p.queue) > 0 {
		m := p.queue[0]
		cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
		ack, err := p.js.PublishMsg(cctx, m)
		cancel()
		if err != nil {
			p.stats.Retries++
			return fmt.Errorf("%w: %d waiting: %v", ErrQueued, len(p.queue), err)
		}
		if ack.Duplicate {
			p.stats.Duplicates++
		} else {
			p.stats.Published++
		}
		p.queue[0] = nil
		p.queue = p.queue[1:]
	}
	return nil
}

// NATSConsumerConfig configures ConsumeNATS.
type NATSConsumerConfig struct {
	Stream, SubjectPrefix, Durable string // defaults above
	// Dialect decodes array-shaped payloads without a format header.
	Dialect events.Dialect
}

// NATSConsumerStats counts a consumer's messages.
type NATSConsumerStats struct {
	Received, Malformed, GapsSkipped uint64
}

// NATSConsumer feeds a stream's messages into a router.
type NATSConsumer struct {
	r    *router.Router
	cfg  NATSConsumerConfig
	mc   jetstream.MessagesContext
	done chan struct{}

	mu    sync.Mutex
	stats NATSConsumerStats
}

// ConsumeNATS starts a durable pull consumer on the stream and ingests
// every message into r until Stop. The consumer starts right after the
// router's cursor (the stream sequence a restored snapshot recorded), or
// at the stream's start for a router with no cursor, so a restarted router
// reads only what its snapshot lacks; it is re-created on each call for
// that reason. The cursor advances with each message. Errors: ErrInvalid,
// or the consumer creation error.
func ConsumeNATS(ctx context.Context, js jetstream.JetStream, r *router.Router, cfg NATSConsumerConfig) (*NATSConsumer, error) {
	if js == nil || r == nil {
		return nil, fmt.Errorf("%w: consumer needs JetStream and a router", ErrInvalid)
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if cfg.SubjectPrefix == "" {
		cfg.SubjectPrefix = DefaultSubjectPrefix
	}
	if cfg.Durable == "" {
		cfg.Durable = DefaultDurable
	}
	if err := EnsureStream(ctx, js, cfg.Stream, cfg.SubjectPrefix); err != nil {
		return nil, err
	}
	_ = js.DeleteConsumer(ctx, cfg.Stream, cfg.Durable) // absent is fine
	cc := jetstream.ConsumerConfig{Durable: cfg.Durable, AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: cfg.SubjectPrefix + ".>", DeliverPolicy: jetstream.DeliverAllPolicy}
	if c := r.Cursor(); c > 0 {
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, c+1
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, cfg.Stream, cc)
	if err != nil {
		return nil, fmt.Errorf("kvpub: consumer %s: %w", cfg.Durable, err)
	}
	mc, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("kvpub: consume: %w", err)
	}
	c := &NATSConsumer{r: r, cfg: cfg, mc: mc, done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *NATSConsumer) loop() {
	defer close(c.done)
	for {
		msg, err := c.mc.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // reconnecting; the iterator resumes
			continue
		}
		c.handle(msg)
	}
}

func (c *NATSConsumer) count(f func(*NATSConsumerStats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

func (c *NATSConsumer) handle(msg jetstream.Msg) {
	c.count(func(s *NATSConsumerStats) { s.Received++ })
	h := msg.Headers()
	worker := h.Get(HeaderWorker)
	seq, err1 := strconv.ParseUint(h.Get(HeaderSeq), 10, 64)
	epoch, err2 := strconv.ParseUint(h.Get(HeaderEpoch), 10, 64)
	dialect := c.cfg.Dialect
	if f, err := events.ParseFormat(h.Get(HeaderFormat)); err == nil {
		dialect = f.Dialect
	}
	b, err3 := events.Decode(msg.Data(), dialect)
	meta, err4 := msg.Metadata()
	if worker == "" || err1 != nil || err2 != nil || err3 != nil {
		c.count(func(s *NATSConsumerStats) { s.Malformed++ })
	} else {
		_, _ = c.r.Ingest(router.Message{Worker: worker, Epoch: epoch, Seq: seq, Batch: b})
	}
	if err4 == nil {
		c.r.SetCursor(meta.Sequence.Stream)
		// JetStream keeps every acknowledged publish, in order per
		// subject: a gap still open when nothing is pending was never
		// stored (a publisher dropped it), so give it up.
		if meta.NumPending == 0 {
			for _, g := range c.r.Gaps() {
				c.r.SkipGap(g.Worker)
				c.count(func(s *NATSConsumerStats) { s.GapsSkipped++ })
			}
		}
	}
	_ = msg.Ack()
}

// Stats returns the counters.
func (c *NATSConsumer) Stats() NATSConsumerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Stop ends consumption and waits for the loop.
func (c *NATSConsumer) Stop() {
	c.mc.Stop()
	<-c.done
}
