package serving

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RetryAfterSeconds is what a 429 asks the client to wait. The API
// server's webhook client honours Retry-After and retries within its
// timeout, so a short wait turns a burst into a delay rather than a
// refused write.
const RetryAfterSeconds = 1

// firstBuffer is how much of a body is held before its first bytes have
// arrived: a client that declares megabytes and sends nothing holds this
// much, not what it declared. Most admission reviews fit.
const firstBuffer = 32 << 10

// firstBuffers recycles the first buffer of bodies declared larger than
// firstBuffer: their first bytes are copied out of it, into a buffer of the
// declared size, once they have arrived.
var firstBuffers = sync.Pool{New: func() any { b := make([]byte, firstBuffer); return &b }}

// Limit wraps h so that every request is within l's bounds before h sees
// it, in this order:
//
//  1. a declared body larger than MaxBodyBytes is answered 413 unread;
//  2. the body is read in full, against the conn's read deadline: past
//     MaxBodyBytes it is 413, past the server's MaxBufferedBytes 429, a
//     client too slow for ReadTimeout 408;
//  3. a request finding MaxInFlight others in their handlers is answered
//     429 with Retry-After at once;
//  4. h runs with a context that ends HandlerTimeout after step 1.
//
// Reading before taking a slot is what keeps slow clients from starving
// the others: a request trickling its body holds memory only for what it
// sent, bounded for all requests together by MaxBufferedBytes, and no slot.
// The handler gets the bytes through r.Body (or Body, without a copy).
func Limit(name string, h http.Handler, l Limits) http.Handler {
	return &limiter{
		next:        h,
		slots:       make(chan struct{}, l.MaxInFlight),
		maxBody:     l.MaxBodyBytes,
		maxBuffered: l.MaxBufferedBytes,
		timeout:     l.HandlerTimeout,
		name:        name,
		inFlight:    inFlight.WithLabelValues(name),
	}
}

type limiter struct {
	next        http.Handler
	slots       chan struct{}
	maxBody     int64
	maxBuffered int64
	buffered    atomic.Int64
	timeout     time.Duration
	name        string
	inFlight    prometheus.Gauge
}

// errBuffersFull: the bodies held by other requests leave no room.
var errBuffersFull = errors.New("buffers full")

func (l *limiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	deadline := time.Now().Add(l.timeout)
	if r.ContentLength > l.maxBody {
		l.refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body of %d bytes is larger than this server's limit of %d bytes", r.ContentLength, l.maxBody))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		b, reserved, err := l.read(w, r)
		defer l.buffered.Add(-reserved)
		if err != nil {
			l.refuseRead(w, err)
			return
		}
		r.Body = &body{Reader: bytes.NewReader(b), b: b}
	}
	select {
	case l.slots <- struct{}{}:
	default:
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		l.refuse(w, http.StatusTooManyRequests, fmt.Sprintf("%d requests are being handled, this server's limit; retry in %d s", cap(l.slots), RetryAfterSeconds))
		return
	}
	l.inFlight.Inc()
	defer func() {
		l.inFlight.Dec()
		<-l.slots
	}()
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	l.next.ServeHTTP(w, r.WithContext(ctx))
}

// read reads r's body into memory, reserving what it allocates from the
// server's buffer budget; reserved is what the caller releases. What the
// budget counts is what the body costs: a body of declared length is read
// into one buffer of exactly that length (allocated once its first
// firstBuffer bytes have arrived), so the bytes a reservation stands for
// are the bytes on the heap, with no copies left behind for the garbage
// collector; only a body without a declared length (chunked, which the API
// server does not send) grows its buffer by doubling, up to MaxBodyBytes.
func (l *limiter) read(w http.ResponseWriter, r *http.Request) (buf []byte, reserved int64, err error) {
	src := http.MaxBytesReader(w, r.Body, l.maxBody)
	reserve := func(n int64) error {
		if l.buffered.Add(n) > l.maxBuffered {
			l.buffered.Add(-n)
			return errBuffersFull
		}
		reserved += n
		return nil
	}
	if r.ContentLength >= 0 {
		buf, err = readDeclared(src, r.ContentLength, reserve)
		return buf, reserved, err
	}
	buf, err = l.readChunked(src, reserve)
	return buf, reserved, err
}

// readDeclared reads a body of n bytes (at most MaxBodyBytes: Limit
// refused larger declarations unread) into a buffer of n bytes.
func readDeclared(src io.Reader, n int64, reserve func(int64) error) ([]byte, error) {
	if n <= firstBuffer {
		if err := reserve(n); err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(src, buf); err != nil {
			return nil, err
		}
		return buf, atEOF(src)
	}
	if err := reserve(firstBuffer); err != nil {
		return nil, err
	}
	first := firstBuffers.Get().(*[]byte)
	defer firstBuffers.Put(first)
	if _, err := io.ReadFull(src, *first); err != nil {
		return nil, err
	}
	// The client is sending: the rest of its declared length is reserved
	// and allocated at once, and the first buffer goes back to the pool.
	if err := reserve(n - firstBuffer); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	copy(buf, *first)
	if _, err := io.ReadFull(src, buf[firstBuffer:]); err != nil {
		return nil, err
	}
	return buf, atEOF(src)
}

// atEOF checks that a body of declared length ends there.
func atEOF(src io.Reader) error {
	var probe [1]byte
	n, err := src.Read(probe[:])
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return err
	case n > 0:
		return errors.New("the request body is longer than its Content-Length")
	}
	return nil
}

// readChunked reads a body of unknown length, growing its buffer by
// doubling from firstBuffer up to MaxBodyBytes, and only when a byte more
// has arrived: a body of the largest size needs exactly MaxBodyBytes of the
// budget, and one that fills a buffer exactly ends in it.
func (l *limiter) readChunked(src io.Reader, reserve func(int64) error) ([]byte, error) {
	var buf []byte
	var probe [1]byte
	for {
		if len(buf) < cap(buf) {
			n, err := src.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			switch {
			case errors.Is(err, io.EOF):
				return buf, nil
			case err != nil:
				return nil, err
			}
			continue
		}
		// Full: grow only for a byte that came. At MaxBodyBytes a byte
		// more is MaxBytesReader's error.
		n, err := src.Read(probe[:])
		switch {
		case n == 0 && errors.Is(err, io.EOF):
			return buf, nil
		case n == 0 && err != nil:
			return nil, err
		case n == 0:
			continue
		}
		grow := min(int64(firstBuffer), l.maxBody)
		if cap(buf) > 0 {
			grow = min(int64(cap(buf)), l.maxBody-int64(cap(buf)))
		}
		if err := reserve(grow); err != nil {
			return nil, err
		}
		nb := make([]byte, len(buf), int64(cap(buf))+grow)
		copy(nb, buf)
		buf = append(nb, probe[0])
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
	}
}

func (l *limiter) refuseRead(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		l.refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than this server's limit of %d bytes", tooLarge.Limit))
	case errors.Is(err, errBuffersFull):
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		l.refuse(w, http.StatusTooManyRequests, fmt.Sprintf("the request bodies being read fill this server's %d bytes of buffers; retry in %d s", l.maxBuffered, RetryAfterSeconds))
	case errors.As(err, &netErr) && netErr.Timeout():
		l.refuse(w, http.StatusRequestTimeout, "the request body did not arrive within this server's read timeout")
	default:
		l.refuse(w, http.StatusBadRequest, fmt.Sprintf("read the request body: %v", err))
	}
}

// refuse answers a request its handler never sees, in the JSON the debug
// and activity endpoints use for their errors.
func (l *limiter) refuse(w http.ResponseWriter, status int, msg string) {
	refused.WithLabelValues(l.name, strconv.Itoa(status)).Inc()
	WriteError(w, status, msg)
}

// WriteError answers {"error": msg} with status.
func WriteError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}

// body is a request body Limit read in full.
type body struct {
	*bytes.Reader
	b []byte
}

func (*body) Close() error { return nil }

// Body returns the bytes of r's body when Limit read it in full before r
// reached its handler (whatever has been read from r.Body since), so that
// a handler that decodes them needs no copy. ok is false when r was not
// served behind Limit, had no body, or its body was replaced.
func Body(r *http.Request) (b []byte, ok bool) {
	if rb, isBody := r.Body.(*body); isBody {
		return rb.b, true
	}
	return nil, false
}
