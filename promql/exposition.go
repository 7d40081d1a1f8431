package promql

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// Scrape limits: Prometheus' sample_limit, label_limit,
// label_name_length_limit, label_value_length_limit and body_size_limit,
// with defaults for a 512 MiB pod (docs/profiles.md has the arithmetic).
const (
	// DefaultMaxBodyBytes bounds one decompressed response.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultSampleLimit bounds the samples of requested names one scrape
	// may carry: a pod's trigger metrics are tens to hundreds of series.
	DefaultSampleLimit = 10_000
	// DefaultLabelLimit bounds the labels of one requested series, the
	// target's own (namespace, pod, the workload's) and the metric name
	// included.
	DefaultLabelLimit = 64
	// DefaultLabelNameLengthLimit bounds one label name, in bytes.
	DefaultLabelNameLengthLimit = 256
	// DefaultLabelValueLengthLimit bounds one label value (the metric name
	// included), in bytes.
	DefaultLabelValueLengthLimit = 4096
)

// windowSize is the first size of a scrape's read buffer. The exposition is
// parsed a window of whole lines at a time, so a scrape holds this much of
// its body, not all of it: 32 scrapes at once hold 8 MiB between them.
const windowSize = 256 << 10

// windows recycles read buffers of windowSize between scrapes; larger ones
// (grown for one long line) are not kept.
var windows = sync.Pool{New: func() any { b := make([]byte, windowSize); return &b }}

// scrapeLimits are one scrape's bounds; 0 means none.
type scrapeLimits struct {
	bodyBytes                 int64
	samples                   int
	labels, nameLen, valueLen int
	// maxLine is the longest line of a requested series the label limits
	// allow (every label at its longest, every value byte escaped).
	maxLine int
}

func newScrapeLimits(o ScraperOptions) scrapeLimits {
	l := scrapeLimits{bodyBytes: o.MaxBodyBytes, samples: max(o.SampleLimit, 0),
		labels: max(o.LabelLimit, 0), nameLen: max(o.LabelNameLengthLimit, 0), valueLen: max(o.LabelValueLengthLimit, 0)}
	l.maxLine = int(min(l.bodyBytes, math.MaxInt32))
	if l.labels > 0 && l.nameLen > 0 && l.valueLen > 0 {
		// name="value", per label, with quotes, separator and escapes;
		// then the sample's value and timestamp.
		perLine := int64(l.labels)*int64(l.nameLen+2*l.valueLen+6) + 64
		l.maxLine = int(max(min(perLine, int64(l.maxLine)), windowSize))
	}
	return l
}

// Errors of a scrape that the failures metric tells apart.
var (
	errBodyTooLarge = errors.New("body too large")
	errSampleLimit  = errors.New("sample limit exceeded")
	errLabelLimit   = errors.New("label limit exceeded")
	errParse        = errors.New("not the Prometheus text format")
)

// exposition reads a text exposition (Prometheus' format 0.0.4) from a
// body with Prometheus' own parser, a window of whole lines at a time, and
// hands every sample of a requested metric name to add with the target's
// labels. A series whose name nobody requested is skipped before its labels
// are built: a page of half a million such lines costs the parser's work
// and a few allocations per window, nothing per series.
type exposition struct {
	lim    scrapeLimits
	names  map[string]struct{}
	target labels.Labels
	add    func(ls labels.Labels, v float64) error

	buf  []byte // the window: data in buf[:n]; buf[len(buf)-1] is kept free
	n    int
	read int64
	// mtype is the type of the latest TYPE line, which decides how "le"
	// and "quantile" values are written (see labels); it lives across
	// windows, as it would in one parse of the whole body.
	mtype   model.MetricType
	samples int
	parsed  labels.Labels
	lb      *labels.Builder
}

// readExposition parses body into add; see exposition.
func readExposition(body io.Reader, lim scrapeLimits, names map[string]struct{}, target labels.Labels, add func(labels.Labels, float64) error) error {
	pooled := windows.Get().(*[]byte)
	e := &exposition{lim: lim, names: names, target: target, add: add, buf: *pooled, lb: labels.NewBuilder(labels.EmptyLabels())}
	defer func() {
		if len(e.buf) == windowSize {
			*pooled = e.buf
		}
		windows.Put(pooled)
	}()
	return e.run(body)
}

func (e *exposition) run(body io.Reader) error {
	for {
		m, err := io.ReadFull(body, e.buf[e.n:len(e.buf)-1])
		e.n += m
		if err := e.count(m); err != nil {
			return err
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			// The parser adds the last line's line break in the free byte.
			return e.parse(e.buf[:e.n])
		case err != nil:
			return err
		}
		if last := bytes.LastIndexByte(e.buf[:e.n], '\n'); last >= 0 {
			// The parser appends a line break to what it is given, over
			// buf[last], which is one already.
			if err := e.parse(e.buf[:last]); err != nil {
				return err
			}
			e.n = copy(e.buf, e.buf[last+1:e.n])
			continue
		}
		// One line fills the window.
		if len(e.buf)-1 < e.lim.maxLine {
			grown := make([]byte, min(2*len(e.buf), e.lim.maxLine+1))
			copy(grown, e.buf[:e.n])
			e.buf = grown
			continue
		}
		if err := e.skipLongLine(body); err != nil {
			return err
		}
	}
}

// count adds n bytes read to the body's size.
func (e *exposition) count(n int) error {
	e.read += int64(n)
	if e.lim.bodyBytes > 0 && e.read > e.lim.bodyBytes {
		return errBodyTooLarge
	}
	return nil
}

// skipLongLine deals with a line longer than the label limits allow a
// requested series to be, whose start fills the window: a comment or a
// series of a name nobody requested is skipped unread, as every series of
// such a name is; anything else fails the scrape.
func (e *exposition) skipLongLine(body io.Reader) error {
	line := bytes.TrimLeft(e.buf[:e.n], " \t")
	if len(line) > 0 && line[0] != '#' {
		name, known := seriesName(line)
		if !known && len(line) > 0 && line[0] == '{' {
			return fmt.Errorf("%w: a line longer than %d bytes whose metric name is not at its start (%.100q...); split it or raise metrics.labelValueLengthLimit", errLabelLimit, e.lim.maxLine, line)
		}
		// A name that does not end within the window is longer than any
		// requested one can be.
		if _, requested := e.names[string(name)]; known && requested {
			return fmt.Errorf("%w: a series of %q longer than %d bytes, more than metrics.labelLimit (%d) labels of metrics.labelNameLengthLimit (%d) and metrics.labelValueLengthLimit (%d) bytes take; expose shorter labels or raise the limits",
				errLabelLimit, name, e.lim.maxLine, e.lim.labels, e.lim.nameLen, e.lim.valueLen)
		}
	}
	e.n = 0
	for {
		m, err := body.Read(e.buf[:len(e.buf)-1])
		if err := e.count(m); err != nil {
			return err
		}
		if i := bytes.IndexByte(e.buf[:m], '\n'); i >= 0 {
			e.n = copy(e.buf, e.buf[i+1:m])
			return nil
		}
		switch {
		case errors.Is(err, io.EOF):
			// The long line was the last; run reads the end again.
			return nil
		case err != nil:
			return err
		}
	}
}

// parse parses one window of whole lines (the last one's line break
// excluded: the parser appends one, in the byte after b).
func (e *exposition) parse(b []byte) error {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return fmt.Errorf("%w: a NUL byte at %q", errParse, b[max(0, i-40):i])
	}
	p := textparse.NewPromParser(b, nil, false)
	for {
		entry, err := p.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			// The parser quotes the whole line, which may be as long as
			// the label limits allow: the message is kept short, as it
			// is stored with the target and logged.
			return fmt.Errorf("%w: %s", errParse, truncate(err.Error(), 300))
		}
		switch entry {
		case textparse.EntryType:
			name, typ := p.Type()
			if bytes.IndexByte(name, '\n') >= 0 {
				return rawLineBreak(name)
			}
			e.mtype = typ
		case textparse.EntryHelp:
			if name, _ := p.Help(); bytes.IndexByte(name, '\n') >= 0 {
				return rawLineBreak(name)
			}
		case textparse.EntrySeries:
			if err := e.series(p); err != nil {
				return err
			}
		}
	}
}

// rawLineBreak: the parser takes a line break inside quotes as part of the
// string, but a window may end at it; it is refused wherever it falls, so
// that the outcome does not depend on where windows end.
func rawLineBreak(b []byte) error {
	return fmt.Errorf("%w: a line break inside quotes in %.100q; write it as \\n", errParse, b)
}

// series hands the parser's current sample to add when its name was
// requested.
func (e *exposition) series(p textparse.Parser) error {
	met, _, v := p.Series()
	if bytes.IndexByte(met, '\n') >= 0 {
		return rawLineBreak(met)
	}
	name, known := seriesName(met)
	if known {
		if _, ok := e.names[string(name)]; !ok {
			return nil
		}
	}
	p.Labels(&e.parsed)
	metric := e.parsed.Get(model.MetricNameLabel)
	if known && metric != string(name) {
		// The parser's name keeps the blanks a line starts with.
		metric = string(name)
	}
	if !known {
		if _, ok := e.names[metric]; !ok {
			return nil
		}
	}
	// Every sample of a requested name counts, duplicates included, as
	// Prometheus counts every sample its relabelling keeps.
	e.samples++
	if e.lim.samples > 0 && e.samples > e.lim.samples {
		return fmt.Errorf("%w: more than metrics.sampleLimit (%d) samples of requested metric names (the last of %q); expose fewer series or raise the limit", errSampleLimit, e.lim.samples, metric)
	}
	if dup, ok := e.parsed.HasDuplicateLabelNames(); ok {
		return fmt.Errorf("%w: label %q twice in %.200s", errParse, dup, met)
	}
	ls := e.labels(metric)
	if !ls.IsValid(model.UTF8Validation) {
		return fmt.Errorf("%w: invalid metric name or label names in %.200s", errParse, met)
	}
	if err := e.checkLabels(ls, metric); err != nil {
		return err
	}
	return e.add(ls, v)
}

// labels are the stored labels of the parsed series: the scraped ones
// (one named like a target label kept as exported_<name>, one with an empty
// value dropped), the target's, and the metric name. A bucket's "le" and a
// quantile's "quantile" are written as Go writes the float
// (strconv 'g': "1", "0.25", "+Inf"), as scaleplane stored them before it
// used Prometheus' parser (which writes "1.0" since Prometheus 3): a query
// written for `le="1"` keeps working.
func (e *exposition) labels(metric string) labels.Labels {
	e.lb.Reset(labels.EmptyLabels())
	e.parsed.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		v := l.Value
		if (e.mtype == model.MetricTypeHistogram && l.Name == model.BucketLabel) || (e.mtype == model.MetricTypeSummary && l.Name == model.QuantileLabel) {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				v = formatFloat(f)
			}
		}
		n := l.Name
		if e.target.Has(n) {
			n = "exported_" + n
		}
		e.lb.Set(n, v)
	})
	e.target.Range(func(l labels.Label) { e.lb.Set(l.Name, l.Value) })
	e.lb.Set(model.MetricNameLabel, metric)
	return e.lb.Labels()
}

// checkLabels applies Prometheus' label_limit, label_name_length_limit and
// label_value_length_limit to a requested series, target labels included:
// one series over them fails the scrape.
func (e *exposition) checkLabels(ls labels.Labels, metric string) error {
	if n := ls.Len(); e.lim.labels > 0 && n > e.lim.labels {
		return fmt.Errorf("%w: a series of %.100q has %d labels, more than metrics.labelLimit (%d); expose fewer labels or raise the limit", errLabelLimit, metric, n, e.lim.labels)
	}
	if e.lim.nameLen <= 0 && e.lim.valueLen <= 0 {
		return nil
	}
	return ls.Validate(func(l labels.Label) error {
		if e.lim.nameLen > 0 && len(l.Name) > e.lim.nameLen {
			return fmt.Errorf("%w: a series of %.100q has a label name of %d bytes (%.50q...), more than metrics.labelNameLengthLimit (%d); shorten it or raise the limit", errLabelLimit, metric, len(l.Name), l.Name, e.lim.nameLen)
		}
		if e.lim.valueLen > 0 && len(l.Value) > e.lim.valueLen {
			return fmt.Errorf("%w: a series of %.100q has a value of %d bytes for label %.50q, more than metrics.labelValueLengthLimit (%d); shorten it or raise the limit", errLabelLimit, metric, len(l.Value), l.Name, e.lim.valueLen)
		}
		return nil
	})
}

// seriesName is the metric name at the start of a series as the parser
// returns it (name{labels} or {"name", labels}), without building its
// labels. known is false when the name is not first, or quoted with
// escapes: the caller then builds the labels to learn it.
func seriesName(met []byte) (name []byte, known bool) {
	// The parser's series starts where its line does, blanks included.
	met = bytes.TrimLeft(met, " \t")
	if len(met) == 0 {
		return nil, false
	}
	if met[0] != '{' {
		for i, c := range met {
			if c == '{' || c == ' ' || c == '\t' {
				return met[:i], true
			}
		}
		return met, true
	}
	rest := bytes.TrimLeft(met[1:], " \t")
	if len(rest) == 0 || rest[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(rest); i++ {
		switch rest[i] {
		case '\\':
			return nil, false
		case '"':
			after := bytes.TrimLeft(rest[i+1:], " \t")
			if len(after) > 0 && (after[0] == ',' || after[0] == '}') {
				return rest[1:i], true
			}
			return nil, false
		}
	}
	return nil, false
}

// truncate shortens s to at most n bytes (and a marker), on a rune
// boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("... (%d bytes more)", len(s)-n)
}

// formatFloat writes a bucket bound or quantile as scaleplane stores it.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
