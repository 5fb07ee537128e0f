package abi_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
)

// fakeViewer is a WordViewer that decodes into fresh slices (abi's tests
// take no unsafe views) and counts the words it was asked for; refuse
// makes it decline every array, as a misaligned or big-endian one is.
type fakeViewer struct {
	refuse bool
	words  int
}

func (v *fakeViewer) ViewI32(b []byte) ([]int32, bool) {
	if v.refuse {
		return nil, false
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	v.words += len(out)
	return out, true
}

func (v *fakeViewer) ViewU32(b []byte) ([]uint32, bool) {
	if v.refuse {
		return nil, false
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	v.words += len(out)
	return out, true
}

// TestScratchWordViewer: a Scratch with a viewer decodes every sample
// response to the same values as one without (and as DecodeResponse),
// handing the viewer every action slot list and event token array; a
// viewer that declines leaves the copies; a truncated response fails
// the same way with and without one.
func TestScratchWordViewer(t *testing.T) {
	for _, resp := range sampleResponses() {
		b := abi.AppendResponse(nil, &resp)
		var want abi.Response
		require.NoError(t, abi.DecodeResponse(&want, b), resp.Op.String())
		words := 0
		for _, a := range want.Actions {
			words += len(a.Slots) + len(a.Incoming)
		}
		for _, e := range want.Events {
			words += len(e.TokenIDs)
		}
		for _, refuse := range []bool{false, true} {
			v := &fakeViewer{refuse: refuse}
			var s abi.Scratch
			s.SetWordViewer(v)
			for range 2 { // a reused Scratch too
				var got abi.Response
				require.NoError(t, abi.DecodeResponseWith(&got, b, &s), resp.Op.String())
				require.Equal(t, want, got, "%s refuse=%v", resp.Op, refuse)
				var plain abi.Scratch
				require.NoError(t, abi.DecodeResponseWith(&got, b, &plain), resp.Op.String())
				require.Equal(t, want, got, resp.Op.String())
			}
			if refuse {
				require.Zero(t, v.words, resp.Op.String())
			} else {
				require.Equal(t, 2*words, v.words, resp.Op.String())
			}
			for cut := 1; cut < len(b)-abi.ResponseHeaderSize; cut += 7 {
				var r1, r2 abi.Response
				e1 := abi.DecodeResponseWith(&r1, b[:len(b)-cut], &s)
				e2 := abi.DecodeResponse(&r2, b[:len(b)-cut])
				require.Equal(t, e2, e1, "%s cut %d", resp.Op, cut)
			}
		}
	}
	// The match decoder's actions go through the viewer too.
	for _, resp := range sampleResponses() {
		if resp.Op != abi.OpMatch && resp.Op != abi.OpMatchLock {
			continue
		}
		b := abi.AppendResponse(nil, &resp)
		var want, got abi.Response
		require.NoError(t, abi.DecodeMatchResponse(&want, b, nil))
		v := &fakeViewer{}
		var s abi.Scratch
		s.SetWordViewer(v)
		require.NoError(t, abi.DecodeMatchResponseWith(&got, b, nil, &s))
		require.Equal(t, want, got, resp.Op.String())
		require.NotZero(t, v.words, resp.Op.String())
	}
}
