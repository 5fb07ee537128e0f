package native

import (
	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/internal/wordview"
)

// On a little-endian machine a word slice's memory is its wire encoding,
// so the host side of every wire engine (requests encoded, responses
// decoded: mostly token, slot and index arrays) copies word arrays as
// memory instead of converting them one at a time. The bytes are the
// portable codec's exactly (abi.TestSetWordCopier); big-endian hosts keep
// the portable loops. Responses' bulk word arrays are read in place
// there too (responseViewer).
func init() {
	if littleEndian {
		abi.SetWordCopier(wordview.Copier{})
		responseViewer = wordview.Viewer{}
		requestViewer = wordview.Viewer{}
	}
}

// littleEndian: words in memory are in wire (and canary record) byte
// order, so this package's word views (the codec's copier, canary
// records, pool slot runs) are valid; elsewhere they fall back to loops.
var littleEndian = wordview.LittleEndian()

// responseViewer reads the bulk word arrays of responses (evicted slots,
// above all) in place, on little-endian hosts: every wire engine's
// scratch decodes with it (see wireEngine.scratch for the lifetime).
var responseViewer abi.WordViewer

// requestViewer lets the in-process engine's dispatcher read the bulk
// word arrays of requests in place, on little-endian hosts (see
// newDispatchTransport).
var requestViewer abi.WordViewer
