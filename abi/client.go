package abi

// DecodeMatchResponse is [DecodeResponse] for a host that reuses its
// index buffer: when b is a successful match response, the matched
// indices are appended to dst (no allocation when dst has room) and
// r.Match.Indices is the result, r.Match.DeviceLen the number appended.
// A successful match_lock response decodes the same way, with its
// receipt. Any other response (another op, or an error) decodes exactly as
// DecodeResponse decodes it, and dst is not used.
func DecodeMatchResponse(r *Response, b []byte, dst []int32) error {
	return DecodeMatchResponseWith(r, b, dst, nil)
}

// DecodeMatchResponseWith is DecodeMatchResponse reusing s's buffers for
// the actions (s may be nil).
func DecodeMatchResponseWith(r *Response, b []byte, dst []int32, s *Scratch) error {
	if len(b) < ResponseHeaderSize || le.Uint32(b) != ResponseMagic ||
		le.Uint16(b[4:]) != Version || (Op(le.Uint16(b[6:])) != OpMatch && Op(le.Uint16(b[6:])) != OpMatchLock) ||
		Status(le.Uint16(b[8:])) != StatusOK {
		return DecodeResponseWith(r, b, s)
	}
	*r = Response{}
	d := reader{b: b, off: 6, s: s}
	if s != nil {
		s.reset()
	}
	r.Op = Op(d.u16("op"))
	r.Status = Status(d.u16("status"))
	r.Code = Code(d.u16("code"))
	r.Instance = d.u32("instance")
	r.ID = d.u64("request_id")
	m := &r.Match
	base := len(dst)
	m.Indices = d.appendI32s("indices", dst)
	m.DeviceLen = len(m.Indices) - base
	d.matchFields(m)
	if r.Op == OpMatchLock {
		r.Receipt = d.receipt()
	}
	r.Actions = d.actions()
	d.end()
	if d.err != nil {
		m.Indices = dst
		m.DeviceLen = 0
		return d.err
	}
	return nil
}

// appendI32s decodes an i32 array and appends it to dst.
func (r *reader) appendI32s(field string, dst []int32) []int32 {
	n := r.count(field, 4)
	b := r.take(field, 4*n)
	if n == 0 {
		return dst
	}
	k := len(dst)
	dst = growI32(dst, n)
	if len(b) == 4*n {
		getWords(dst[k:], b)
	}
	return dst
}

// growI32 lengthens dst by n elements, reallocating only when its
// capacity is short.
func growI32(dst []int32, n int) []int32 {
	if cap(dst)-len(dst) < n {
		nd := make([]int32, len(dst), max(2*cap(dst), len(dst)+n))
		copy(nd, dst)
		dst = nd
	}
	return dst[:len(dst)+n]
}
