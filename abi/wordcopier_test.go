package abi_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// countingCopier is a WordCopier that moves words with encoding/binary
// one at a time and counts the words it moved.
type countingCopier struct{ words int }

func (c *countingCopier) GetU32(dst []uint32, b []byte) {
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	c.words += len(dst)
}

func (c *countingCopier) GetI32(dst []int32, b []byte) {
	for i := range dst {
		dst[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	c.words += len(dst)
}

func (c *countingCopier) PutU32(out []byte, v []uint32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], x)
	}
	c.words += len(v)
}

func (c *countingCopier) PutI32(out []byte, v []int32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
	}
	c.words += len(v)
}

// TestSetWordCopier checks that an installed copier carries every word
// array of the sample messages, with the bytes and values of the portable
// loops, and that nil restores those loops.
func TestSetWordCopier(t *testing.T) {
	long := make([]uint32, 37) // more than one 8-word step, and a tail
	slots := make([]int32, 37)
	for i := range long {
		long[i], slots[i] = uint32(i)*0x01020304, int32(i)-18
	}
	reqs := append(sampleRequests(), abi.Request{Op: abi.OpInsert, Instance: 1,
		Insert: core.InsertParams{Tokens: long, Slots: slots}})
	resps := append(sampleResponses(), abi.Response{Op: abi.OpMatch, Match: core.MatchResult{Indices: slots}})
	var plainReqs, plainResps [][]byte
	for i := range reqs {
		plainReqs = append(plainReqs, abi.AppendRequest(nil, &reqs[i]))
	}
	for i := range resps {
		plainResps = append(plainResps, abi.AppendResponse(nil, &resps[i]))
	}

	c := &countingCopier{}
	abi.SetWordCopier(c)
	defer abi.SetWordCopier(nil)
	for i := range reqs {
		b := abi.AppendRequest(nil, &reqs[i])
		require.Equal(t, plainReqs[i], b, reqs[i].Op.String())
		var got abi.Request
		require.NoError(t, abi.DecodeRequest(&got, b), reqs[i].Op.String())
		require.Equal(t, abi.AppendRequest(nil, &got), b, reqs[i].Op.String())
	}
	for i := range resps {
		b := abi.AppendResponse(nil, &resps[i])
		require.Equal(t, plainResps[i], b, resps[i].Op.String())
		var got abi.Response
		require.NoError(t, abi.DecodeResponse(&got, b), resps[i].Op.String())
		require.Equal(t, abi.AppendResponse(nil, &got), b, resps[i].Op.String())
	}
	require.Greater(t, c.words, 4*37, "the copier moved the word arrays")

	abi.SetWordCopier(nil)
	before := c.words
	_ = abi.AppendRequest(nil, &reqs[len(reqs)-1])
	require.Equal(t, before, c.words, "nil restores the portable loops")
}
