package scaling

import (
	"k8s.io/apimachinery/pkg/api/equality"
)

// Default applies the mutating admission rules M1–M5 to cur and returns the
// result; old is the stored object on UPDATE and nil on CREATE.
//
// M6 is a property of the function rather than a rule inside it: it returns
// a deep copy, so neither input is changed; it fills only absent fields
// (except where M3 and M5 say a value follows replicas); and it depends on
// nothing but its arguments, so the same request always yields the same
// patch, and a request that needs nothing yields a value equal to cur.
// Default(old, Default(old, w, l), l) equals Default(old, w, l).
//
// M7: no value it writes is one l.Schema refuses; DefaultWithWarnings says
// which were left out and why.
func Default(old *Workload, cur Workload, l Layout) Workload {
	w, _ := DefaultWithWarnings(old, cur, l)
	return w
}

// DefaultWithWarnings is Default, plus a warning for every value M1–M5
// would have written that the schema refuses and that was left out (M7),
// for the admission response.
func DefaultWithWarnings(old *Workload, cur Workload, l Layout) (Workload, []string) {
	w := cur.deepCopy()

	// M1: a bare replicas count becomes a pinned config so that every object
	// states its scaling intent explicitly. Only at a spec path: creating an
	// annotation the user never wrote would surprise tools that own metadata.
	if w.Config == nil && w.Replicas != nil && !l.ConfigInAnnotation {
		w.Config = &Config{MinReplicas: ptrTo(*w.Replicas), MaxReplicas: ptrTo(*w.Replicas)}
	}

	if w.Config != nil {
		// M2 comes before M3 so that M3 compares complete bounds; comparing a
		// half-written config would make Default depend on how many times it
		// ran.
		defaultBounds(w.Config, w.Replicas)

		// M3: a config pinned to the old count was "no autoscaling, exactly
		// R"; when only R moves, the pin moves with it instead of leaving a
		// config that contradicts R.
		if old != nil && pinsFollow(old, w) {
			*w.Config.MinReplicas = *w.Replicas
			*w.Config.MaxReplicas = *w.Replicas
		}
	}

	// M4: /scale and an HPA targeting the workload itself need a count to
	// start from. With a child target the child keeps its own count.
	if w.Replicas == nil && w.Config.HasRange() && l.TargetSelf {
		w.Replicas = ptrTo(*w.Config.MinReplicas)
	}

	// M5: one count for the whole workload, so racks stay equal.
	if w.Replicas != nil {
		for i := range w.Groups {
			w.Groups[i].Members = ptrTo(*w.Replicas)
		}
	}
	return w, fitSchema(cur, &w, l)
}

// defaultBounds fills c's missing bounds (M2) from r, the workload's
// replicas (nil when absent).
func defaultBounds(c *Config, r *int32) {
	if c.MinReplicas == nil {
		// A config that only says maxReplicas: 0 means "pinned at zero" (what
		// replicas: 0 defaults to); a default of 1 would turn it into an
		// invalid range and block the scale-to-zero-by-hand V2 protects.
		lo := int32(1)
		if c.MaxReplicas != nil && *c.MaxReplicas == 0 {
			lo = 0
		}
		c.MinReplicas = &lo
	}
	if c.MaxReplicas == nil {
		hi := *c.MinReplicas
		if r != nil && *r > hi {
			hi = *r
		}
		c.MaxReplicas = &hi
	}
}

// effectiveBounds returns c's bounds with M2 applied, without copying c.
func effectiveBounds(c *Config, r *int32) (lo, hi int32) {
	b := Config{MinReplicas: c.MinReplicas, MaxReplicas: c.MaxReplicas}
	defaultBounds(&b, r)
	return *b.MinReplicas, *b.MaxReplicas
}

// effectiveConfig returns w's config with M2 applied, or nil. The
// controllers use it so that a config stored without its defaults (an object
// created before the webhook was installed, or an annotation the profile does
// not rewrite) still means what admission would have made of it.
//
// Only the bounds are new: the rest is shared with w.Config, which callers
// read and never change. A deep copy here cost every admission review some
// forty allocations for fields M2 never touches.
func effectiveConfig(w Workload) *Config {
	if w.Config == nil {
		return nil
	}
	c := *w.Config
	lo, hi := effectiveBounds(w.Config, w.Replicas)
	c.MinReplicas, c.MaxReplicas = &lo, &hi
	return &c
}

// pinsFollow reports whether M3 applies to w (already through M1 and M2).
func pinsFollow(old *Workload, w Workload) bool {
	if old.Replicas == nil || w.Replicas == nil || *old.Replicas == *w.Replicas {
		return false
	}
	if old.Config == nil {
		return false
	}
	// Check the pin on the bounds alone; copying the old config is only
	// worth it when the answer depends on the rest of it.
	lo, hi := effectiveBounds(old.Config, old.Replicas)
	if lo != hi || lo != *old.Replicas {
		return false
	}
	oc := effectiveConfig(*old)
	// Semantic equality treats nil and empty lists alike and compares
	// quantities by value, so a re-encoded but unchanged config still counts
	// as unchanged.
	return equality.Semantic.DeepEqual(oc, w.Config)
}

func ptrTo[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// deepCopy returns a copy of w that shares no memory with it.
func (w Workload) deepCopy() Workload {
	out := w
	out.Replicas = clonePtr(w.Replicas)
	out.Config = w.Config.DeepCopy()
	out.StatusReplicas = clonePtr(w.StatusReplicas)
	if w.Groups != nil {
		out.Groups = make([]Group, len(w.Groups))
		for i, g := range w.Groups {
			out.Groups[i] = Group{Name: g.Name, Members: clonePtr(g.Members)}
		}
	}
	if w.GroupStatus != nil {
		out.GroupStatus = make([]GroupStatus, len(w.GroupStatus))
		for i, s := range w.GroupStatus {
			out.GroupStatus[i] = GroupStatus{
				Name:               s.Name,
				ReadyMembers:       clonePtr(s.ReadyMembers),
				ObservedGeneration: clonePtr(s.ObservedGeneration),
			}
		}
	}
	return out
}
