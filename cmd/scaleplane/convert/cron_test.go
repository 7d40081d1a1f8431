package convert

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCronTimesAsDailyWindows reads KEDA's five-field cron times as a time
// of day and weekdays, and refuses what a daily window cannot say.
func TestCronTimesAsDailyWindows(t *testing.T) {
	for _, tc := range []struct {
		in, hhmm, days string
		err            bool
	}{
		{in: "0 6 * * *", hhmm: "06:00"},
		{in: "30 8 * * 1-5", hhmm: "08:30", days: "Mon-Fri"},
		{in: "0 19 * * MON-FRI", hhmm: "19:00", days: "Mon-Fri"},
		{in: "5 0 * * 0,6", hhmm: "00:05", days: "Sun,Sat"},
		{in: "5 0 * * 7", hhmm: "00:05", days: "Sun"},
		{in: "0 22 * * fri-mon", hhmm: "22:00", days: "Fri-Mon"},
		{in: "30 * * * *", err: true},
		{in: "*/5 8 * * *", err: true},
		{in: "0 8 1 * *", err: true},
		{in: "0 8 * 1 *", err: true},
		{in: "0 24 * * *", err: true},
		{in: "0 8 * * 8", err: true},
		{in: "@daily", err: true},
		{in: "0 0 8 * * *", err: true},
	} {
		hhmm, days, err := parseCron(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%q: error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if diff := cmp.Diff([2]string{tc.hhmm, tc.days}, [2]string{hhmm, days}); !tc.err && diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
}
