package promql

import (
	"encoding/binary"
	"hash/maphash"
	"strings"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// symbols interns the label names and values of the store's series: most
// of a series' label bytes (__name__, namespace, job, the workload's and
// the pod's names) repeat across series, so each series keeps only small
// numbers (symbol ids) and every string is held once. A string is counted
// once per label of a live series using it and dropped when the last of
// them leaves (Trim, Delete), so the table follows the series and does not
// grow with pods that come and go. It is guarded by Store.mtx: written
// under the write lock, read under either.
type symbols struct {
	// index finds a string's id: open addressing with linear probing over
	// the ids plus one (zero is an empty cell), each at the home its
	// string hashes to. Four bytes a cell where a map of strings to ids
	// takes about 40 an entry.
	index []uint32
	seed  maphash.Seed
	strs  []string
	// uses counts the labels of live series naming each symbol; a free id
	// has none and an empty string.
	uses []uint32
	// owner is the namespace account (Store.accts) charged for each
	// symbol, owned how many of its uses are that account's series'. The
	// account of the series that brought a string pays for it; when its
	// last use goes while other namespaces' series still use the string,
	// the charge moves to one of them (Store.moveCharge), so a namespace
	// never pays for strings only another holds, and whichever account
	// holds the charge gets the bytes back with the last use. Two
	// numbers take the 8 bytes an account pointer would.
	owner, owned []uint32
	free         []uint32
	// n is how many strings the table holds, bytes what they take.
	n, bytes int
}

// symbolCost is what one symbol takes besides its string's bytes: its
// string header, use count, owner and owner's use count, and its index
// cells (at most three
// quarters full).
const symbolCost = 36

// home is where str's probe starts.
func (t *symbols) home(str string) int {
	return int(uint64(uint32(maphash.String(t.seed, str))) * uint64(len(t.index)) >> 32)
}

func (t *symbols) next(i int) int {
	if i++; i == len(t.index) {
		return 0
	}
	return i
}

// lookup returns the id of str, if the table has it.
func (t *symbols) lookup(str string) (uint32, bool) {
	if len(t.index) == 0 {
		return 0, false
	}
	for i := t.home(str); t.index[i] != 0; i = t.next(i) {
		if id := t.index[i] - 1; t.strs[id] == str {
			return id, true
		}
	}
	return 0, false
}

// intern returns the id of str, taking one use of it for account acct,
// and how many bytes the table grew by (zero when str was already there),
// which acct is charged for.
func (t *symbols) intern(str string, acct uint32) (uint32, int) {
	if id, ok := t.lookup(str); ok {
		t.uses[id]++
		if t.owner[id] == acct {
			t.owned[id]++
		}
		return id, 0
	}
	if len(t.index) == 0 {
		t.seed = maphash.MakeSeed()
	}
	if 4*(t.n+1) > 3*len(t.index) {
		t.grow()
	}
	str = strings.Clone(str)
	var id uint32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
		t.strs[id], t.uses[id], t.owner[id], t.owned[id] = str, 1, acct, 1
	} else {
		id = uint32(len(t.strs))
		t.strs = append(t.strs, str)
		t.uses = append(t.uses, 1)
		t.owner = append(t.owner, acct)
		t.owned = append(t.owned, 1)
	}
	t.put(id)
	t.n++
	t.bytes += len(str)
	return id, symbolCost + len(str)
}

// grow makes the index half as large again and places every id anew.
func (t *symbols) grow() {
	old := t.index
	t.index = make([]uint32, max(16, len(old)+len(old)/2))
	for _, c := range old {
		if c != 0 {
			t.put(c - 1)
		}
	}
}

func (t *symbols) put(id uint32) {
	i := t.home(t.strs[id])
	for t.index[i] != 0 {
		i = t.next(i)
	}
	t.index[i] = id + 1
}

// release drops one use of id by account acct and returns how many bytes
// the table shrank by (zero unless it was the last use) and the account
// charged for them; orphan says the charged account's last use went while
// others remain (see symbols.owner).
func (t *symbols) release(id, acct uint32) (freed int, owner uint32, orphan bool) {
	owner = t.owner[id]
	if owner == acct {
		t.owned[id]--
	}
	if t.uses[id]--; t.uses[id] > 0 {
		return 0, owner, t.owned[id] == 0
	}
	str := t.strs[id]
	// Take the id out of the index, moving the cells after it back so
	// that no probe stops early.
	i := t.home(str)
	for t.index[i] != id+1 {
		i = t.next(i)
	}
	n := len(t.index)
	for j := t.next(i); t.index[j] != 0; j = t.next(j) {
		// The cell at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		home := t.home(t.strs[t.index[j]-1])
		if (j-home+n)%n >= (j-i+n)%n {
			t.index[i] = t.index[j]
			i = j
		}
	}
	t.index[i] = 0
	t.strs[id], t.owner[id], t.owned[id] = "", 0, 0
	t.free = append(t.free, id)
	t.n--
	t.bytes -= len(str)
	return symbolCost + len(str), owner, false
}

// len is how many strings the table holds.
func (t *symbols) len() int { return t.n }

// cost is what the table is charged against Options.MaxBytes.
func (t *symbols) cost() int64 { return int64(symbolCost*t.n + t.bytes) }

// internLabels interns every name and value of lset and returns the
// cold string of a new series with these labels (see memSeries.cold: a
// uvarint length, then the uvarint ids of each label's name and value, in
// label order) and what the table grew by, which account acct, the
// series' namespace's, is charged for.
func (t *symbols) internLabels(lset labels.Labels, acct uint32) (string, int) {
	// The ids go after room for the length, which is written in front of
	// them: one allocation, the string's, for most label sets.
	var buf [128]byte
	b := buf[:binary.MaxVarintLen32]
	grown := 0
	lset.Range(func(l labels.Label) {
		n, g := t.intern(l.Name, acct)
		v, h := t.intern(l.Value, acct)
		b = binary.AppendUvarint(binary.AppendUvarint(b, uint64(n)), uint64(v))
		grown += g + h
	})
	var pre [binary.MaxVarintLen32]byte
	p := binary.PutUvarint(pre[:], uint64(len(b)-binary.MaxVarintLen32))
	start := binary.MaxVarintLen32 - p
	copy(b[start:], pre[:p])
	return string(b[start:]), grown
}

// releaseLabels drops the uses refs took for account acct and calls f,
// unless nil, with each symbol it frees (freed is its bytes, owner the
// account charged for them) or leaves orphaned (freed is zero: acct was
// charged and has no use of it left, other accounts have).
func (t *symbols) releaseLabels(refs string, acct uint32, f func(id, owner uint32, freed int)) {
	for r := refs; r != ""; {
		var id uint32
		id, r = nextRef(r)
		if n, owner, orphan := t.release(id, acct); (n > 0 || orphan) && f != nil {
			f(id, owner, n)
		}
	}
}

// nextRef decodes the first symbol id of refs and returns the rest.
func nextRef(refs string) (uint32, string) {
	// Ids below 128 take one byte: the common case needs no loop.
	if b := refs[0]; b < 0x80 {
		return uint32(b), refs[1:]
	}
	b := unsafe.Slice(unsafe.StringData(refs), min(len(refs), binary.MaxVarintLen32))
	id, n := binary.Uvarint(b)
	return uint32(id), refs[n:]
}

// labels rebuilds the label set refs encodes, in memory of its own: one
// allocation, the labels' string (the pairs are gathered on the stack).
func (t *symbols) labels(refs string) labels.Labels {
	var buf [16]labels.Label
	ls := buf[:0]
	for r := refs; r != ""; {
		var n, v uint32
		n, r = nextRef(r)
		v, r = nextRef(r)
		ls = append(ls, labels.Label{Name: t.strs[n], Value: t.strs[v]})
	}
	// Already sorted, as the series' labels were: New's sort only checks.
	return labels.New(ls...)
}

// get returns the value refs holds for the label name with id name, or ""
// when it has none.
func (t *symbols) get(refs string, name uint32) string {
	for r := refs; r != ""; {
		var n, v uint32
		n, r = nextRef(r)
		v, r = nextRef(r)
		if n == name {
			return t.strs[v]
		}
	}
	return ""
}

// value returns the value refs holds for name, or "".
func (t *symbols) value(refs string, name string) string {
	id, ok := t.lookup(name)
	if !ok {
		return ""
	}
	return t.get(refs, id)
}

// equal reports whether refs encodes lset.
func (t *symbols) equal(refs string, lset labels.Labels) bool {
	eq := true
	lset.Range(func(l labels.Label) {
		if !eq {
			return
		}
		if refs == "" {
			eq = false
			return
		}
		var n, v uint32
		n, refs = nextRef(refs)
		v, refs = nextRef(refs)
		eq = t.strs[n] == l.Name && t.strs[v] == l.Value
	})
	return eq && refs == ""
}

// names calls f with every label name refs holds.
func (t *symbols) names(refs string, f func(string)) {
	for r := refs; r != ""; {
		var n uint32
		n, r = nextRef(r)
		_, r = nextRef(r)
		f(t.strs[n])
	}
}
