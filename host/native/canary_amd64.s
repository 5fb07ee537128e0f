//go:build amd64 && !purego && !race

#include "textflag.h"

// The canary's record kernels (canary_amd64.go says why), AVX2. A block
// is 8 records, lane i of a block record j+i. Each kernel stops exactly
// where the Go loop does: a block with a lane that fails (a slot out of
// the run, a record that is not its step) or lies past n is finished
// under a lane mask, and the count is the lanes before the first failing
// one (TZCNT of the inverted lane bits).
//
// A record's term is mix(tok ^ posword): x *= k1; x ^= x>>16; x *= k2;
// x ^= x>>15, all mod 2^32 (mixKeyed). Writing, the records of a block
// are the chain before it plus the inclusive prefix sums of its terms;
// checking, record i minus record i-1 must equal term i, which needs no
// chain at all, so checks of different blocks never wait on each other.
//
// Registers:
//	DI rec, SI sl, DX tk, CX n, AX j (records done), BX scratch/lane bits/count
//	Y15 k1, Y14 k2 (broadcast)
//	Y13 the block's position words, Y12 their step a block (8*canaryPosMul)
//	Y11 the block's expected slots s0+j+i, Y10 their step (8)
//	Y9  the chain before the block, every lane (write)
//	Y8  VPERMD index: lane 7 in every lane (write)
//	Y7  VPERMD index: rotate up a lane (check)
//	Y6  lane index 0..7, Y5 lane mask (VPMASKMOVD)
//	Y4  the previous block rotated up a lane: its last record in lane 0 (check)
//	Y0-Y3 work

// lane i: i*canaryPosMul mod 2^32 (the position word offsets of a block)
DATA canaryLanePos<>+0(SB)/4, $0x00000000
DATA canaryLanePos<>+4(SB)/4, $0x9e3779b9
DATA canaryLanePos<>+8(SB)/4, $0x3c6ef372
DATA canaryLanePos<>+12(SB)/4, $0xdaa66d2b
DATA canaryLanePos<>+16(SB)/4, $0x78dde6e4
DATA canaryLanePos<>+20(SB)/4, $0x1715609d
DATA canaryLanePos<>+24(SB)/4, $0xb54cda56
DATA canaryLanePos<>+28(SB)/4, $0x5384540f
GLOBL canaryLanePos<>(SB), RODATA|NOPTR, $32

// lane i: i (the slot offsets of a block)
DATA canaryLaneIdx<>+0(SB)/4, $0
DATA canaryLaneIdx<>+4(SB)/4, $1
DATA canaryLaneIdx<>+8(SB)/4, $2
DATA canaryLaneIdx<>+12(SB)/4, $3
DATA canaryLaneIdx<>+16(SB)/4, $4
DATA canaryLaneIdx<>+20(SB)/4, $5
DATA canaryLaneIdx<>+24(SB)/4, $6
DATA canaryLaneIdx<>+28(SB)/4, $7
GLOBL canaryLaneIdx<>(SB), RODATA|NOPTR, $32

// VPERMD index rotating 8 lanes up by one: lane i takes lane i-1, lane 0 lane 7
DATA canaryRot8<>+0(SB)/4, $7
DATA canaryRot8<>+4(SB)/4, $0
DATA canaryRot8<>+8(SB)/4, $1
DATA canaryRot8<>+12(SB)/4, $2
DATA canaryRot8<>+16(SB)/4, $3
DATA canaryRot8<>+20(SB)/4, $4
DATA canaryRot8<>+24(SB)/4, $5
DATA canaryRot8<>+28(SB)/4, $6
GLOBL canaryRot8<>(SB), RODATA|NOPTR, $32

// a block's steps and last lane: 8, 8*canaryPosMul, 7
DATA canaryBlock<>+0(SB)/4, $8
DATA canaryBlock<>+4(SB)/4, $0xf1bbcdc8
DATA canaryBlock<>+8(SB)/4, $7
GLOBL canaryBlock<>(SB), RODATA|NOPTR, $12

// MIX turns tokens into terms in place: x = tok ^ posword, then the mixer.
#define MIX(X, T, POS, K1, K2) \
	VPXOR   POS, X, X \
	VPMULLD K1, X, X  \
	VPSRLD  $16, X, T \
	VPXOR   T, X, X   \
	VPMULLD K2, X, X  \
	VPSRLD  $15, X, T \
	VPXOR   T, X, X

// PREFIX2 turns the terms in X into their inclusive prefix sums: within
// each 128-bit half by byte shifts, then the low half's total (its lane
// 3) added to the high half.
#define PREFIX2(X, T) \
	VPSLLDQ    $4, X, T     \
	VPADDD     T, X, X      \
	VPSLLDQ    $8, X, T     \
	VPADDD     T, X, X      \
	VPSHUFD    $0xff, X, T  \
	VPERM2I128 $0x08, T, T, T \
	VPADDD     T, X, X

// KERNELARGS loads the arguments both kernels share into the registers
// above (h, broadcast, into HY: the chain before the block when writing,
// the previous record when checking) and the block steps.
#define KERNELARGS(HX, HY) \
	MOVQ         rec+0(FP), DI              \
	MOVQ         sl+8(FP), SI               \
	MOVQ         tk+16(FP), DX              \
	MOVQ         n+24(FP), CX               \
	VMOVDQU      canaryLaneIdx<>(SB), Y6    \
	MOVL         s0+32(FP), BX              \
	VMOVD        BX, X11                    \
	VPBROADCASTD X11, Y11                   \
	VPADDD       Y6, Y11, Y11               \
	MOVL         h+36(FP), BX               \
	VMOVD        BX, HX                     \
	VPBROADCASTD HX, HY                     \
	MOVL         p+40(FP), BX               \
	VMOVD        BX, X13                    \
	VPBROADCASTD X13, Y13                   \
	VPADDD       canaryLanePos<>(SB), Y13, Y13 \
	MOVL         k1+44(FP), BX              \
	VMOVD        BX, X15                    \
	VPBROADCASTD X15, Y15                   \
	MOVL         k2+48(FP), BX              \
	VMOVD        BX, X14                    \
	VPBROADCASTD X14, Y14                   \
	VPBROADCASTD canaryBlock<>+0(SB), Y10   \
	VPBROADCASTD canaryBlock<>+4(SB), Y12

// LANEMASK2 sets M's lanes below the count in R (at most 8) to all ones,
// the others to zero: the mask of VPMASKMOVD (XM is M's low half).
#define LANEMASK2(R, XM, M, IOTA) \
	VMOVD        R, XM        \
	VPBROADCASTD XM, M        \
	VPCMPGTD     IOTA, M, M

// TAILSLOTS, with BX lanes left (1 to 7), loads the slots of those lanes
// into D under the lane mask Y5 and leaves in BX the lanes whose slot is
// in the run (bit i: slot i is s0+j+i).
#define TAILSLOTS(D) \
	LANEMASK2(BX, X5, Y5, Y6) \
	VPMASKMOVD (SI)(AX*4), Y5, D \
	VPCMPEQD   Y11, D, D \
	VPAND      Y5, D, D \
	VMOVMSKPS  D, BX

// STEPS compares the block's records in Y1 with its terms in Y0: each
// record minus the one before it (the records rotated up a lane into Y3,
// lane 0 the previous block's last from Y4) must be its term; Y1 lane i
// is all ones where record i is, and Y4 is left the records before.
#define STEPS() \
	VPERMD   Y1, Y7, Y3     \
	VPBLENDD $1, Y4, Y3, Y4 \
	VPSUBD   Y4, Y1, Y1     \
	VPCMPEQD Y0, Y1, Y1

// func writeWordsAVX2(rec *uint32, sl *int32, tk *uint32, n int, s0 int32, h, p, k1, k2 uint32) int
//
// Writes records j = 0, 1, ... while j < n and sl[j] == s0+j; returns
// how many.
TEXT ·writeWordsAVX2(SB), NOSPLIT, $0-64
	KERNELARGS(X9, Y9)
	VPBROADCASTD canaryBlock<>+8(SB), Y8
	XORQ         AX, AX

w2loop:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $8
	JLT  w2tail

	VMOVDQU  (SI)(AX*4), Y0
	VPCMPEQD Y11, Y0, Y0
	VMOVMSKPS Y0, BX // bit i: slot i is s0+j+i
	CMPL     BX, $0xff
	JNE      w2part

	VMOVDQU (DX)(AX*4), Y0
	MIX(Y0, Y1, Y13, Y15, Y14)
	PREFIX2(Y0, Y1)
	VPADDD  Y9, Y0, Y0 // plus the chain before the block: the records
	VMOVDQU Y0, (DI)(AX*4)
	VPERMD  Y0, Y8, Y9 // the last record, every lane: the next block's chain
	VPADDD  Y12, Y13, Y13
	VPADDD  Y10, Y11, Y11
	ADDQ    $8, AX
	JMP     w2loop

w2tail:
	// Fewer than 8 left: the slots of the lanes below n only.
	TESTQ BX, BX
	JLE   w2done
	TAILSLOTS(Y0)

w2part:
	// The block's first lanes up to the first slot out of the run.
	NOTL   BX
	TZCNTL BX, BX
	TESTL  BX, BX
	JEQ    w2done
	LANEMASK2(BX, X5, Y5, Y6)
	VPMASKMOVD (DX)(AX*4), Y5, Y0
	MIX(Y0, Y1, Y13, Y15, Y14)
	PREFIX2(Y0, Y1)
	VPADDD     Y9, Y0, Y0
	VPMASKMOVD Y0, Y5, (DI)(AX*4)
	ADDQ       BX, AX

w2done:
	VZEROUPPER
	MOVQ AX, ret+56(FP)
	RET

// func checkWordsAVX2(rec *uint32, sl *int32, tk *uint32, n int, s0 int32, h, p, k1, k2 uint32) int
//
// Confirms records j = 0, 1, ... while j < n, sl[j] == s0+j and rec[j] -
// rec[j-1] is the term of tk[j] (rec[-1] is h); returns how many. The
// records before each lane's come from registers, not from a load at
// rec-4: a run is often a page of 16 records, one cache line, and that
// load would touch the line before it too.
TEXT ·checkWordsAVX2(SB), NOSPLIT, $0-64
	KERNELARGS(X4, Y4)
	VMOVDQU      canaryRot8<>(SB), Y7
	XORQ         AX, AX

c2loop:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $8
	JLT  c2tail

	VMOVDQU   (SI)(AX*4), Y2
	VPCMPEQD  Y11, Y2, Y2 // slots in the run
	VMOVMSKPS Y2, BX
	CMPL      BX, $0xff
	JNE       c2mask

	VMOVDQU  (DX)(AX*4), Y0
	MIX(Y0, Y1, Y13, Y15, Y14)
	VMOVDQU  (DI)(AX*4), Y1
	STEPS()
	VMOVMSKPS Y1, BX
	CMPL     BX, $0xff
	JNE      c2part

	VMOVDQA Y3, Y4
	VPADDD  Y12, Y13, Y13
	VPADDD  Y10, Y11, Y11
	ADDQ    $8, AX
	JMP     c2loop

c2tail:
	// Fewer than 8 left: the slots of the lanes below n only.
	TESTQ BX, BX
	JLE   c2done
	TAILSLOTS(Y2)

c2mask:
	// The last block: records are read only where the slot is in the
	// run, so the end of a run (often the end of a page's cache line)
	// never touches the line after it; and when lane 0's slot is not
	// (the usual end of a run) the count is known from the slots alone,
	// without waiting on the previous block's records, which may be a
	// cache miss still in flight.
	TESTL      $1, BX
	JEQ        c2done
	VPMASKMOVD (DX)(AX*4), Y2, Y0
	MIX(Y0, Y1, Y13, Y15, Y14)
	VPMASKMOVD (DI)(AX*4), Y2, Y1
	STEPS()
	VPAND      Y2, Y1, Y1
	VMOVMSKPS  Y1, BX

c2part:
	// Confirmed: the lanes before the first that failed.
	NOTL   BX
	TZCNTL BX, BX
	ADDQ   BX, AX

c2done:
	VZEROUPPER
	MOVQ AX, ret+56(FP)
	RET
