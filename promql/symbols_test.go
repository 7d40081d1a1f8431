package promql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
)

// TestSymbolsKeepProbesWhole interns strings, releases a random half of
// their uses, and checks that every string still used is found with its
// id, no released one is, and that freed ids are given to new strings.
func TestSymbolsKeepProbesWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var tab symbols
	live := map[string]uint32{}
	uses := map[string]int{}
	for round := range 20 {
		for range 200 {
			str := fmt.Sprintf("s%d", rng.IntN(400))
			id, _ := tab.intern(str, 0)
			if want, ok := live[str]; ok && want != id {
				t.Fatalf("round %d: %q interned as %d, was %d", round, str, id, want)
			}
			live[str] = id
			uses[str]++
		}
		for str := range live {
			if rng.IntN(2) == 0 {
				continue
			}
			for range uses[str] {
				tab.release(live[str], 0)
			}
			delete(live, str)
			delete(uses, str)
			if _, ok := tab.lookup(str); ok {
				t.Fatalf("round %d: released %q still found", round, str)
			}
		}
		if tab.len() != len(live) {
			t.Fatalf("round %d: table holds %d strings, %d are used", round, tab.len(), len(live))
		}
		for str, want := range live {
			if id, ok := tab.lookup(str); !ok || id != want || tab.strs[id] != str {
				t.Fatalf("round %d: %q found %v as %d (%q), want %d", round, str, ok, id, tab.strs[id], want)
			}
		}
	}
	if len(tab.strs) > 400 {
		t.Errorf("%d ids for at most 400 strings: freed ids are not reused", len(tab.strs))
	}
}

// TestSymbolTableShrinksWithChurningPods scrapes pods that come and go:
// every ten minutes a new set of pods (new pod names and label values),
// the old ones' series expiring. The symbol table holds the strings of the
// live series only, so it does not grow with the pods seen, and it is
// empty, with nothing charged, once every series has expired. Queries
// return each live series' own labels although expired strings' ids are
// given to new ones.
func TestSymbolTableShrinksWithChurningPods(t *testing.T) {
	now := dataStart
	s := NewStore(Options{Retention: 10 * time.Minute, Now: func() time.Time { return now }})
	podLabels := func(gen, pod, metric int) labels.Labels {
		return labels.FromStrings("__name__", fmt.Sprintf("m%d", metric), "namespace", "ns", "pod", fmt.Sprintf("web-%d-%d", gen, pod), "rev", fmt.Sprintf("r%d", gen))
	}
	var peak int
	for gen := range 12 {
		for step := range 120 { // 10 minutes at 5 s
			now = dataStart.Add(time.Duration(gen*120+step) * 5 * time.Second)
			app := s.Appender(context.Background())
			for pod := range 10 {
				for metric := range 3 {
					if _, err := app.Append(0, podLabels(gen, pod, metric), now.UnixMilli(), float64(step)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			s.Trim()
		}
		s.mtx.RLock()
		peak = max(peak, s.syms.len())
		s.mtx.RUnlock()
	}
	// Two generations live at most (the retention spans one), each with
	// 10 pod names and a revision, and 3 metric names, 4 label names and
	// the namespace shared: far fewer than the 12 generations'.
	if peak > 2*11+3+5 {
		t.Errorf("symbol table peaked at %d strings, want at most %d (two generations of pods)", peak, 2*11+3+5)
	}

	q, err := s.Querier(now.Add(-time.Minute).UnixMilli(), now.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	set := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m1"))
	var got []string
	for set.Next() {
		got = append(got, set.At().Labels().String())
	}
	var want []string
	for pod := range 10 {
		want = append(want, podLabels(11, pod, 1).String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("live series (-want +got):\n%s", diff)
	}

	now = now.Add(time.Hour)
	s.Trim()
	s.mtx.RLock()
	left := s.syms.len()
	s.mtx.RUnlock()
	if left != 0 {
		t.Errorf("%d strings left after every series expired, want 0", left)
	}
	if used := s.Usage().UsedBytes; used != 0 {
		t.Errorf("%d bytes charged after every series expired, want 0", used)
	}
}

// TestSelectLabelsOutliveTheirSeries holds the labels a query returned
// while their series are deleted and new series take their strings' ids:
// the labels are the query's own memory and do not change.
func TestSelectLabelsOutliveTheirSeries(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	old := labels.FromStrings("__name__", "up", "pod", "a-1")
	if err := s.Append(old, 1000, 1); err != nil {
		t.Fatal(err)
	}
	q, err := s.Querier(0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"))
	if !set.Next() {
		t.Fatal("no series selected")
	}
	got := set.At().Labels()
	if n := s.Delete([]labels.Labels{old}); n != 1 {
		t.Fatalf("deleted %d series, want 1", n)
	}
	if err := s.Append(labels.FromStrings("__name__", "down", "pod", "b-2"), 2000, 1); err != nil {
		t.Fatal(err)
	}
	if !labels.Equal(got, old) {
		t.Errorf("labels read before the delete are %s, want %s", got, old)
	}
}

// TestNamespaceRefundedOnlyForStringsItPaidFor: a label string is charged
// to the namespace that brought it first; a namespace that reuses it pays
// nothing for it while that one still uses it, so it must get back only
// what it was charged when it is the last to drop it. Otherwise one tenant (or one tenant's second namespace) could let
// another bring long values, copy them, and run a negative balance past
// Options.MaxBytesPerNamespace.
func TestNamespaceRefundedOnlyForStringsItPaidFor(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	long := strings.Repeat("v", 4096)
	in := func(ns, name string, kv ...string) labels.Labels {
		return labels.FromStrings(append([]string{"__name__", name, LabelNamespace, ns}, kv...)...)
	}
	keeper := in("copier", "keep")
	if err := s.Append(keeper, 1000, 1); err != nil {
		t.Fatal(err)
	}
	before := s.NamespaceUsedBytes("copier")
	owner := in("owner", "m", "pod", long)
	if err := s.Append(owner, 1000, 1); err != nil {
		t.Fatal(err)
	}
	copied := in("copier", "m", "pod", long)
	if err := s.Append(copied, 1000, 1); err != nil {
		t.Fatal(err)
	}
	if n := s.Delete([]labels.Labels{owner}); n != 1 {
		t.Fatalf("deleted %d series, want 1", n)
	}
	if n := s.Delete([]labels.Labels{copied}); n != 1 {
		t.Fatalf("deleted %d series, want 1", n)
	}
	if got := s.NamespaceUsedBytes("copier"); got != before {
		t.Errorf("copier is charged %d bytes after its copying series left, want %d as before it came", got, before)
	}
	if got := s.Stats().UsedBytes; got != before {
		t.Errorf("the store is charged %d bytes with only copier's first series left, want %d", got, before)
	}
}

// TestNamespaceNotChargedForStringsOnlyAnotherHolds: once a namespace's
// own series no longer use a string, it does not go on paying for it
// because another namespace's series copied it: the charge moves to the
// namespace still using it, and the store's total stays the same. Else a
// tenant could pin another's charge with one series whose labels copy the
// other's values.
func TestNamespaceNotChargedForStringsOnlyAnotherHolds(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	long := strings.Repeat("v", 4096)
	in := func(ns, name string, kv ...string) labels.Labels {
		return labels.FromStrings(append([]string{"__name__", name, LabelNamespace, ns}, kv...)...)
	}
	if err := s.Append(in("victim", "keep"), 1000, 1); err != nil {
		t.Fatal(err)
	}
	before := s.NamespaceUsedBytes("victim")
	brought := in("victim", "m", "pod", long)
	if err := s.Append(brought, 1000, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(in("copier", "m", "pod", long), 1000, 1); err != nil {
		t.Fatal(err)
	}
	copierBefore, total := s.NamespaceUsedBytes("copier"), s.Stats().UsedBytes
	s.Delete([]labels.Labels{brought})
	if got := s.NamespaceUsedBytes("victim"); got != before {
		t.Errorf("victim is charged %d bytes after its series with the long value left, want %d", got, before)
	}
	// Victim brought "m", "pod" and the long value; copier now holds them
	// alone.
	if got, want := s.NamespaceUsedBytes("copier"), copierBefore+int64(3*symbolCost+len("m")+len("pod")+len(long)); got != want {
		t.Errorf("copier is charged %d bytes holding victim's strings alone, want %d", got, want)
	}
	// The store lost what victim's series took, not the string.
	if got := s.Stats().UsedBytes; got >= total || got < total-int64(len(long)) {
		t.Errorf("the store is charged %d bytes, %d before the series left: want less by its record only", got, total)
	}
	checkAccounts(t, s)
}

// TestSymbolChargeFollowsItsUsers: namespaces whose series share label
// values come and go in a random order; at every step each namespace is
// charged exactly its series and the strings it is charged for, which a
// namespace using them holds, the store's total is their sum, and once
// every series is gone nothing is left charged or held.
func TestSymbolChargeFollowsItsUsers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := NewStore(Options{Retention: -1})
	var live []labels.Labels
	for step := range 600 {
		if len(live) > 0 && rng.IntN(5) < 2 {
			i := rng.IntN(len(live))
			gone := []labels.Labels{live[i]}
			live = append(live[:i], live[i+1:]...)
			// Sometimes a whole namespace at once.
			if rng.IntN(4) == 0 {
				ns := gone[0].Get(LabelNamespace)
				kept := live[:0]
				for _, ls := range live {
					if ls.Get(LabelNamespace) == ns {
						gone = append(gone, ls)
					} else {
						kept = append(kept, ls)
					}
				}
				live = kept
			}
			if n := s.Delete(gone); n != len(gone) {
				t.Fatalf("step %d: deleted %d series, want %d", step, n, len(gone))
			}
		} else {
			ls := labels.FromStrings("__name__", fmt.Sprint("m", rng.IntN(3)),
				LabelNamespace, fmt.Sprint("ns", rng.IntN(4)),
				"pod", fmt.Sprint("p", rng.IntN(6)),
				fmt.Sprint("l", rng.IntN(3)), fmt.Sprint("p", rng.IntN(6)))
			if s.lookup(ls, ls.Hash()) == nil {
				live = append(live, ls)
			}
			if err := s.Append(ls, int64(step), 1); err != nil {
				t.Fatal(err)
			}
		}
		checkAccounts(t, s)
		if t.Failed() {
			t.Fatalf("after step %d", step)
		}
	}
	s.Delete(live)
	checkAccounts(t, s)
	if used := s.Stats().UsedBytes; used != 0 || s.syms.len() != 0 || len(s.perNamespace) != 0 {
		t.Errorf("with every series gone: %d bytes charged, %d strings, %d namespaces, want none", used, s.syms.len(), len(s.perNamespace))
	}
	for id, a := range s.accts {
		if a != nil {
			t.Errorf("account %d left with every series gone", id)
		}
	}
}

// checkAccounts recomputes every namespace's charge from its series and
// the strings it is charged for, and each string's use count by the
// account charged for it, and compares them with the store's.
func checkAccounts(t *testing.T, s *Store) {
	t.Helper()
	s.mtx.RLock()
	defer s.mtx.RUnlock()
	want := map[*nsAccount]int64{}
	uses := map[[2]uint32]uint32{}
	s.eachSeries(func(ser *memSeries) {
		want[ser.acct] += seriesCost(ser.labelsEnd()) + int64(ser.chunkBytes())
		for r := ser.labelRefs(); r != ""; {
			var id uint32
			id, r = nextRef(r)
			uses[[2]uint32{id, ser.acct.id}]++
		}
	})
	var total int64
	for id, str := range s.syms.strs {
		if s.syms.uses[id] == 0 {
			continue
		}
		owner := s.syms.owner[id]
		a := s.accts[owner]
		if a == nil {
			t.Errorf("%q is charged to account %d, which is gone", str, owner)
			continue
		}
		if got := s.syms.owned[id]; got == 0 || got != uses[[2]uint32{uint32(id), owner}] {
			t.Errorf("%q: its account has %d uses of it, counted %d", str, uses[[2]uint32{uint32(id), owner}], got)
		}
		want[a] += int64(symbolCost + len(str))
	}
	for ns, a := range s.perNamespace {
		if s.accts[a.id] != a {
			t.Errorf("namespace %q's account is not in the table", ns)
		}
		if got := a.used.Load(); got != want[a] {
			t.Errorf("namespace %q is charged %d bytes, holds %d", ns, got, want[a])
		}
		total += a.used.Load()
		delete(want, a)
	}
	for a := range want {
		t.Errorf("account %d has series or strings but no namespace", a.id)
	}
	if got := s.used.Load(); got != total {
		t.Errorf("the store is charged %d bytes, its namespaces %d", got, total)
	}
}

// TestMovedChargeMayPassTheShare: the namespace a string's charge moves to
// pays for it even past its share, since its series hold the string; its
// new series are then refused as at any share's end.
func TestMovedChargeMayPassTheShare(t *testing.T) {
	long := strings.Repeat("v", 4096)
	in := func(ns, name string, kv ...string) labels.Labels {
		return labels.FromStrings(append([]string{"__name__", name, LabelNamespace, ns}, kv...)...)
	}
	share := newSeriesCost(in("copier", "m", "pod", long)) + 200
	s := NewStore(Options{Retention: -1, MaxBytesPerNamespace: share})
	brought := in("victim", "m", "pod", long)
	if err := s.Append(brought, 1000, 1); err != nil {
		t.Fatal(err)
	}
	// Within its share while victim pays for the long value.
	if err := s.Append(in("copier", "m", "pod", long), 1000, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(in("copier", "other"), 1000, 1); err != nil {
		t.Fatal(err)
	}
	s.Delete([]labels.Labels{brought})
	checkAccounts(t, s)
	if used := s.NamespaceUsedBytes("copier"); used <= share {
		t.Errorf("copier is charged %d bytes holding the long value alone, want past its share %d", used, share)
	}
	if err := s.Append(in("copier", "third"), 1000, 1); !errors.Is(err, ErrBytesLimit) {
		t.Errorf("a new series of copier past its share: %v, want ErrBytesLimit", err)
	}
}
