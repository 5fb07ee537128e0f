package events

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Encode writes b as one msgpack payload in format f. Fields the format
// does not carry are dropped (for example CacheSalt in vLLM, ExtraKeys in
// SGLang, everything past lora_id in V0).
// Errors: ErrInvalidFormat, ErrInvalidEvent (see Event.Validate).
func Encode(f Format, b *Batch) ([]byte, error) {
	return AppendEncode(nil, f, b)
}

// AppendEncode is Encode appending to dst.
func AppendEncode(dst []byte, f Format, b *Batch) ([]byte, error) {
	if err := f.validate(); err != nil {
		return dst, err
	}
	if b == nil {
		return dst, fmt.Errorf("%w: nil batch", ErrInvalidEvent)
	}
	if math.IsNaN(b.TS) || math.IsInf(b.TS, 0) {
		return dst, fmt.Errorf("%w: timestamp %v is not finite", ErrInvalidEvent, b.TS)
	}
	for i := range b.Events {
		if err := b.Events[i].Validate(); err != nil {
			return dst, fmt.Errorf("event %d: %w", i, err)
		}
	}
	buf := bytes.NewBuffer(dst)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	w := writer{enc: enc, f: f}
	w.batch(b)
	if w.err != nil {
		return dst, w.err
	}
	return buf.Bytes(), nil
}

type writer struct {
	enc *msgpack.Encoder
	f   Format
	err error
}

func (w *writer) keep(err error) {
	if w.err == nil && err != nil {
		w.err = err
	}
}

func (w *writer) str(s string) { w.keep(w.enc.EncodeString(s)) }

func (w *writer) batch(b *Batch) {
	stored, removed, rankKey := w.f.layouts()
	withRank := rankKey != "" && b.HasDPRank
	if w.f.Shape == Array {
		n := 2
		if withRank {
			n = 3
		}
		w.keep(w.enc.EncodeArrayLen(n))
	} else {
		n := 2
		if withRank {
			n = 3
		}
		w.keep(w.enc.EncodeMapLen(n))
		w.str("ts")
	}
	w.keep(w.enc.EncodeFloat64(b.TS))
	if w.f.Shape == Map {
		w.str("events")
	}
	w.keep(w.enc.EncodeArrayLen(len(b.Events)))
	for i := range b.Events {
		e := &b.Events[i]
		switch e.Kind {
		case BlockStored:
			w.event(e, stored)
		case BlockRemoved:
			w.event(e, removed)
		default:
			w.event(e, layout{})
		}
	}
	if withRank {
		if w.f.Shape == Map {
			w.str(rankKey)
		}
		w.keep(w.enc.EncodeInt(int64(b.DPRank)))
	}
}

// isSet reports whether field f of e holds a value other than its default.
func isSet(e *Event, f field) bool {
	switch f {
	case fBlockHashes, fTokenIDs, fBlockSize:
		return true
	case fParent:
		return e.HasParent
	case fLoRAID:
		return e.HasLoRAID
	case fMedium:
		return e.Medium != ""
	case fLoRAName:
		return e.LoRAName != ""
	case fExtraKeys:
		return len(e.ExtraKeys) > 0
	case fGroupIdx:
		return e.HasGroupIdx
	case fSpecKind:
		return e.SpecKind != ""
	case fSlidingWindow:
		return e.SlidingWindow != 0
	case fCacheSalt:
		return e.CacheSalt != ""
	case fSessionID:
		return e.SessionID != ""
	}
	return false
}

func (w *writer) event(e *Event, l layout) {
	// Which fields go out: required ones always; defaulted ones when set,
	// and in the array shape also every defaulted one before the last set
	// one (positions cannot be skipped).
	n := l.required
	var count int
	if w.f.Shape == Array {
		for i := len(l.fields) - 1; i >= l.required; i-- {
			if isSet(e, l.fields[i]) {
				n = i + 1
				break
			}
		}
		w.keep(w.enc.EncodeArrayLen(1 + n))
		w.str(e.Kind.tag())
		for _, f := range l.fields[:n] {
			w.value(e, f)
		}
		return
	}
	count = l.required
	for _, f := range l.fields[l.required:] {
		if isSet(e, f) {
			count++
		}
	}
	w.keep(w.enc.EncodeMapLen(1 + count))
	w.str("type")
	w.str(e.Kind.tag())
	for i, f := range l.fields {
		if i >= l.required && !isSet(e, f) {
			continue
		}
		w.str(fieldNames[f])
		w.value(e, f)
	}
}

func (w *writer) hash(h int64) {
	// vLLM's hashes are unsigned Python ints; SGLang's are signed int64.
	if w.f.Dialect == VLLM {
		w.keep(w.enc.EncodeUint(uint64(h)))
		return
	}
	w.keep(w.enc.EncodeInt(h))
}

func (w *writer) optStr(s string) {
	if s == "" {
		w.keep(w.enc.EncodeNil())
		return
	}
	w.str(s)
}

func (w *writer) value(e *Event, f field) {
	switch f {
	case fBlockHashes:
		w.keep(w.enc.EncodeArrayLen(len(e.BlockHashes)))
		for _, h := range e.BlockHashes {
			w.hash(h)
		}
	case fParent:
		if !e.HasParent {
			w.keep(w.enc.EncodeNil())
		} else {
			w.hash(e.ParentBlockHash)
		}
	case fTokenIDs:
		w.keep(w.enc.EncodeArrayLen(len(e.TokenIDs)))
		for _, t := range e.TokenIDs {
			w.keep(w.enc.EncodeUint(uint64(t)))
		}
	case fBlockSize:
		w.keep(w.enc.EncodeInt(int64(e.BlockSize)))
	case fLoRAID:
		if !e.HasLoRAID {
			w.keep(w.enc.EncodeNil())
		} else {
			w.keep(w.enc.EncodeInt(e.LoRAID))
		}
	case fMedium:
		w.optStr(e.Medium)
	case fLoRAName:
		w.optStr(e.LoRAName)
	case fExtraKeys:
		if len(e.ExtraKeys) == 0 {
			w.keep(w.enc.EncodeNil())
		} else {
			w.keep(w.enc.Encode(msgpack.RawMessage(e.ExtraKeys)))
		}
	case fGroupIdx:
		if !e.HasGroupIdx {
			w.keep(w.enc.EncodeNil())
		} else {
			w.keep(w.enc.EncodeInt(int64(e.GroupIdx)))
		}
	case fSpecKind:
		w.optStr(e.SpecKind)
	case fSlidingWindow:
		if e.SlidingWindow == 0 {
			w.keep(w.enc.EncodeNil())
		} else {
			w.keep(w.enc.EncodeInt(int64(e.SlidingWindow)))
		}
	case fCacheSalt:
		w.optStr(e.CacheSalt)
	case fSessionID:
		w.optStr(e.SessionID)
	}
}

// Decode reads one payload of any shape and version. The dialect is
// needed only for array-shaped events, whose fields past the sixth differ
// between vLLM and SGLang; map-shaped events name their fields. Decoding
// is tolerant: unknown map keys and extra trailing array elements are
// ignored, missing defaulted fields take their default, and events of an
// unknown type are skipped (counted in Batch.Skipped). A payload that is
// not a batch fails with a *DecodeError matching ErrMalformed.
func Decode(payload []byte, d Dialect) (Batch, error) {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.ResetReader(bytes.NewReader(payload))
	r := reader{dec: dec, d: d, left: len(payload)}
	b, err := r.batch()
	if err != nil {
		return Batch{}, err
	}
	return b, nil
}

type reader struct {
	dec  *msgpack.Decoder
	d    Dialect
	left int // payload size: no container can hold more elements
	path []pathElem
}

// pathElem is a field name, or (name "") an index into a list; the path
// is rendered only when decoding fails.
type pathElem struct {
	name string
	idx  int
}

func (r *reader) fail(err error) error {
	p := "payload"
	if len(r.path) > 0 {
		p = ""
		for i, e := range r.path {
			switch {
			case e.name == "":
				p += fmt.Sprintf("[%d]", e.idx)
			case i > 0:
				p += "." + e.name
			default:
				p += e.name
			}
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.ErrUnexpectedEOF
	}
	return &DecodeError{Path: p, Err: err}
}

func (r *reader) push(s string) { r.path = append(r.path, pathElem{name: s}) }
func (r *reader) pushIdx(i int) { r.path = append(r.path, pathElem{idx: i}) }
func (r *reader) pop()          { r.path = r.path[:len(r.path)-1] }

func (r *reader) isNil() (bool, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return false, r.fail(err)
	}
	if c == msgpcode.Nil {
		if err := r.dec.DecodeNil(); err != nil {
			return false, r.fail(err)
		}
		return true, nil
	}
	return false, nil
}

// length reads an array (or map) header and checks it against the payload.
func (r *reader) arrayLen() (int, error) {
	n, err := r.dec.DecodeArrayLen()
	if err != nil {
		return 0, r.fail(err)
	}
	if n < 0 { // nil stands for an empty list
		return 0, nil
	}
	if n > r.left {
		return 0, r.fail(fmt.Errorf("array of %d elements in a %d-byte payload", n, r.left))
	}
	return n, nil
}

func (r *reader) mapLen() (int, error) {
	n, err := r.dec.DecodeMapLen()
	if err != nil {
		return 0, r.fail(err)
	}
	if n < 0 {
		return 0, nil
	}
	if n > r.left {
		return 0, r.fail(fmt.Errorf("map of %d entries in a %d-byte payload", n, r.left))
	}
	return n, nil
}

func (r *reader) skip() error {
	if err := r.dec.Skip(); err != nil {
		return r.fail(err)
	}
	return nil
}

func (r *reader) str() (string, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return "", r.fail(err)
	}
	if !msgpcode.IsString(c) && !msgpcode.IsBin(c) {
		return "", r.fail(fmt.Errorf("want a string, found code 0x%02x", c))
	}
	s, err := r.dec.DecodeString()
	if err != nil {
		return "", r.fail(err)
	}
	return s, nil
}

func (r *reader) optStr() (string, error) {
	if null, err := r.isNil(); null || err != nil {
		return "", err
	}
	return r.str()
}

func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || c == msgpcode.Uint8 || c == msgpcode.Uint16 ||
		c == msgpcode.Uint32 || c == msgpcode.Uint64 || c == msgpcode.Int8 ||
		c == msgpcode.Int16 || c == msgpcode.Int32 || c == msgpcode.Int64
}

func (r *reader) int64() (int64, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return 0, r.fail(err)
	}
	if !isInt(c) {
		return 0, r.fail(fmt.Errorf("want an integer, found code 0x%02x", c))
	}
	if c == msgpcode.Uint64 {
		u, err := r.dec.DecodeUint64()
		if err != nil {
			return 0, r.fail(err)
		}
		return int64(u), nil
	}
	v, err := r.dec.DecodeInt64()
	if err != nil {
		return 0, r.fail(err)
	}
	return v, nil
}

// hash reads a block hash: an integer, or a byte string folded to its
// last eight bytes big-endian (shorter strings are left-padded with zeros).
func (r *reader) hash() (int64, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return 0, r.fail(err)
	}
	if msgpcode.IsBin(c) || msgpcode.IsString(c) {
		b, err := r.dec.DecodeBytes()
		if err != nil {
			return 0, r.fail(err)
		}
		var tail [8]byte
		if len(b) >= 8 {
			copy(tail[:], b[len(b)-8:])
		} else {
			copy(tail[8-len(b):], b)
		}
		return int64(binary.BigEndian.Uint64(tail[:])), nil
	}
	return r.int64()
}

func (r *reader) smallInt(what string) (int, error) {
	v, err := r.int64()
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, r.fail(fmt.Errorf("%s %d out of range", what, v))
	}
	return int(v), nil
}

func (r *reader) batch() (Batch, error) {
	var b Batch
	c, err := r.dec.PeekCode()
	if err != nil {
		return b, r.fail(err)
	}
	switch {
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := r.arrayLen()
		if err != nil {
			return b, err
		}
		if n < 2 {
			return b, r.fail(fmt.Errorf("batch array of %d elements, want ts and events", n))
		}
		r.push("ts")
		if b.TS, err = r.ts(); err != nil {
			return b, err
		}
		r.pop()
		r.push("events")
		if b.Events, b.Skipped, err = r.events(); err != nil {
			return b, err
		}
		r.pop()
		if n >= 3 {
			r.push("dp_rank")
			if null, err := r.isNil(); err != nil {
				return b, err
			} else if !null {
				if b.DPRank, err = r.smallInt("rank"); err != nil {
					return b, err
				}
				b.HasDPRank = true
			}
			r.pop()
		}
		for i := 3; i < n; i++ {
			if err := r.skip(); err != nil {
				return b, err
			}
		}
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := r.mapLen()
		if err != nil {
			return b, err
		}
		var haveTS, haveEvents bool
		for i := 0; i < n; i++ {
			r.push("key")
			k, err := r.str()
			if err != nil {
				return b, err
			}
			r.pop()
			r.push(k)
			switch k {
			case "ts":
				b.TS, err = r.ts()
				haveTS = true
			case "events":
				b.Events, b.Skipped, err = r.events()
				haveEvents = true
			case "data_parallel_rank", "attn_dp_rank", "dp_rank":
				var null bool
				if null, err = r.isNil(); err == nil && !null {
					b.DPRank, err = r.smallInt("rank")
					b.HasDPRank = err == nil
				}
			default:
				err = r.skip()
			}
			if err != nil {
				return b, err
			}
			r.pop()
		}
		if !haveTS || !haveEvents {
			return b, r.fail(errors.New("batch map lacks ts or events"))
		}
	default:
		return b, r.fail(fmt.Errorf("want a batch (array or map), found code 0x%02x", c))
	}
	return b, nil
}

func (r *reader) ts() (float64, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return 0, r.fail(err)
	}
	if c == msgpcode.Float || c == msgpcode.Double {
		v, err := r.dec.DecodeFloat64()
		if err != nil {
			return 0, r.fail(err)
		}
		return v, nil
	}
	v, err := r.int64()
	return float64(v), err
}

func (r *reader) events() ([]Event, int, error) {
	n, err := r.arrayLen()
	if err != nil {
		return nil, 0, err
	}
	out := make([]Event, 0, n)
	skipped := 0
	for i := 0; i < n; i++ {
		r.pushIdx(i)
		e, ok, err := r.event()
		if err != nil {
			return nil, 0, err
		}
		if ok {
			out = append(out, e)
		} else {
			skipped++
		}
		r.pop()
	}
	return out, skipped, nil
}

func kindOf(tag string) Kind {
	switch tag {
	case "BlockStored":
		return BlockStored
	case "BlockRemoved":
		return BlockRemoved
	case "AllBlocksCleared":
		return AllBlocksCleared
	}
	return 0
}

// event reads one event; ok is false for an unknown type (skipped).
func (r *reader) event() (e Event, ok bool, err error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return e, false, r.fail(err)
	}
	switch {
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := r.arrayLen()
		if err != nil {
			return e, false, err
		}
		if n < 1 {
			return e, false, r.fail(errors.New("empty event array, want a type tag"))
		}
		tag, err := r.str()
		if err != nil {
			return e, false, err
		}
		e.Kind = kindOf(tag)
		var l layout
		switch e.Kind {
		case BlockStored:
			l, _, _ = Format{Dialect: r.d, Version: Latest}.layouts()
		case BlockRemoved:
			_, l, _ = Format{Dialect: r.d, Version: Latest}.layouts()
		}
		for i := 1; i < n; i++ {
			if e.Kind == 0 || i-1 >= len(l.fields) {
				if err := r.skip(); err != nil {
					return e, false, err
				}
				continue
			}
			f := l.fields[i-1]
			r.push(fieldNames[f])
			if err := r.value(&e, f); err != nil {
				return e, false, err
			}
			r.pop()
		}
		// Fields that V0 already had are required; later ones may be
		// missing (an older publisher) and keep their defaults.
		s0, r0, _ := Format{Version: V0}.layouts()
		need := 0
		switch e.Kind {
		case BlockStored:
			need = s0.required
		case BlockRemoved:
			need = r0.required
		}
		if n-1 < need {
			return e, false, r.fail(fmt.Errorf("%s with %d fields, want at least %d", tag, n-1, need))
		}
		return e, e.Kind != 0, nil
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := r.mapLen()
		if err != nil {
			return e, false, err
		}
		var haveHashes bool
		for i := 0; i < n; i++ {
			k, err := r.str()
			if err != nil {
				return e, false, err
			}
			if k == "type" {
				r.push("type")
				tag, err := r.str()
				if err != nil {
					return e, false, err
				}
				r.pop()
				e.Kind = kindOf(tag)
				continue
			}
			f, known := fieldByName(k)
			if !known {
				if err := r.skip(); err != nil {
					return e, false, err
				}
				continue
			}
			r.push(k)
			if err := r.value(&e, f); err != nil {
				return e, false, err
			}
			r.pop()
			haveHashes = haveHashes || f == fBlockHashes
		}
		if (e.Kind == BlockStored || e.Kind == BlockRemoved) && !haveHashes {
			return e, false, r.fail(fmt.Errorf("%s without block_hashes", e.Kind))
		}
		return e, e.Kind != 0, nil
	}
	return e, false, r.fail(fmt.Errorf("want an event (array or map), found code 0x%02x", c))
}

func (r *reader) value(e *Event, f field) error {
	var err error
	switch f {
	case fBlockHashes:
		var n int
		if n, err = r.arrayLen(); err != nil {
			return err
		}
		e.BlockHashes = make([]int64, 0, n)
		for i := 0; i < n; i++ {
			h, err := r.hash()
			if err != nil {
				return err
			}
			e.BlockHashes = append(e.BlockHashes, h)
		}
	case fParent:
		var null bool
		if null, err = r.isNil(); err == nil && !null {
			e.ParentBlockHash, err = r.hash()
			e.HasParent = err == nil
		}
	case fTokenIDs:
		var n int
		if n, err = r.arrayLen(); err != nil {
			return err
		}
		e.TokenIDs = make([]uint32, 0, n)
		for i := 0; i < n; i++ {
			if err := r.token(e, 0); err != nil {
				return err
			}
		}
	case fBlockSize:
		e.BlockSize, err = r.smallInt("block_size")
	case fLoRAID:
		var null bool
		if null, err = r.isNil(); err == nil && !null {
			e.LoRAID, err = r.int64()
			e.HasLoRAID = err == nil
		}
	case fMedium:
		e.Medium, err = r.optStr()
	case fLoRAName:
		e.LoRAName, err = r.optStr()
	case fCacheSalt:
		e.CacheSalt, err = r.optStr()
	case fSessionID:
		e.SessionID, err = r.optStr()
	case fSpecKind:
		e.SpecKind, err = r.optStr()
	case fExtraKeys:
		var null bool
		if null, err = r.isNil(); err == nil && !null {
			var raw msgpack.RawMessage
			if raw, err = r.dec.DecodeRaw(); err != nil {
				return r.fail(err)
			}
			e.ExtraKeys = append([]byte(nil), raw...)
		}
	case fGroupIdx:
		var null bool
		if null, err = r.isNil(); err == nil && !null {
			e.GroupIdx, err = r.smallInt("group_idx")
			e.HasGroupIdx = err == nil
		}
	case fSlidingWindow:
		var null bool
		if null, err = r.isNil(); err == nil && !null {
			e.SlidingWindow, err = r.smallInt("sliding window")
		}
	}
	return err
}

// token reads one token id, or a bigram pair [a, b] (flattened).
func (r *reader) token(e *Event, depth int) error {
	c, err := r.dec.PeekCode()
	if err != nil {
		return r.fail(err)
	}
	if depth == 0 && (msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32) {
		n, err := r.arrayLen()
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := r.token(e, 1); err != nil {
				return err
			}
		}
		return nil
	}
	v, err := r.int64()
	if err != nil {
		return err
	}
	if v < 0 || v > math.MaxUint32 {
		return r.fail(fmt.Errorf("token id %d out of range", v))
	}
	e.TokenIDs = append(e.TokenIDs, uint32(v))
	return nil
}
