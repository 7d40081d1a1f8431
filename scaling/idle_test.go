package scaling

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestIdleTimeoutAt(t *testing.T) {
	paris := &Schedule{TimeZone: "Europe/Paris", ScaleDownTimeout: []ScaleDownTimeout{
		{Time: "19:00", Seconds: 60}, // unsorted on purpose
		{Time: "08:00", Seconds: 3600},
	}}
	idle := &Idle{TimeoutSeconds: new(int32(600))}
	tests := []struct {
		name     string
		idle     *Idle
		schedule *Schedule
		now      string
		want     time.Duration
		wantErr  bool
	}{
		{name: "no idle block: five minutes", now: "2026-06-10T12:00:00Z", want: 5 * time.Minute},
		{name: "idle timeout", idle: idle, now: "2026-06-10T12:00:00Z", want: 10 * time.Minute},
		{name: "business hours (10:00 CEST)", idle: idle, schedule: paris, now: "2026-06-10T08:00:00Z", want: time.Hour},
		{name: "evening (19:00 CEST)", idle: idle, schedule: paris, now: "2026-06-10T17:00:00Z", want: time.Minute},
		{name: "one minute before 19:00 CEST", idle: idle, schedule: paris, now: "2026-06-10T16:59:00Z", want: time.Hour},
		{name: "night wraps to the previous evening's entry (03:00 CEST)", idle: idle, schedule: paris, now: "2026-06-10T01:00:00Z", want: time.Minute},
		{name: "08:00 CET in winter is 07:00 UTC", schedule: paris, now: "2026-01-10T07:00:00Z", want: time.Hour},
		{name: "07:00 UTC in summer is already 09:00 CEST", schedule: paris, now: "2026-06-10T06:00:00Z", want: time.Hour},
		{name: "05:59 UTC in summer is 07:59 CEST", schedule: paris, now: "2026-06-10T05:59:00Z", want: time.Minute},
		{name: "a bad entry is skipped and reported", idle: idle,
			schedule: &Schedule{ScaleDownTimeout: []ScaleDownTimeout{{Time: "8h", Seconds: 1}, {Time: "06:00", Seconds: 30}}},
			now:      "2026-06-10T12:00:00Z", want: 30 * time.Second, wantErr: true},
		{name: "an unknown zone falls back to UTC and is reported",
			schedule: &Schedule{TimeZone: "Mars/Olympus", ScaleDownTimeout: []ScaleDownTimeout{{Time: "12:00", Seconds: 30}, {Time: "13:00", Seconds: 90}}},
			now:      "2026-06-10T12:30:00Z", want: 30 * time.Second, wantErr: true},
	}
	type result struct {
		Timeout time.Duration
		Err     bool
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IdleTimeoutAt(tc.idle, tc.schedule, mustTime(t, tc.now))
			if diff := cmp.Diff(result{tc.want, tc.wantErr}, result{got, err != nil}); diff != "" {
				t.Errorf("IdleTimeoutAt (-want +got):\n%s (err: %v)", diff, err)
			}
		})
	}
}

func TestLastWakeUp(t *testing.T) {
	paris := &Schedule{TimeZone: "Europe/Paris", WakeUp: []string{"13:30", "08:00"}}
	tests := []struct {
		name       string
		schedule   *Schedule
		now        string
		last, next string
	}{
		{name: "between two wake-ups", schedule: paris, now: "2026-06-10T10:00:00Z",
			last: "2026-06-10T08:00:00+02:00", next: "2026-06-10T13:30:00+02:00"},
		{name: "before the first wake-up of the day", schedule: paris, now: "2026-06-10T05:00:00Z",
			last: "2026-06-09T13:30:00+02:00", next: "2026-06-10T08:00:00+02:00"},
		{name: "exactly at a wake-up", schedule: paris, now: "2026-06-10T06:00:00Z",
			last: "2026-06-10T08:00:00+02:00", next: "2026-06-10T13:30:00+02:00"},
		// 2026-03-29: clocks go from 02:00 CET to 03:00 CEST.
		{name: "the night the clocks go forward", schedule: paris, now: "2026-03-29T03:00:00Z",
			last: "2026-03-28T13:30:00+01:00", next: "2026-03-29T08:00:00+02:00"},
		// 2026-10-25: clocks go from 03:00 CEST back to 02:00 CET.
		{name: "the night the clocks go back", schedule: paris, now: "2026-10-25T03:00:00Z",
			last: "2026-10-24T13:30:00+02:00", next: "2026-10-25T08:00:00+01:00"},
		{name: "UTC when no zone is given", schedule: &Schedule{WakeUp: []string{"08:00"}}, now: "2026-06-10T10:00:00Z",
			last: "2026-06-10T08:00:00Z", next: "2026-06-11T08:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			last, next, err := LastWakeUp(tc.schedule, mustTime(t, tc.now))
			if err != nil {
				t.Fatal(err)
			}
			want := []time.Time{mustTime(t, tc.last), mustTime(t, tc.next)}
			if diff := cmp.Diff(want, []time.Time{last, next}, cmp.Comparer(time.Time.Equal)); diff != "" {
				t.Errorf("LastWakeUp (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckDependencies(t *testing.T) {
	snap := map[string]DependencyState{
		"asleep":   {},
		"starting": {Replicas: 2},
		"ready":    {Replicas: 2, ReadyReplicas: 1},
		"cycle":    {Cycle: true},
	}
	tests := []struct {
		name string
		deps []string
		want DependencyCheck
	}{
		{name: "no dependencies", want: DependencyCheck{}},
		{name: "all ready", deps: []string{"ready"}, want: DependencyCheck{}},
		{name: "asleep: wake and wait", deps: []string{"ready", "asleep"},
			want: DependencyCheck{Wake: []string{"asleep"}, NotReady: []string{"asleep"}, Wait: true}},
		{name: "starting: wait without waking", deps: []string{"starting"},
			want: DependencyCheck{NotReady: []string{"starting"}, Wait: true}},
		{name: "in a cycle: wake without waiting", deps: []string{"cycle"},
			want: DependencyCheck{Wake: []string{"cycle"}}},
		{name: "missing: wait", deps: []string{"ghost", "asleep"},
			want: DependencyCheck{Wake: []string{"asleep"}, NotReady: []string{"ghost", "asleep"}, Missing: []string{"ghost"}, Wait: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CheckDependencies(tc.deps, snap)); diff != "" {
				t.Errorf("CheckDependencies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClockMinutes(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"00:00", 0, true}, {"08:30", 510, true}, {"23:59", 1439, true},
		{"24:00", 0, false}, {"12:60", 0, false}, {"8:30", 0, false}, {"08-30", 0, false}, {"", 0, false}, {"ab:cd", 0, false},
	}
	type result struct {
		Minutes int
		OK      bool
	}
	for _, tc := range tests {
		m, ok := clockMinutes(tc.in)
		if diff := cmp.Diff(result{tc.want, tc.ok}, result{m, ok}); diff != "" {
			t.Errorf("clockMinutes(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
