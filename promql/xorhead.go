package promql

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"
)

// xorHead is a series' head chunk when it is a classic XOR chunk, which is
// what every scraped float sample goes to: one buffer holding the
// encoder's state (xorState) and then the chunk's bytes. chunkenc's
// XORChunk and its appender are two more objects per series (80 bytes)
// and grow the chunk by doubling; this writes the same bytes
// (TestXORHeadMatchesChunkenc) and grows by what the series' previous
// chunk and the samples so far predict (start, predictSize). The state
// lives in the buffer rather than in the series record so that a series
// without a head (its last chunk full and closed) pays nothing for it.
type xorHead struct {
	// p, n and c are the buffer, as a pointer and 16-bit length and
	// capacity where a slice takes 24 bytes: a chunk of samplesPerChunk
	// samples is at most 2,402 bytes. After the state, the buffer holds
	// what chunkenc.FromData(chunkenc.EncXOR, b) reads: the sample count
	// (2 bytes, big endian), then the bit stream. Nil when the series has
	// no XOR head.
	p    *byte
	n, c uint16
}

// xorState is the encoder's state, at the start of the head's buffer.
type xorState struct {
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

// xorStateSize is where the chunk begins in the head's buffer.
const xorStateSize = int(unsafe.Sizeof(xorState{}))

// xorHeadMin is the capacity of a series' first XOR chunk.
const xorHeadMin = 32

// maxXORSampleBytes bounds what one sample adds to an XOR chunk: a 10-byte
// timestamp varint and a 64-bit value, or a 68-bit delta of delta and a
// 77-bit value delta.
const maxXORSampleBytes = 20

// state is the encoder's state; the head is active. The buffer is a heap
// allocation of at least xorStateSize bytes, aligned for it.
func (h xorHead) state() *xorState { return (*xorState)(unsafe.Pointer(h.p)) }

// buf returns the whole buffer, state included, with its capacity.
func (h xorHead) buf() []byte { return unsafe.Slice(h.p, h.c)[:h.n] }

// bytes returns the chunk's bytes, with the buffer's capacity.
func (h xorHead) bytes() []byte {
	if h.p == nil {
		return nil
	}
	return h.buf()[xorStateSize:]
}

// setBuf makes b (state included) the head's buffer.
func (h *xorHead) setBuf(b []byte) {
	b = b[:len(b):min(cap(b), math.MaxUint16)]
	h.p, h.n, h.c = unsafe.SliceData(b), uint16(len(b)), uint16(cap(b))
}

// capacity is what the buffer holds, state and spare room included.
func (h xorHead) capacity() int { return int(h.c) }

func (h xorHead) samples() int { return int(binary.BigEndian.Uint16(h.bytes())) }

// lastT and lastV are the newest sample's timestamp and value.
func (h xorHead) lastT() int64   { return h.state().t }
func (h xorHead) lastV() float64 { return h.state().v }

// minT is the first sample's timestamp, which the chunk starts with.
func (h xorHead) minT() int64 {
	if h.samples() == 0 {
		return h.state().t
	}
	t, _ := binary.Varint(h.bytes()[2:])
	return t
}

// start begins a new chunk at t. Its buffer is sized for half of
// sizeHint (the length of the series' previous chunk) and grows by halves
// of what the samples so far predict for the full chunk (predictSize): a
// buffer sized for the whole chunk at once would carry half a chunk of
// spare capacity on average over the chunk's life, halves carry a
// quarter, for one more allocation per chunk.
func (h *xorHead) start(t int64, sizeHint int) {
	want := xorStateSize + max(xorHeadMin, (sizeHint+sizeHint/32)/2)
	h.setBuf(sized(nil, want)[:xorStateSize+2])
	*h.state() = xorState{t: t, leading: 0xff}
}

// sized returns b's bytes in a new slice of at least n bytes of capacity,
// rounded up to the allocator's size class (which the heap takes anyway).
// The bytes past b's are zero.
func sized(b []byte, n int) []byte {
	out := append([]byte(nil), make([]byte, n)...)
	return append(out[:0], b...)
}

// predictSize is the capacity to grow a full buffer to: half more of
// what a chunk of samplesPerChunk samples takes at the bytes per sample
// written so far (the first sample, about 16 bytes, left aside), up to
// that size with a little room, and at least one more sample's worth.
func (h xorHead) predictSize() int {
	n := int(h.n) - xorStateSize
	least := n + maxXORSampleBytes
	num := h.samples()
	if num < 2 {
		return xorStateSize + least
	}
	const first = 2 + 16
	per := float64(n-first) / float64(num-1)
	full := n + int(per*float64(samplesPerChunk-num)*33/32)
	return xorStateSize + min(max(least, min(n+full/2, full)), 2*n+maxXORSampleBytes)
}

// append adds one sample, as chunkenc's xorAppender.Append does.
func (h *xorHead) append(t int64, v float64) {
	st := *h.state()
	w := bitWriter{b: h.buf(), free: st.free}
	if cap(w.b)-len(w.b) < maxXORSampleBytes {
		w.b = sized(w.b, h.predictSize())
	}
	var tDelta uint64
	num := binary.BigEndian.Uint16(w.b[xorStateSize:])
	switch num {
	case 0:
		w.b = binary.AppendVarint(w.b, t)
		w.writeBits(math.Float64bits(v), 64)
	case 1:
		tDelta = uint64(t - st.t)
		// The first sample took whole bytes, so the stream is aligned.
		w.b = binary.AppendUvarint(w.b, tDelta)
		st.writeValue(&w, v)
	default:
		tDelta = uint64(t - st.t)
		dod := int64(tDelta - st.tDelta)
		switch {
		case dod == 0:
			w.writeBits(0, 1)
		case bitRange(dod, 14):
			w.writeBits(0b10<<14|uint64(dod)&(1<<14-1), 16)
		case bitRange(dod, 17):
			w.writeBits(0b110, 3)
			w.writeBits(uint64(dod), 17)
		case bitRange(dod, 20):
			w.writeBits(0b1110, 4)
			w.writeBits(uint64(dod), 20)
		default:
			w.writeBits(0b1111, 4)
			w.writeBits(uint64(dod), 64)
		}
		st.writeValue(&w, v)
	}
	st.t, st.v, st.tDelta = t, v, tDelta
	st.free = w.free
	binary.BigEndian.PutUint16(w.b[xorStateSize:], num+1)
	h.setBuf(w.b)
	*h.state() = st
}

// bitRange reports whether x fits in nbits bits as the XOR encoding's
// delta-of-delta buckets count them.
func bitRange(x int64, nbits uint8) bool {
	return -((1<<(nbits-1))-1) <= x && x <= 1<<(nbits-1)
}

// writeValue writes v as its XOR with the previous value.
func (h *xorState) writeValue(w *bitWriter, v float64) {
	delta := math.Float64bits(v) ^ math.Float64bits(h.v)
	if delta == 0 {
		w.writeBits(0, 1)
		return
	}
	leading := uint8(bits.LeadingZeros64(delta))
	trailing := uint8(bits.TrailingZeros64(delta))
	// Five bits hold the leading zeros.
	leading = min(leading, 31)
	if h.leading != 0xff && leading >= h.leading && trailing >= h.trailing {
		w.writeBits(0b10, 2)
		w.writeBits(delta>>h.trailing, 64-int(h.leading)-int(h.trailing))
		return
	}
	h.leading, h.trailing = leading, trailing
	sig := 64 - leading - trailing
	// 64 significant bits are written as 0 in the 6-bit field.
	w.writeBits(0b11<<11|uint64(leading)<<6|uint64(sig)&(1<<6-1), 13)
	w.writeBits(delta>>trailing, int(sig))
}

// bitWriter appends bits to a chunk while a sample is written.
type bitWriter struct {
	b []byte
	// free is how many low bits of the last byte are not written yet.
	free uint8
}

// writeBits writes the low nbits of u, most significant first. The caller
// made room for them.
func (w *bitWriter) writeBits(u uint64, nbits int) {
	for nbits > 0 {
		if w.free == 0 {
			w.b = append(w.b, 0)
			w.free = 8
		}
		n := min(int(w.free), nbits)
		part := byte(u>>(nbits-n)) & byte(1<<n-1)
		w.b[len(w.b)-1] |= part << (int(w.free) - n)
		w.free -= uint8(n)
		nbits -= n
	}
}
