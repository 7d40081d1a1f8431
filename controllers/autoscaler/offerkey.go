package autoscaler

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
	"github.com/scaleplane/scaleplane/scaling"
)

// A workload's Scaling status is built and offered to the writer only
// when it could be written: the writer writes a status whose significant
// part (scalings.Fingerprints) did not change at most once per refresh
// interval, and only the newest offer. offerKey is a key of everything
// status.Build reads that can change its significant part, so that a
// reconcile whose key is the last offer's, while the writer says no write
// of this Scaling could happen before the next tick (Writer.Settled),
// builds nothing: the status it would have built differs from the last one
// offered in soft values alone, which the writer would not write before
// the refresh, and the tick before the refresh offers again. The key
// leaves out only what Fingerprints leaves out of the significant part
// (trigger values, the newest recommendation's time, LastActive, the
// History's failures) and what status.Build does not read; anything else
// it reads is in the key, with a little more than it needs (a trigger's
// failures, the decisions' full text), which only makes a reconcile build
// when it did not have to. The variable-length part is a 64-bit maphash
// (seeded per process): two different inputs share a key with odds of
// about 2^-64 per reconcile.

// offerKey identifies the inputs of one Scaling status; see above.
type offerKey struct {
	// object is the workload's version read through the loop's profile:
	// its count, scale config, generation and layout.
	object objectIdentity
	state  State
	// hpa is the built-in HPA's version in hpa mode, empty when none
	// was read.
	hpaUID   types.UID
	hpaRV    string
	activity int64
	// sum hashes the rest: message, decision, history, decisions.
	sum uint64
}

var offerSeed = maphash.MakeSeed()

// keyOf is the offer key of in, read from the workload's version id and
// with activity as status.lastActivity; false when it cannot be keyed (an
// object or HPA without a resourceVersion), and the status is then built
// on every reconcile.
func keyOf(id objectIdentity, in *status.Input, hpa *autoscalingv2.HorizontalPodAutoscaler, activity time.Time) (offerKey, bool) {
	if id.rv == "" {
		return offerKey{}, false
	}
	k := offerKey{object: id, state: in.State}
	if hpa != nil {
		if hpa.ResourceVersion == "" {
			return offerKey{}, false
		}
		k.hpaUID, k.hpaRV = hpa.UID, hpa.ResourceVersion
	}
	if !activity.IsZero() {
		k.activity = activity.UnixNano()
	}
	var h keyHash
	h.h.SetSeed(offerSeed)
	h.int(in.Generation)
	h.str(in.Message)
	h.str(in.WriteError)
	h.str(in.Throttled)
	h.decision(in.Decision)
	if in.State == StateAutoscaling && in.History != nil {
		h.bool(true)
		h.history(in.History)
	} else {
		h.bool(false)
	}
	h.int(int64(len(in.Decisions)))
	for _, d := range in.Decisions {
		h.time(d.Time.Time)
		h.int(int64(d.Current))
		h.int(int64(d.Desired))
		h.str(d.Action)
		h.str(d.Reason)
		h.str(d.Error)
	}
	k.sum = h.h.Sum64()
	return k, true
}

// keyHash writes values into a maphash, each with what tells it from the
// next (strings with their length).
type keyHash struct {
	h   maphash.Hash
	buf [8]byte
}

func (h *keyHash) int(v int64) {
	binary.LittleEndian.PutUint64(h.buf[:], uint64(v))
	_, _ = h.h.Write(h.buf[:])
}

func (h *keyHash) bool(b bool) {
	if b {
		h.int(1)
	} else {
		h.int(0)
	}
}

func (h *keyHash) float(f float64) { h.int(int64(math.Float64bits(f))) }

func (h *keyHash) str(s string) {
	h.int(int64(len(s)))
	_, _ = h.h.WriteString(s)
}

func (h *keyHash) time(t time.Time) {
	h.bool(t.IsZero())
	if !t.IsZero() {
		h.int(t.UnixNano())
	}
}

// decision hashes what status.Build, and the reasons it writes
// (scaling.HeldReason, LimitedReason, FallbackReason,
// status.TriggerProblems), read of d; not the triggers' values and ratios,
// which are soft (or not read).
func (h *keyHash) decision(d *scaling.Decision) {
	if d == nil {
		h.bool(false)
		return
	}
	h.bool(true)
	for _, v := range []int32{d.Current, d.Desired, d.Min, d.Max, d.Recommended, d.Stabilized, d.StabilizationWindowSeconds} {
		h.int(int64(v))
	}
	h.str(string(d.Action))
	h.str(d.Reason)
	h.str(d.Stabilization)
	h.time(d.StabilizedUntil)
	h.str(d.Limit)
	h.str(d.LimitMessage)
	h.str(d.LimitPolicy)
	h.int(int64(len(d.Triggers)))
	for _, t := range d.Triggers {
		h.str(t.Name)
		h.str(string(t.Type))
		h.float(t.Threshold)
		h.int(int64(t.Desired))
		h.int(int64(t.Failures))
		h.bool(t.WithinTolerance)
		h.bool(t.Valid)
		h.bool(t.Active)
		h.bool(t.Fallback)
		h.str(t.Problem)
	}
	if f := d.Fallback; f != nil {
		h.bool(true)
		h.int(int64(len(f.Triggers)))
		for _, n := range f.Triggers {
			h.str(n)
		}
		h.int(int64(f.FailureThreshold))
		h.str(string(f.Behavior))
		h.int(int64(f.Replicas))
	} else {
		h.bool(false)
	}
	if f := d.Formula; f != nil {
		// The inputs' names, in any order (a map's); their values are
		// the formula inputs' trigger values, soft.
		h.bool(true)
		h.str(f.Formula)
		h.str(f.Problem)
		var names uint64
		for n := range f.Inputs {
			names += maphash.String(offerSeed, n)
		}
		h.int(int64(len(f.Inputs)))
		h.int(int64(names))
	} else {
		h.bool(false)
	}
}

// history hashes what status.HistoryToStatus writes of h but its soft
// values: the recommendations as it keeps them (the newest of each run of
// equal counts) without the newest one's time when they are in time order
// (all of them otherwise), the events and the times of waking and
// scaling.
func (h *keyHash) history(hs *scaling.History) {
	h.time(hs.AwakeSince)
	h.time(hs.LastScaleTime)
	recs := hs.Recommendations
	sorted := true
	for i := 1; i < len(recs); i++ {
		sorted = sorted && !recs[i].Time.Before(recs[i-1].Time)
	}
	h.bool(sorted)
	kept := len(recs)
	if sorted {
		kept = 0
		for i, r := range recs {
			if i+1 == len(recs) || recs[i+1].Replicas != r.Replicas {
				kept++
			}
		}
	}
	h.int(int64(kept))
	for i, r := range recs {
		if sorted && i+1 < len(recs) && recs[i+1].Replicas == r.Replicas {
			continue
		}
		h.int(int64(r.Replicas))
		if !sorted || i+1 < len(recs) {
			h.time(r.Time)
		}
	}
	for _, evs := range [][]scaling.ScaleEvent{hs.ScaleUpEvents, hs.ScaleDownEvents} {
		h.int(int64(len(evs)))
		for _, e := range evs {
			h.int(int64(e.Change))
			h.time(e.Time)
			h.bool(e.Outdated)
		}
	}
}
