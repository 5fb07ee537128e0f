package abi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

func TestDecodeMatchResponse(t *testing.T) {
	want := abi.Response{Op: abi.OpMatch, Instance: 3, ID: 9, Match: core.MatchResult{
		Indices: []int32{4, 5, 6}, DeviceLen: 3, LastDevice: 0x100000002, LastHost: 1, Best: 0x100000002,
		SWABranchingSeqlen: -1, MambaBranchingSeqlen: -1, FullKVHitLen: 3,
	}, Actions: []core.Action{{Kind: core.ActionFreeDeviceKV, Slots: []int32{1}}}}
	b := abi.AppendResponse(nil, &want)

	var plain abi.Response
	require.NoError(t, abi.DecodeResponse(&plain, b))

	dst := make([]int32, 2, 16)
	dst[0], dst[1] = 7, 8
	var r abi.Response
	require.NoError(t, abi.DecodeMatchResponse(&r, b, dst))
	require.Equal(t, []int32{7, 8, 4, 5, 6}, r.Match.Indices)
	require.Equal(t, 3, r.Match.DeviceLen)
	require.Same(t, &dst[0], &r.Match.Indices[0], "dst had room: no allocation")
	r.Match.Indices = r.Match.Indices[2:]
	require.Equal(t, plain, r, "same as DecodeResponse apart from the prefix")

	// An empty match leaves dst as it was.
	empty := abi.AppendResponse(nil, &abi.Response{Op: abi.OpMatch, Instance: 1})
	require.NoError(t, abi.DecodeMatchResponse(&r, empty, dst))
	require.Equal(t, []int32{7, 8}, r.Match.Indices)
	require.Zero(t, r.Match.DeviceLen)

	// Errors and other ops decode as DecodeResponse does.
	for _, resp := range []abi.Response{
		{Op: abi.OpMatch, Status: abi.StatusError, Code: abi.CodeBusy, Message: "busy"},
		{Op: abi.OpRender, Text: "tree"},
	} {
		b := abi.AppendResponse(nil, &resp)
		var a, c abi.Response
		require.NoError(t, abi.DecodeResponse(&a, b))
		require.NoError(t, abi.DecodeMatchResponse(&c, b, dst))
		require.Equal(t, a, c)
	}

	// Truncation is reported, and dst comes back unchanged.
	for n := abi.ResponseHeaderSize; n < len(b); n++ {
		err := abi.DecodeMatchResponse(&r, b[:n], dst)
		var ae *abi.Error
		require.ErrorAs(t, err, &ae, "cut at %d", n)
		require.Equal(t, abi.CodeTruncated, ae.Code)
		require.Equal(t, []int32{7, 8}, r.Match.Indices)
	}
	require.Error(t, abi.DecodeMatchResponse(&r, append(b, 0), dst), "trailing byte")
}
