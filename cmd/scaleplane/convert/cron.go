package convert

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

var cronKeys = map[string]bool{"timezone": true, "start": true, "end": true, "desiredReplicas": true}

// convertCron maps KEDA's cron trigger (a window from one cron time to the
// next) to scaleplane's cron source (a daily HH:mm window on some
// weekdays). Only windows a daily window can say convert: a fixed minute
// and hour, every day of the month and month, the same weekdays at both
// ends (or every day at the end).
func convertCron(r *Result, t Trigger, name string, p *field.Path) {
	md := t.Metadata
	mp := p.Child("metadata")
	for _, k := range sortedKeys(md) {
		if !cronKeys[k] {
			r.drop(mp.Child(k), "not a key of KEDA's cron scaler")
			return
		}
	}
	start, days, err := parseCron(md["start"])
	if err != nil {
		r.drop(mp.Child("start"), "%q: %v", md["start"], err)
		return
	}
	end, endDays, err := parseCron(md["end"])
	if err != nil {
		r.drop(mp.Child("end"), "%q: %v", md["end"], err)
		return
	}
	if endDays != "" && endDays != days {
		r.drop(mp.Child("end"), "%q: ends on other weekdays than the window opens on; scaleplane's window closes at the next end time of day", md["end"])
		return
	}
	if t.MetricType != "" && t.MetricType != "AverageValue" {
		r.drop(p.Child("metricType"), "%q: scaleplane's cron triggers are AverageValue", t.MetricType)
		return
	}
	out := map[string]string{"start": start, "end": end}
	if z := md["timezone"]; z != "" {
		out["timezone"] = z
	}
	if days != "" {
		out["days"] = days
	}
	if n, ok := md["desiredReplicas"]; ok {
		out["desiredReplicas"] = n
	}
	r.Config.Triggers = append(r.Config.Triggers, scaling.Trigger{Name: name, Type: scaling.TargetAverageValue, Source: scaling.SourceCron, Threshold: 1, Metadata: out})
}

var weekdays = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// parseCron reads "M H * * DOW" and returns HH:mm and the weekdays in
// scaleplane's form ("" for every day).
func parseCron(s string) (hhmm, days string, err error) {
	f := strings.Fields(s)
	if len(f) != 5 {
		return "", "", fmt.Errorf("scaleplane converts only five-field cron times with a fixed minute and hour, such as \"30 8 * * 1-5\"")
	}
	m, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || m < 0 || m > 59 || h < 0 || h > 23 {
		return "", "", fmt.Errorf("not a fixed minute and hour: scaleplane's cron window is daily, from one time of day to another")
	}
	if f[2] != "*" || f[3] != "*" {
		return "", "", fmt.Errorf("days of the month and months have no counterpart: scaleplane's cron window repeats on weekdays")
	}
	hhmm = fmt.Sprintf("%02d:%02d", h, m)
	if f[4] == "*" || f[4] == "?" {
		return hhmm, "", nil
	}
	var parts []string
	for _, item := range strings.Split(f[4], ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := weekday(lo)
		if err != nil {
			return "", "", err
		}
		if !isRange {
			parts = append(parts, a)
			continue
		}
		b, err := weekday(hi)
		if err != nil {
			return "", "", err
		}
		parts = append(parts, a+"-"+b)
	}
	return hhmm, strings.Join(parts, ","), nil
}

func weekday(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 7 {
		return weekdays[n], nil
	}
	for _, d := range weekdays {
		if strings.EqualFold(s, d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("weekday %q: scaleplane reads 0-7 or Sun..Sat, single days, ranges and lists", s)
}
