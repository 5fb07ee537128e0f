package abi

// WordViewer reads 32-bit word arrays of a response in place instead of
// copying them into a Scratch. Evicted slot lists are the bulk of what a
// host decodes (about as many bytes as all the tokens it sends, in a
// trace replay), and a host reads them once, before its next call, while
// the response bytes are still there. abi may not use unsafe, so a host
// that may (host/native, with internal/wordview) supplies the views.
//
// Each method is given the 4*n bytes of an n-word array and returns a
// slice of n words over those very bytes, with the values the portable
// decoding would give, and ok; or ok = false when it cannot (bytes not
// 4-byte aligned, a big-endian machine), and the codec copies as before.
type WordViewer interface {
	ViewI32(b []byte) ([]int32, bool)
	ViewU32(b []byte) ([]uint32, bool)
}

// SetWordViewer makes later decodes with s read action slot lists (Slots,
// Incoming) and event token ids as views of the response bytes where v
// can, instead of copies in s's buffers; nil restores the copies. A view
// is valid only while the decoded bytes are unchanged, so use it where
// the response bytes live as long as s's buffers would (a wire engine's
// transport, whose response is valid until its next call). Writing
// through a view writes the response bytes.
func (s *Scratch) SetWordViewer(v WordViewer) { s.view = v }

// viewI32s decodes an i32 array as a view of the message bytes when the
// Scratch has a viewer that can take them; ok is false otherwise, and
// nothing was consumed.
func (r *reader) viewI32s(field string) ([]int32, bool) {
	return viewWords(r, field, WordViewer.ViewI32)
}

// viewU32s is viewI32s for u32 arrays.
func (r *reader) viewU32s(field string) ([]uint32, bool) {
	return viewWords(r, field, WordViewer.ViewU32)
}

func viewWords[T uint32 | int32](r *reader, field string, view func(WordViewer, []byte) ([]T, bool)) ([]T, bool) {
	v, n, b := r.viewTake(field)
	if v == nil {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	w, ok := view(v, b)
	if !ok || len(w) != n {
		r.off -= 4 + 4*n // let the copying path decode it
		return nil, false
	}
	return w[:n:n], true
}

// viewTake reads a word array's count and bytes for a view: the viewer,
// the count and the bytes, or a nil viewer (none installed, or a decode
// error, which then sticks) with nothing consumed.
func (r *reader) viewTake(field string) (WordViewer, int, []byte) {
	v := r.view
	if v == nil && r.s != nil {
		v = r.s.view
	}
	if v == nil || r.err != nil {
		return nil, 0, nil
	}
	n := r.count(field, 4)
	if r.err != nil {
		return nil, 0, nil
	}
	b := r.take(field, 4*n)
	if r.err != nil || len(b) != 4*n {
		return nil, 0, nil
	}
	return v, n, b
}

// Views names the arrays of a Request that DecodeRequestViewing read in
// place (see Request.Views).
type Views uint8

const (
	// ViewTokens: Insert.Tokens views the request bytes.
	ViewTokens Views = 1 << iota
	// ViewSlots: Insert.Slots views the request bytes.
	ViewSlots
)

// Views reports which of q's arrays the last decode into q read in place
// of the request bytes (none after DecodeRequest).
func (q *Request) Views() Views { return q.views }

// DecodeRequestViewing is DecodeRequest, except that the bulk word arrays
// a dispatcher reads only while it answers the request are views of b
// where v can take them, instead of copies into q's buffers: the tokens
// of match and match_lock, the tokens and slots of insert and
// begin_insert, and the sent slots of begin_insert_matched (and its
// _unlock form). Request.Views says which were. A view
// is valid while b is unchanged, so a caller that keeps one past the call
// (a match's tokens, for the insert that names it) copies it, unless the
// host promises the bytes outlive that use. A later decode into q never
// writes into a view.
func DecodeRequestViewing(q *Request, b []byte, v WordViewer) error {
	return decodeRequest(q, b, v)
}

// tokensIn decodes a request's token array, as a view where the reader's
// request viewer can take it (recorded in q).
func (r *reader) tokensIn(q *Request, dst []uint32) []uint32 {
	if r.view != nil {
		if w, ok := r.viewU32s("tokens"); ok {
			if len(w) > 0 {
				q.views |= ViewTokens
				q.viewTok = &w[0]
			}
			return w
		}
	}
	return r.u32s("tokens", dst)
}

// slotsIn is tokensIn for a request's slot array.
func (r *reader) slotsIn(q *Request, dst []int32) []int32 {
	if r.view != nil {
		if w, ok := r.viewI32s("slots"); ok {
			if len(w) > 0 {
				q.views |= ViewSlots
				q.viewSlot = &w[0]
			}
			return w
		}
	}
	return r.i32s("slots", dst)
}

// startsAt reports whether s (of any length) starts at p.
func startsAt[T uint32 | int32](s []T, p *T) bool {
	return p != nil && cap(s) > 0 && &s[:1][0] == p
}
