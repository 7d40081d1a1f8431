package promql

import (
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// The store's inverted index, as Prometheus' MemPostings: for every label
// name and value, the slots of the series carrying that pair, sorted. A
// Select intersects the lists of its equality (and small regex-set)
// matchers and tests only the series left, so its cost follows the number
// of series it returns, not the number stored. Everything here runs under
// Store.mtx: writes (new and removed series) under the write lock, Select
// under the read lock.

// maxSetMatches bounds the alternatives of a regex matcher (a|b|c) that
// are looked up one by one; a longer set is tested on candidates instead.
const maxSetMatches = 64

// postingList is held by pointer so that adding a slot never stores a
// map key again. Keys are the symbol table's strings, so the index holds
// no copy of them.
type postingList struct{ slots []uint32 }

// addPostings indexes the new series ser, whose label symbol ids are refs.
func (s *Store) addPostings(ser *memSeries, refs string) {
	idx := ser.idx
	for r := refs; r != ""; {
		var n, v uint32
		n, r = nextRef(r)
		v, r = nextRef(r)
		name, value := s.syms.strs[n], s.syms.strs[v]
		vals := s.postings[name]
		if vals == nil {
			vals = map[string]*postingList{}
			s.postings[name] = vals
		}
		p := vals[value]
		if p == nil {
			p = &postingList{}
			vals[value] = p
		}
		// New slots usually come last; a reused slot goes in its place.
		c := cap(p.slots)
		if n := len(p.slots); n == 0 || p.slots[n-1] < idx {
			p.slots = append(p.slots, idx)
		} else {
			i, _ := slices.BinarySearch(p.slots, idx)
			p.slots = slices.Insert(p.slots, i, idx)
		}
		if cap(p.slots) != c {
			s.grown = append(s.grown, p)
		}
	}
}

// fitPostings gives back the spare capacity of the posting lists that
// grew since it last ran: appends double a list's array, and once the
// series are there (most of them come in the first scrapes) the lists
// stop growing, so the spare half would otherwise stay for good. Trim
// runs it once per cycle; a list that keeps growing is copied once per
// cycle at most.
func (s *Store) fitPostings() {
	s.mtx.Lock()
	defer s.mtx.Unlock()
	for _, p := range s.grown {
		if len(p.slots) < cap(p.slots) {
			p.slots = slices.Clip(slices.Clone(p.slots))
		}
	}
	// Dropped rather than reused: once the series are there it stays
	// empty.
	s.grown = nil
}

// removePostings takes the removed series out of the index, in one pass
// per posting list however many of them expire together, and then gives
// back their symbols (removeLocked leaves them for this).
func (s *Store) removePostings(gone []*memSeries) {
	if len(gone) == 0 {
		return
	}
	type pair struct{ name, value string }
	dead := map[pair][]uint32{}
	for _, ser := range gone {
		idx := ser.idx
		// A removed series' cold string does not change any more.
		for r := ser.labelRefs(); r != ""; {
			var n, v uint32
			n, r = nextRef(r)
			v, r = nextRef(r)
			k := pair{s.syms.strs[n], s.syms.strs[v]}
			dead[k] = append(dead[k], idx)
		}
	}
	defer func() {
		// The series' symbols it was the last user of give their bytes
		// back to the namespace charged for them, not necessarily ser's;
		// those whose charged namespace it was the last user in are
		// charged to another user once every gone series is out of the
		// postings and the use counts, which then agree.
		var orphans []uint32
		release := func(id, owner uint32, freed int) {
			if freed == 0 {
				orphans = append(orphans, id)
				return
			}
			s.used.Add(-int64(freed))
			s.accts[owner].used.Add(-int64(freed))
		}
		for _, ser := range gone {
			s.syms.releaseLabels(ser.labelRefs(), ser.acct.id, release)
		}
		for _, id := range orphans {
			s.moveCharge(id)
		}
		for _, ser := range gone {
			s.dropAccount(ser.acct)
		}
	}()
	for k, slots := range dead {
		vals := s.postings[k.name]
		p := vals[k.value]
		if p == nil {
			continue
		}
		slices.Sort(slots)
		p.slots = subtract(p.slots, slots)
		switch {
		case len(p.slots) == 0:
			delete(vals, k.value)
			if len(vals) == 0 {
				delete(s.postings, k.name)
			}
		case cap(p.slots) > 64 && 4*len(p.slots) < cap(p.slots):
			p.slots = slices.Clip(slices.Clone(p.slots))
		}
	}
}

// moveCharge charges symbol id, whose charged account has no use of it
// left, to the account with the most uses of it among the live series
// (the lowest id of a tie), found through the postings of every label the
// string is the name or the value of: a rare path, taken when a
// namespace's last series using a string another namespace's series also
// use goes. The new account pays what the string takes even past its
// share (the string is in memory for its series): its new series and
// samples are then refused as at any share's end. The caller holds s.mtx
// and has taken every removed series out of the postings and the symbols.
func (s *Store) moveCharge(id uint32) {
	t := &s.syms
	if t.uses[id] == 0 || t.owned[id] > 0 {
		return
	}
	str := t.strs[id]
	uses := make([]uint32, len(s.accts))
	tally := func(p *postingList) {
		for _, idx := range p.slots {
			if ser := s.slot(idx).Load(); ser != nil {
				uses[ser.acct.id]++
			}
		}
	}
	for _, p := range s.postings[str] {
		tally(p)
	}
	for _, vals := range s.postings {
		if p := vals[str]; p != nil {
			tally(p)
		}
	}
	var to, most uint32
	for a, n := range uses {
		if n > most {
			to, most = uint32(a), n
		}
	}
	if most == 0 {
		return
	}
	n := int64(symbolCost + len(str))
	s.accts[t.owner[id]].used.Add(-n)
	s.accts[to].used.Add(n)
	t.owner[id], t.owned[id] = to, most
}

// subtract removes the sorted slots del from the sorted list, in place.
func subtract(list, del []uint32) []uint32 {
	i, _ := slices.BinarySearch(list, del[0])
	out := list[:i]
	for _, x := range list[i:] {
		for len(del) > 0 && del[0] < x {
			del = del[1:]
		}
		if len(del) > 0 && del[0] == x {
			continue
		}
		out = append(out, x)
	}
	clear(list[len(out):])
	return out
}

// selectSeries returns the series matching every matcher, in slot order.
func (s *Store) selectSeries(ms []*labels.Matcher) []*memSeries { return s.appendSeries(nil, ms) }

// appendSeries is selectSeries reusing dst's array (a caller's buffer)
// where it can.
func (s *Store) appendSeries(dst []*memSeries, ms []*labels.Matcher) []*memSeries {
	var (
		listsBuf [4][]uint32
		restBuf  [4]*labels.Matcher
		lists    = listsBuf[:0]
		rest     = restBuf[:0]
		// wide is a matcher that needs the label but is no cheap lookup
		// (`=~"http_.*"`, `!=""`): the postings of every value it matches,
		// used only when nothing cheaper narrows the search.
		wide *labels.Matcher
	)
	s.mtx.RLock()
	defer s.mtx.RUnlock()
	for _, m := range ms {
		switch {
		case m.Type == labels.MatchEqual && m.Value != "":
			p := s.postings[m.Name][m.Value]
			if p == nil {
				return nil
			}
			lists = append(lists, p.slots)
		case m.Type == labels.MatchRegexp && !m.Matches("") && len(m.SetMatches()) > 0 && len(m.SetMatches()) <= maxSetMatches:
			l := s.union(m.Name, m.SetMatches())
			if len(l) == 0 {
				return nil
			}
			lists = append(lists, l)
		default:
			if wide == nil && !m.Matches("") {
				wide = m
				continue
			}
			rest = append(rest, m)
		}
	}
	if wide != nil {
		if len(lists) == 0 {
			l := s.matching(wide)
			if len(l) == 0 {
				return nil
			}
			lists = append(lists, l)
		} else {
			rest = append(rest, wide)
		}
	}
	if len(lists) == 0 {
		return s.scanAll(rest)
	}
	slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
	out := dst
	if out == nil && len(lists) == 1 && len(rest) == 0 {
		out = make([]*memSeries, 0, len(lists[0]))
	}
	var posBuf [4]int
	pos := posBuf[:0]
	for range lists {
		pos = append(pos, 0)
	}
next:
	for _, idx := range lists[0] {
		for j := 1; j < len(lists); j++ {
			l := lists[j]
			i, found := slices.BinarySearch(l[pos[j]:], idx)
			pos[j] += i
			if pos[j] >= len(l) {
				break next
			}
			if !found {
				continue next
			}
		}
		if ser := s.slot(idx).Load(); ser != nil && s.matchesLocked(ser, rest) {
			out = append(out, ser)
		}
	}
	return out
}

// matchesLocked reports whether ser's labels match every matcher; the
// caller holds s.mtx.
func (s *Store) matchesLocked(ser *memSeries, ms []*labels.Matcher) bool {
	if len(ms) == 0 {
		return true
	}
	ser.lock()
	defer ser.unlock()
	refs := ser.labelRefs()
	for _, m := range ms {
		if !m.Matches(s.syms.value(refs, m.Name)) {
			return false
		}
	}
	return true
}

// union returns the sorted slots of the series whose label name has one of
// the values.
func (s *Store) union(name string, values []string) []uint32 {
	vals := s.postings[name]
	var out []uint32
	for _, v := range values {
		if p := vals[v]; p != nil {
			out = append(out, p.slots...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// matching returns the sorted slots of the series whose value for m's
// label matches m, testing each distinct value once.
func (s *Store) matching(m *labels.Matcher) []uint32 {
	var out []uint32
	for v, p := range s.postings[m.Name] {
		if m.Matches(v) {
			out = append(out, p.slots...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// scanAll tests every series; only selectors matching the empty value for
// every label (which PromQL refuses) and label queries without matchers
// need it.
func (s *Store) scanAll(ms []*labels.Matcher) []*memSeries {
	var out []*memSeries
	for idx := range s.slots {
		if ser := s.slot(idx).Load(); ser != nil && s.matchesLocked(ser, ms) {
			out = append(out, ser)
		}
	}
	return out
}
