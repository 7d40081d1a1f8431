package scalings

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
)

// What names a Scaling, and what tells two of its statuses apart.

// Name is the name of a workload's Scaling: the name of its built-in HPA
// (controllers.HPAName), <workload>-<kind lower>.<group>, so that two kinds
// of one name in two API groups never share one and kubectl lists a
// workload's Scaling and HPA under one name. Past 253 characters it keeps
// the start of the workload's name and a hash of the whole;
// spec.targetRef names the workload in full.
func Name(workload string, gk schema.GroupKind) string { return controllers.HPAName(workload, gk) }

// LegacyName is the name Scalings had before the group was part of it
// (<workload>-<kind lower>); the autoscaler's Scaling watch renames them.
func LegacyName(workload, kind string) string {
	return workload + "-" + strings.ToLower(kind)
}

// LabelValue is s when it is a valid label value, otherwise its start and
// a hash of the whole, within 63 characters: labels select, and the full
// value lives in the object (spec.targetRef).
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	hash := shortHash(s)
	keep := min(len(s), validation.LabelValueMaxLength-len(hash)-1)
	head := strings.TrimRight(s[:keep], "-._")
	if head == "" || len(validation.IsValidLabelValue(head)) > 0 {
		return hash
	}
	return head + "-" + hash
}

// shortHash is the first 10 hex digits of s's SHA-256.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:10]
}

// Fingerprints are two keys of a status: full changes with
// anything; significant ignores the soft values (trigger values, the
// newest recommendation's time, LastActive), so that a workload whose
// count and conditions hold is written once per refresh interval, not on
// every tick. Condition transition times are left out of both: they
// change only with a condition, which changes the rest of it too.
//
// Both are SHA-256 sums, so a workload's memory holds two short keys,
// not two copies of its status, taken in one pass: significant over the
// JSON of the status without its soft values, full over the same JSON
// followed by the soft values', which together say everything the status
// holds. s is not changed: only the slices whose elements are cleared are
// copied.
func Fingerprints(s v1alpha1.ScalingStatus) (significant, full string) {
	var soft softValues
	s.Conditions = slices.Clone(s.Conditions)
	for i := range s.Conditions {
		s.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	s.Triggers = slices.Clone(s.Triggers)
	soft.Values = make([]string, len(s.Triggers))
	soft.Failures = make([]int32, len(s.Triggers))
	for i := range s.Triggers {
		// A failing trigger's count grows on every tick; its health and
		// fallback, which change what happens, stay significant.
		soft.Values[i], soft.Failures[i] = s.Triggers[i].Value, s.Triggers[i].Failures
		s.Triggers[i].Value, s.Triggers[i].Failures = "", 0
	}
	if s.History != nil {
		h := *s.History
		soft.LastActive, soft.HistoryFailures = h.LastActive, h.Failures
		h.LastActive = nil
		h.Failures = nil
		if n := len(h.Recommendations); n > 0 {
			soft.NewestRecommendation = h.Recommendations[n-1].Time
			h.Recommendations = slices.Clone(h.Recommendations)
			h.Recommendations[n-1].Time = metav1.MicroTime{}
		}
		s.History = &h
	}
	x := hashers.Get().(*statusHasher)
	defer hashers.Put(x)
	x.sum.Reset()
	_ = x.enc.Encode(s)
	significant = string(x.sum.Sum(x.out[:0]))
	_ = x.enc.Encode(soft)
	return significant, string(x.sum.Sum(x.out[:0]))
}

// softValues are the values of a status Fingerprints' significant key
// leaves out.
type softValues struct {
	Values               []string
	Failures             []int32
	LastActive           *metav1.MicroTime
	HistoryFailures      map[string]int32
	NewestRecommendation metav1.MicroTime
}

// statusHasher hashes the JSON a json.Encoder writes into it; reused
// through hashers.
type statusHasher struct {
	sum hash.Hash
	enc *json.Encoder
	out [sha256.Size]byte
}

var hashers = sync.Pool{New: func() any {
	h := &statusHasher{sum: sha256.New()}
	h.enc = json.NewEncoder(h.sum)
	return h
}}

func ptr[T any](v T) *T { return &v }
