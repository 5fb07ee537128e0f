package kvpub

import (
	"context"
	"fmt"
	"time"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/events"
)

// EventSource drains recorded KV events: a host/native Controller or
// Engine built with core.Config.KVEvents.
type EventSource interface {
	TakeEvents(dst []core.Event) ([]core.Event, error)
}

// Publisher sends one batch. ZMQPublisher and NATSPublisher satisfy it
// through ZMQSink and NATSSink.
type Publisher func(b *events.Batch) error

// ZMQSink publishes through a ZMQ publisher.
func ZMQSink(p *ZMQPublisher) Publisher { return p.Publish }

// NATSSink publishes through a NATS publisher with ctx. A batch queued by
// an outage (ErrQueued) counts as sent: it goes out with the next one.
func NATSSink(ctx context.Context, p *NATSPublisher) Publisher {
	return func(b *events.Batch) error {
		if err := p.Publish(ctx, b); err != nil && !isQueued(err) {
			return err
		}
		return nil
	}
}

func isQueued(err error) bool {
	for e := err; e != nil; {
		if e == ErrQueued {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// Pump moves a worker's KV events to a publisher: each Drain takes what
// the source recorded since the last one and publishes it as one batch.
// A worker calls Drain after each scheduling step (or on a timer), which
// is how vLLM and SGLang batch their events too.
type Pump struct {
	Source  EventSource
	Publish Publisher
	// DPRank, when HasDPRank, is stamped on every batch.
	DPRank    int
	HasDPRank bool
	// Now gives the batch timestamp in seconds (nil: wall clock).
	Now func() float64

	buf     []core.Event
	batches uint64
	events  uint64
}

// Drain publishes the pending events as one batch; it publishes nothing
// when there are none. It returns how many events went out.
// Errors: ErrInvalid without a source or publisher; the source's or the
// publisher's error (the events taken are then lost, and the router sees
// a gap it resolves by replay or SkipGap).
func (p *Pump) Drain() (int, error) {
	if p.Source == nil || p.Publish == nil {
		return 0, fmt.Errorf("%w: pump needs a source and a publisher", ErrInvalid)
	}
	var err error
	p.buf, err = p.Source.TakeEvents(p.buf[:0])
	if err != nil {
		return 0, fmt.Errorf("kvpub: take events: %w", err)
	}
	if len(p.buf) == 0 {
		return 0, nil
	}
	evs, err := events.FromCoreEvents(p.buf)
	if err != nil {
		return 0, err
	}
	ts := 0.0
	if p.Now != nil {
		ts = p.Now()
	} else {
		ts = float64(time.Now().UnixNano()) / 1e9
	}
	b := events.Batch{TS: ts, Events: evs, DPRank: p.DPRank, HasDPRank: p.HasDPRank}
	if err := p.Publish(&b); err != nil {
		return 0, err
	}
	p.batches++
	p.events += uint64(len(evs))
	return len(evs), nil
}

// Counts returns the batches and events published so far.
func (p *Pump) Counts() (batches, events uint64) { return p.batches, p.events }
