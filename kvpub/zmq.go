package kvpub

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/router"
)

// endSeq is the replay end sentinel: -1 as 8 bytes big-endian.
var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ZMQConfig configures a ZMQPublisher.
type ZMQConfig struct {
	// Endpoint is the PUB address to listen on, e.g. "tcp://127.0.0.1:5557"
	// (port 0 picks a free one; see ZMQPublisher.Endpoint).
	Endpoint string
	// ReplayEndpoint is the ROUTER address for replay requests; empty
	// disables replay.
	ReplayEndpoint string
	// Topic is the first frame of every message ("" by default, as vLLM).
	Topic string
	// Format is the payload format (zero value: vllm/array/v1).
	Format events.Format
	// BufferSteps is how many past batches replay can serve (0: 10000).
	BufferSteps int
}

type sent struct {
	seq     uint64
	payload []byte
}

// ZMQPublisher publishes batches the way vLLM's and SGLang's
// ZmqEventPublisher do: a PUB socket sending [topic, seq (8 bytes
// big-endian), payload], with seq counting from 0, and a ROUTER socket
// answering [client_id, "", start_seq] with every buffered batch from
// start_seq as [client_id, "", seq, payload] and then the end sentinel
// [client_id, "", -1, ""]. Safe for concurrent use.
type ZMQPublisher struct {
	cfg    ZMQConfig
	ctx    context.Context
	cancel context.CancelFunc
	pub    zmq4.Socket
	rep    zmq4.Socket
	wg     sync.WaitGroup

	mu   sync.Mutex
	seq  uint64
	buf  []sent // ring of the last BufferSteps batches
	head int
	enc  []byte
}

// NewZMQPublisher listens on the configured endpoints.
// Errors: ErrInvalid for a bad config, or the socket's listen error.
func NewZMQPublisher(cfg ZMQConfig) (*ZMQPublisher, error) {
	if cfg.Endpoint == "" {
		return nil, fmt.Errorf("%w: ZMQ publisher needs an endpoint", ErrInvalid)
	}
	if cfg.BufferSteps < 0 {
		return nil, fmt.Errorf("%w: negative BufferSteps", ErrInvalid)
	}
	if cfg.BufferSteps == 0 {
		cfg.BufferSteps = 10000
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &ZMQPublisher{cfg: cfg, ctx: ctx, cancel: cancel, pub: zmq4.NewPub(ctx)}
	if err := p.pub.Listen(cfg.Endpoint); err != nil {
		cancel()
		p.pub.Close()
		return nil, fmt.Errorf("kvpub: listen %s: %w", cfg.Endpoint, err)
	}
	if cfg.ReplayEndpoint != "" {
		p.rep = zmq4.NewRouter(ctx, zmq4.WithID(zmq4.SocketIdentity("radixkv-replay")))
		if err := p.rep.Listen(cfg.ReplayEndpoint); err != nil {
			cancel()
			p.pub.Close()
			p.rep.Close()
			return nil, fmt.Errorf("kvpub: listen %s: %w", cfg.ReplayEndpoint, err)
		}
		p.wg.Add(1)
		go p.serveReplay()
	}
	return p, nil
}

// Endpoint returns the PUB address actually bound (with the real port).
func (p *ZMQPublisher) Endpoint() string { return "tcp://" + p.pub.Addr().String() }

// ReplayEndpoint returns the ROUTER address bound, or "" without replay.
func (p *ZMQPublisher) ReplayEndpoint() string {
	if p.rep == nil {
		return ""
	}
	return "tcp://" + p.rep.Addr().String()
}

// Format returns the payload format.
func (p *ZMQPublisher) Format() events.Format { return p.cfg.Format }

// Publish encodes b, sends it with the next sequence number and keeps it
// for replay. Errors: the encoder's (ErrInvalidEvent, ...) or the send's.
func (p *ZMQPublisher) Publish(b *events.Batch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	payload, err := events.Encode(p.cfg.Format, b)
	if err != nil {
		return err
	}
	var seqb [8]byte
	binary.BigEndian.PutUint64(seqb[:], p.seq)
	if err := p.pub.SendMulti(zmq4.NewMsgFrom([]byte(p.cfg.Topic), seqb[:], payload)); err != nil {
		return fmt.Errorf("kvpub: zmq send: %w", err)
	}
	s := sent{seq: p.seq, payload: payload}
	if len(p.buf) < p.cfg.BufferSteps {
		p.buf = append(p.buf, s)
	} else {
		p.buf[p.head] = s
		p.head = (p.head + 1) % len(p.buf)
	}
	p.seq++
	return nil
}

// buffered returns the kept batches with seq ≥ from, oldest first.
func (p *ZMQPublisher) buffered(from uint64) []sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []sent
	for i := 0; i < len(p.buf); i++ {
		s := p.buf[(p.head+i)%len(p.buf)]
		if s.seq >= from {
			out = append(out, s)
		}
	}
	return out
}

func (p *ZMQPublisher) serveReplay() {
	defer p.wg.Done()
	for {
		msg, err := p.rep.Recv()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			continue
		}
		if len(msg.Frames) != 3 || len(msg.Frames[2]) != 8 {
			continue // not a replay request
		}
		id := msg.Frames[0]
		from := binary.BigEndian.Uint64(msg.Frames[2])
		for _, s := range p.buffered(from) {
			var seqb [8]byte
			binary.BigEndian.PutUint64(seqb[:], s.seq)
			if err := p.rep.SendMulti(zmq4.NewMsgFrom(id, nil, seqb[:], s.payload)); err != nil {
				break
			}
		}
		_ = p.rep.SendMulti(zmq4.NewMsgFrom(id, nil, endSeq, nil))
	}
}

// Close stops the sockets.
func (p *ZMQPublisher) Close() error {
	p.cancel()
	err := p.pub.Close()
	if p.rep != nil {
		if e := p.rep.Close(); err == nil {
			err = e
		}
	}
	p.wg.Wait()
	return err
}

// ZMQSource is one publisher a router subscribes to.
type ZMQSource struct {
	Worker         string
	Endpoint       string // PUB endpoint to dial
	ReplayEndpoint string // ROUTER endpoint to dial ("" without replay)
	Topic          string
	Dialect        events.Dialect
}

// ZMQStats counts what a subscription carried.
type ZMQStats struct {
	Received, Replayed, Malformed uint64
}

// ZMQSubscriber feeds one publisher's batches into a router, replaying
// gaps through the publisher's ROUTER socket.
type ZMQSubscriber struct {
	src ZMQSource
	r   *router.Router
	sub zmq4.Socket

	lastLive uint64 // the last live sequence number (Run's goroutine only)
	haveLive bool

	mu    sync.Mutex
	stats ZMQStats
}

// NewZMQSubscriber dials src's PUB endpoint. Errors: ErrInvalid, or the
// dial error.
func NewZMQSubscriber(ctx context.Context, r *router.Router, src ZMQSource) (*ZMQSubscriber, error) {
	if r == nil || src.Worker == "" || src.Endpoint == "" {
		return nil, fmt.Errorf("%w: subscriber needs a router, a worker name and an endpoint", ErrInvalid)
	}
	// Reconnect when the publisher goes away: a restarted worker binds
	// the same endpoint again and starts its sequence at 0.
	s := &ZMQSubscriber{src: src, r: r, sub: zmq4.NewSub(ctx, zmq4.WithAutomaticReconnect(true))}
	if err := s.sub.Dial(src.Endpoint); err != nil {
		s.sub.Close()
		return nil, fmt.Errorf("kvpub: dial %s: %w", src.Endpoint, err)
	}
	if err := s.sub.SetOption(zmq4.OptionSubscribe, src.Topic); err != nil {
		s.sub.Close()
		return nil, err
	}
	return s, nil
}

// Stats returns the counters.
func (s *ZMQSubscriber) Stats() ZMQStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Run receives until ctx ends or the socket fails: each message is
// decoded and ingested, and whenever the worker has a gap it is replayed.
// A malformed message is counted and skipped (its sequence number then
// shows as a gap that the replay fills or SkipGap abandons).
func (s *ZMQSubscriber) Run(ctx context.Context) error {
	for {
		msg, err := s.sub.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) { // the publisher went away; reconnecting
				s.r.Reconnected(s.src.Worker)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("kvpub: zmq recv: %w", err)
		}
		if len(msg.Frames) != 3 || len(msg.Frames[1]) != 8 {
			s.count(func(st *ZMQStats) { st.Malformed++ })
			continue
		}
		seq := binary.BigEndian.Uint64(msg.Frames[1])
		s.count(func(st *ZMQStats) { st.Received++ })
		// PUB/SUB never repeats or reorders live messages, so a live
		// sequence number at or below the last live one means the
		// publisher restarted (its numbering starts again at 0), whether
		// or not the socket reported the reconnection. (Live numbers below
		// the router's next one but above the last live one were already
		// replayed: duplicates.)
		if s.haveLive && seq <= s.lastLive {
			s.r.Reconnected(s.src.Worker)
		}
		s.lastLive, s.haveLive = seq, true
		s.ingest(seq, msg.Frames[2])
		if err := s.Resync(ctx); err != nil && ctx.Err() == nil {
			// Replay unavailable: keep the gap; later messages retry.
			continue
		}
	}
}

func (s *ZMQSubscriber) count(f func(*ZMQStats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *ZMQSubscriber) ingest(seq uint64, payload []byte) {
	b, err := events.Decode(payload, s.src.Dialect)
	if err != nil {
		s.count(func(st *ZMQStats) { st.Malformed++ })
		return
	}
	_, _ = s.r.Ingest(router.Message{Worker: s.src.Worker, Seq: seq, Batch: b})
}

// Resync replays this worker's gap, if any, from the publisher's replay
// socket; when the publisher no longer buffers the start of the gap, the
// rest of it is given up (SkipGap). Errors: ErrNoReplay without a replay
// endpoint, or the socket's error.
func (s *ZMQSubscriber) Resync(ctx context.Context) error {
	var gap *router.Gap
	for _, g := range s.r.Gaps() {
		if g.Worker == s.src.Worker {
			gap = &g
			break
		}
	}
	if gap == nil {
		return nil
	}
	if s.src.ReplayEndpoint == "" {
		return ErrNoReplay
	}
	n, first, err := ReplayZMQ(ctx, s.src.ReplayEndpoint, gap.From, func(seq uint64, payload []byte) {
		s.ingest(seq, payload)
	})
	s.count(func(st *ZMQStats) { st.Replayed += uint64(n) })
	if err != nil {
		return err
	}
	if n == 0 || first > gap.From {
		s.r.SkipGap(s.src.Worker)
	}
	return nil
}

// ReplayZMQ asks a publisher's ROUTER socket for every buffered batch
// from start, calling f for each, until the end sentinel. It returns how
// many batches came and the first sequence number among them.
func ReplayZMQ(ctx context.Context, endpoint string, start uint64, f func(seq uint64, payload []byte)) (int, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id := fmt.Sprintf("radixkv-router-%d", time.Now().UnixNano())
	d := zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(id)))
	defer d.Close()
	if err := d.Dial(endpoint); err != nil {
		return 0, 0, fmt.Errorf("kvpub: dial replay %s: %w", endpoint, err)
	}
	var sb [8]byte
	binary.BigEndian.PutUint64(sb[:], start)
	if err := d.SendMulti(zmq4.NewMsgFrom(nil, sb[:])); err != nil {
		return 0, 0, fmt.Errorf("kvpub: replay request: %w", err)
	}
	n := 0
	var first uint64
	for {
		msg, err := d.Recv()
		if err != nil {
			return n, first, fmt.Errorf("kvpub: replay recv: %w", err)
		}
		fr := msg.Frames
		if len(fr) == 3 && len(fr[0]) == 0 {
			fr = fr[1:]
		}
		if len(fr) != 2 || len(fr[0]) != 8 {
			return n, first, fmt.Errorf("%w: replay frame of %d parts", ErrProtocol, len(msg.Frames))
		}
		if string(fr[0]) == string(endSeq) {
			return n, first, nil
		}
		seq := binary.BigEndian.Uint64(fr[0])
		if n == 0 {
			first = seq
		}
		n++
		f(seq, fr[1])
	}
}

// Errors of package kvpub.
var (
	ErrInvalid  = errors.New("kvpub: invalid argument")
	ErrNoReplay = errors.New("kvpub: publisher has no replay endpoint")
	ErrProtocol = errors.New("kvpub: protocol error")
)
