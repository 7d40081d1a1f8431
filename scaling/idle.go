package scaling

import (
	"fmt"
	"sync"
	"time"
)

// Scale to zero: when a workload whose range starts at 0 may sleep, when it
// wakes, and which dependencies must be awake first. All functions take the
// time; none reads a clock.

// The defaults of an Idle block, KEDA's: wake to one replica, sleep after
// five minutes without activity.
const (
	IdleReplicasAtStart = 1
	IdleTimeout         = 5 * time.Minute
)

// DependencyState is what a dependency reports: its desired count (spec
// replicas) and how many replicas are ready.
type DependencyState struct {
	Replicas      int32 `json:"replicas"`
	ReadyReplicas int32 `json:"readyReplicas"`
	// Cycle: the dependency's own dependsOn leads back to the workload, so
	// each would wait for the other: it is woken, not waited for.
	Cycle bool `json:"cycle,omitempty"`
}

// DependencyCheck says whether a workload waking from zero may start.
type DependencyCheck struct {
	// Wake lists dependencies at zero replicas: the caller wakes them (for
	// instance by recording activity for them) before this workload.
	Wake []string `json:"wake,omitempty"`
	// NotReady lists dependencies without a ready replica yet (including
	// those in Wake and Missing).
	NotReady []string `json:"notReady,omitempty"`
	// Missing lists dependencies absent from the snapshot. They cannot
	// become ready, so the workload waits until they exist.
	Missing []string `json:"missing,omitempty"`
	// Wait is true while any dependency has no ready replica: the workload
	// stays at zero.
	Wait bool `json:"wait"`
}

// CheckDependencies decides, from a snapshot name -> state, which
// dependencies a workload waking from zero must wake and whether it must wait
// for them. It does not look further than one level: each dependency's own
// Decide waits for its own dependencies.
func CheckDependencies(deps []string, snapshot map[string]DependencyState) DependencyCheck {
	var c DependencyCheck
	for _, name := range deps {
		st, ok := snapshot[name]
		switch {
		case !ok:
			c.Missing = append(c.Missing, name)
		case st.Replicas == 0:
			c.Wake = append(c.Wake, name)
		}
		if !ok || (st.ReadyReplicas <= 0 && !st.Cycle) {
			c.NotReady = append(c.NotReady, name)
		}
	}
	c.Wait = len(c.NotReady) > 0
	return c
}

// IdleTimeoutAt returns the idle timeout in force at now: the schedule's
// scaleDownTimeout entry whose time of day (in the schedule's zone) was
// passed last, wrapping around midnight; otherwise idle.timeoutSeconds;
// otherwise IdleTimeout. Unparseable entries are skipped and reported.
func IdleTimeoutAt(idle *Idle, s *Schedule, now time.Time) (time.Duration, error) {
	fallback := IdleTimeout
	if idle != nil && idle.TimeoutSeconds != nil {
		fallback = time.Duration(*idle.TimeoutSeconds) * time.Second
	}
	if s == nil || len(s.ScaleDownTimeout) == 0 {
		return fallback, nil
	}
	loc, err := scheduleLocation(s.TimeZone)
	local := now.In(loc)
	minute := local.Hour()*60 + local.Minute()
	// today: the latest entry at or before now; latest: the day's last entry,
	// in force before the first one of the day.
	today, latest := -1, -1
	var todaySec, latestSec int32
	for _, e := range s.ScaleDownTimeout {
		m, ok := clockMinutes(e.Time)
		if !ok {
			err = joinProblem(err, fmt.Errorf("scaleDownTimeout time %q is not HH:mm", e.Time))
			continue
		}
		if m <= minute && m >= today {
			today, todaySec = m, e.Seconds
		}
		if m >= latest {
			latest, latestSec = m, e.Seconds
		}
	}
	switch {
	case today >= 0:
		return time.Duration(todaySec) * time.Second, err
	case latest >= 0:
		return time.Duration(latestSec) * time.Second, err
	}
	return fallback, err
}

// LastWakeUp returns the latest scheduled wake-up at or before now, and the
// next one after now (both zero without wake-up times). Times of day are
// wall-clock times in the schedule's zone, so a wake-up at 08:00 stays at
// 08:00 local across daylight saving changes. A wall time that does not
// exist on a given day (inside a spring-forward gap) is moved as time.Date
// moves it.
func LastWakeUp(s *Schedule, now time.Time) (last, next time.Time, err error) {
	if s == nil || len(s.WakeUp) == 0 {
		return time.Time{}, time.Time{}, nil
	}
	loc, err := scheduleLocation(s.TimeZone)
	local := now.In(loc)
	y, mo, d := local.Date()
	for _, w := range s.WakeUp {
		m, ok := clockMinutes(w)
		if !ok {
			err = joinProblem(err, fmt.Errorf("wakeUp time %q is not HH:mm", w))
			continue
		}
		// Calendar days, not 24 h steps: a day is 23 or 25 h long when the
		// clocks change.
		t := time.Date(y, mo, d, m/60, m%60, 0, 0, loc)
		prev, following := t, t
		if t.After(now) {
			prev = time.Date(y, mo, d-1, m/60, m%60, 0, 0, loc)
		} else {
			following = time.Date(y, mo, d+1, m/60, m%60, 0, 0, loc)
		}
		if prev.After(last) {
			last = prev
		}
		if next.IsZero() || following.Before(next) {
			next = following
		}
	}
	return last, next, err
}

// clockMinutes parses "HH:mm" (00:00 to 23:59) into minutes after midnight.
func clockMinutes(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	digit := func(b byte) (int, bool) { return int(b - '0'), b >= '0' && b <= '9' }
	h1, ok1 := digit(s[0])
	h2, ok2 := digit(s[1])
	m1, ok3 := digit(s[3])
	m2, ok4 := digit(s[4])
	h, m := h1*10+h2, m1*10+m2
	if !ok1 || !ok2 || !ok3 || !ok4 || h > 23 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

// zoneCache memoizes time zones: time.LoadLocation reads the zone database
// on every call, and a tick evaluates thousands of schedules.
var zoneCache sync.Map // string -> *time.Location

// scheduleLocation returns the schedule's zone, UTC when empty. An unknown
// zone falls back to UTC with an error the decision reports.
func scheduleLocation(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if l, ok := zoneCache.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC, fmt.Errorf("time zone %q: %w; using UTC", name, err)
	}
	zoneCache.Store(name, l)
	return l, nil
}

func joinProblem(err, more error) error {
	if err == nil {
		return more
	}
	return fmt.Errorf("%w; %w", err, more)
}
