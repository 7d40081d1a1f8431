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
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RetryAfterSeconds is what a 429 asks the client to wait. The API
// server's webhook client honours Retry-After and retries within its
// timeout, so a short wait turns a burst into a delay rather than a
// refused write.
const RetryAfterSeconds = 1

// firstBuffer is how much of a declared Content-Length is allocated before
// the bytes arrive: a client that declares megabytes and sends nothing
// holds this much, not what it declared. Most admission reviews fit.
const firstBuffer = 32 << 10

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
// server's buffer budget; reserved is what the caller releases. The buffer
// grows by doubling up to MaxBodyBytes, so a body of the largest size
// needs exactly MaxBodyBytes of the budget.
func (l *limiter) read(w http.ResponseWriter, r *http.Request) (buf []byte, reserved int64, err error) {
	src := http.MaxBytesReader(w, r.Body, l.maxBody)
	// One more byte than declared lets the read see EOF without growing.
	size := min(int64(firstBuffer), l.maxBody)
	if r.ContentLength >= 0 {
		size = min(size, r.ContentLength+1)
	}
	var probe [1]byte
	for {
		dst := buf[len(buf):cap(buf)]
		if len(dst) == 0 {
			if int64(cap(buf)) >= l.maxBody {
				// Full at the limit: only EOF may follow, and a byte
				// more is MaxBytesReader's error (it returns none of it).
				dst = probe[:]
			} else {
				grow := size
				if cap(buf) > 0 {
					grow = min(int64(cap(buf)), l.maxBody-int64(cap(buf)))
				}
				if l.buffered.Add(grow) > l.maxBuffered {
					l.buffered.Add(-grow)
					return nil, reserved, errBuffersFull
				}
				reserved += grow
				nb := make([]byte, len(buf), int64(cap(buf))+grow)
				copy(nb, buf)
				buf = nb
				dst = buf[len(buf):cap(buf)]
			}
		}
		n, err := src.Read(dst)
		if len(dst) > 0 && &dst[0] != &probe[0] {
			buf = buf[:len(buf)+n]
		}
		switch {
		case errors.Is(err, io.EOF):
			return buf, reserved, nil
		case err != nil:
			return nil, reserved, err
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
