package promql

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// xorHead is a series' head chunk when it is a classic XOR chunk, which is
// what every scraped float sample goes to: the chunk's bytes and the
// encoder's state held in the series itself. chunkenc's XORChunk and its
// appender are two more objects per series (80 bytes) and grow the chunk
// by doubling; this writes the same bytes (TestXORHeadMatchesChunkenc)
// and grows by what the series' previous chunk and the samples so far
// predict (start, predictSize).
type xorHead struct {
	// b is the chunk as chunkenc.FromData(chunkenc.EncXOR, b) reads it:
	// the sample count (2 bytes, big endian), then the bit stream. Empty
	// when the series has no XOR head; its capacity may be kept for the
	// next chunk.
	b []byte
	// t and v are the last sample's timestamp and value, tDelta the last
	// timestamp delta.
	t      int64
	tDelta uint64
	v      float64
	// leading and trailing are the zero bits of the last value delta
	// written with its own widths (leading is 0xff before the first).
	leading, trailing uint8
	// free is how many low bits of the last byte are not written yet.
	free uint8
}

// xorHeadMin is the capacity of a series' first XOR head.
const xorHeadMin = 32

// maxXORSampleBytes bounds what one sample adds to an XOR chunk: a 10-byte
// timestamp varint and a 64-bit value, or a 68-bit delta of delta and a
// 77-bit value delta.
const maxXORSampleBytes = 20

func (h *xorHead) active() bool { return len(h.b) != 0 }

func (h *xorHead) samples() int { return int(binary.BigEndian.Uint16(h.b)) }

// minT is the first sample's timestamp, which the chunk starts with.
func (h *xorHead) minT() int64 {
	if h.samples() == 0 {
		return h.t
	}
	t, _ := binary.Varint(h.b[2:])
	return t
}

// start begins a new chunk at t. Its buffer is sized for half of
// sizeHint (the length of the series' previous chunk) and grows by halves
// of what the samples so far predict for the full chunk (predictSize): a
// buffer sized for the whole chunk at once would carry half a chunk of
// spare capacity on average over the chunk's life, halves carry a
// quarter, for one more allocation per chunk.
func (h *xorHead) start(t int64, sizeHint int) {
	want := max(xorHeadMin, (sizeHint+sizeHint/32)/2)
	if cap(h.b) < want || cap(h.b) > want+want/4 {
		h.b = sized(nil, want)
	}
	h.b = append(h.b[:0], 0, 0)
	h.t, h.tDelta, h.v = t, 0, 0
	h.leading, h.trailing, h.free = 0xff, 0, 0
}

// sized returns b's bytes in a new slice of at least n bytes of capacity,
// rounded up to the allocator's size class (which the heap takes anyway).
func sized(b []byte, n int) []byte {
	out := append([]byte(nil), make([]byte, n)...)
	return append(out[:0], b...)
}

// predictSize is the capacity to grow a full buffer to: half more of
// what a chunk of samplesPerChunk samples takes at the bytes per sample
// written so far (the first sample, about 16 bytes, left aside), up to
// that size with a little room, and at least one more sample's worth.
func (h *xorHead) predictSize() int {
	n := len(h.b)
	least := n + maxXORSampleBytes
	num := h.samples()
	if num < 2 {
		return least
	}
	const first = 2 + 16
	per := float64(n-first) / float64(num-1)
	full := n + int(per*float64(samplesPerChunk-num)*33/32)
	return min(max(least, min(n+full/2, full)), 2*n+maxXORSampleBytes)
}

// append adds one sample, as chunkenc's xorAppender.Append does.
func (h *xorHead) append(t int64, v float64) {
	if cap(h.b)-len(h.b) < maxXORSampleBytes {
		h.b = sized(h.b, h.predictSize())
	}
	var tDelta uint64
	num := binary.BigEndian.Uint16(h.b)
	switch num {
	case 0:
		h.b = binary.AppendVarint(h.b, t)
		h.writeBits(math.Float64bits(v), 64)
	case 1:
		tDelta = uint64(t - h.t)
		// The first sample took whole bytes, so the stream is aligned.
		h.b = binary.AppendUvarint(h.b, tDelta)
		h.writeValue(v)
	default:
		tDelta = uint64(t - h.t)
		dod := int64(tDelta - h.tDelta)
		switch {
		case dod == 0:
			h.writeBits(0, 1)
		case bitRange(dod, 14):
			h.writeBits(0b10<<14|uint64(dod)&(1<<14-1), 16)
		case bitRange(dod, 17):
			h.writeBits(0b110, 3)
			h.writeBits(uint64(dod), 17)
		case bitRange(dod, 20):
			h.writeBits(0b1110, 4)
			h.writeBits(uint64(dod), 20)
		default:
			h.writeBits(0b1111, 4)
			h.writeBits(uint64(dod), 64)
		}
		h.writeValue(v)
	}
	h.t, h.v, h.tDelta = t, v, tDelta
	binary.BigEndian.PutUint16(h.b, num+1)
}

// bitRange reports whether x fits in nbits bits as the XOR encoding's
// delta-of-delta buckets count them.
func bitRange(x int64, nbits uint8) bool {
	return -((1<<(nbits-1))-1) <= x && x <= 1<<(nbits-1)
}

// writeValue writes v as its XOR with the previous value.
func (h *xorHead) writeValue(v float64) {
	delta := math.Float64bits(v) ^ math.Float64bits(h.v)
	if delta == 0 {
		h.writeBits(0, 1)
		return
	}
	leading := uint8(bits.LeadingZeros64(delta))
	trailing := uint8(bits.TrailingZeros64(delta))
	// Five bits hold the leading zeros.
	leading = min(leading, 31)
	if h.leading != 0xff && leading >= h.leading && trailing >= h.trailing {
		h.writeBits(0b10, 2)
		h.writeBits(delta>>h.trailing, 64-int(h.leading)-int(h.trailing))
		return
	}
	h.leading, h.trailing = leading, trailing
	sig := 64 - leading - trailing
	// 64 significant bits are written as 0 in the 6-bit field.
	h.writeBits(0b11<<11|uint64(leading)<<6|uint64(sig)&(1<<6-1), 13)
	h.writeBits(delta>>trailing, int(sig))
}

// writeBits writes the low nbits of u, most significant first. The caller
// made room for them.
func (h *xorHead) writeBits(u uint64, nbits int) {
	for nbits > 0 {
		if h.free == 0 {
			h.b = append(h.b, 0)
			h.free = 8
		}
		n := min(int(h.free), nbits)
		part := byte(u>>(nbits-n)) & byte(1<<n-1)
		h.b[len(h.b)-1] |= part << (int(h.free) - n)
		h.free -= uint8(n)
		nbits -= n
	}
}
