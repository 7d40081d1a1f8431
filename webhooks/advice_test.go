package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

// The advice corpus: every kind's profile, against its CRD where the
// repository has one, so that the schema's limits shape the refusals.
func adviceViews(t *testing.T) map[string]*profile.Compiled {
	t.Helper()
	out := map[string]*profile.Compiled{}
	crds, err := config.SampleCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range profile.Samples() {
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p.Target.Kind+" (no CRD)"] = v
		for _, crd := range crds {
			if crd.Spec.Names.Kind == p.Target.Kind {
				if v, err = v.WithCRD(crd); err != nil {
					t.Fatal(err)
				}
				out[p.Target.Kind] = v
			}
		}
	}
	out["RackedCluster, bounds with minimum 1"] = limitedRackView(t)
	data, err := os.ReadFile(filepath.Join("..", "profile", "testdata", "crd", "apps.example.org_scaledapps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var scaledApp apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &scaledApp); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		spec v1alpha1.ScaleProfileSpec
		crd  *apiextensionsv1.CustomResourceDefinition
	}{
		"ZonedDatabase":  {profiletest.ZonedDatabase(), nil},
		"ScaledApp":      {profiletest.ScaledApp(), &scaledApp},
		"InstanceSet":    {profiletest.InstanceSet(), profiletest.InstanceSetCRD()},
		"PinnedFunction": {profiletest.PinnedFunction(), profiletest.PinnedFunctionCRD()},
	} {
		v, err := profile.Compile(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if c.crd != nil {
			if v, err = v.WithCRD(c.crd); err != nil {
				t.Fatal(err)
			}
		}
		out[name] = v
	}
	return out
}

// adviceState is one object, and optionally one /scale write to it, in the
// values the advice talks about.
type adviceState struct {
	replicas *int32
	// hasConfig: a config {minReplicas, maxReplicas} (and idle settings).
	hasConfig bool
	min, max  int32
	idle      bool
	// scale is the /scale write's count; -1 for a write of the object only.
	scale int32
}

func (s adviceState) String() string {
	var b strings.Builder
	if s.replicas != nil {
		fmt.Fprintf(&b, "R=%d", *s.replicas)
	} else {
		b.WriteString("R unset")
	}
	if s.hasConfig {
		fmt.Fprintf(&b, " C=[%d,%d]", s.min, s.max)
		if s.idle {
			b.WriteString("+idle")
		}
	}
	if s.scale >= 0 {
		fmt.Fprintf(&b, " scale to %d", s.scale)
	}
	return b.String()
}

// adviceChecker applies the webhooks' advice to one kind's objects.
type adviceChecker struct {
	t    *testing.T
	name string
	view *profile.Compiled
	mut  *mutator
	val  *validator
	// memo holds whether a state can reach an accepted one.
	memo map[string]bool
	// profileEdits counts advice that edits the profile, not the object.
	profileEdits int
}

// build is the object of s as its kind keeps the values.
func (c *adviceChecker) build(s adviceState) *objBuilder {
	spec := c.view.Spec()
	b := makeObj(spec.Target.Kind, "w")
	if s.replicas != nil {
		b.set(spec.ReplicasPath, int(*s.replicas))
	}
	if g := spec.MemberGroups; g != nil {
		item := obj{g.NameField: "a"}
		if s.replicas != nil {
			item[g.MembersField] = int(*s.replicas)
		}
		b.set(g.Path, list{item})
	}
	if s.hasConfig {
		cfg := obj{"minReplicas": int(s.min), "maxReplicas": int(s.max)}
		if s.idle {
			cfg["idle"] = obj{"timeoutSeconds": 300}
		}
		if spec.ScaleConfig.Path != "" {
			b.set(spec.ScaleConfig.Path, cfg)
		} else {
			data, _ := json.Marshal(cfg)
			b.annotate(spec.ScaleConfig.Annotation, string(data))
		}
	}
	return b
}

// schemaRefuses is what the API server's own schema validation says of s
// (it runs after the mutating and before the validating webhooks).
func (c *adviceChecker) schemaRefuses(s adviceState) string {
	l := c.view.Layout()
	if s.replicas != nil {
		if why := l.Schema.Replicas.Refuses(*s.replicas); why != "" {
			return "replicas: " + why
		}
		if l.GroupsPath != nil {
			if why := l.Schema.Members.Refuses(*s.replicas); why != "" {
				return "members: " + why
			}
		}
	}
	if s.hasConfig && !l.ConfigInAnnotation {
		if why := l.Schema.MinReplicas.Refuses(s.min); why != "" {
			return "minReplicas: " + why
		}
		if why := l.Schema.MaxReplicas.Refuses(s.max); why != "" {
			return "maxReplicas: " + why
		}
	}
	return ""
}

// stored is the object of s as the API server stores it: the mutating
// webhook's patch applied.
func (c *adviceChecker) stored(s adviceState) []byte {
	raw := c.build(s).raw()
	resp := c.mut.Handle(context.Background(), request(c.view, admissionv1.Create, "w", raw, nil))
	if !resp.Allowed {
		c.t.Fatalf("%s: %s: mutating webhook refused: %s", c.name, s, resp.Result.Message)
	}
	if len(resp.Patches) == 0 {
		return raw
	}
	data, err := json.Marshal(resp.Patches)
	if err != nil {
		c.t.Fatal(err)
	}
	patch, err := jsonpatchapply.DecodePatch(data)
	if err != nil {
		c.t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		c.t.Fatalf("%s: %s: patch does not apply: %v", c.name, s, err)
	}
	return out
}

// refusals are the messages refusing s: the API server's schema, the
// validating webhook's causes, then the /scale webhook's. apiServer is
// true when the API server's schema refuses s itself.
func (c *adviceChecker) refusals(s adviceState) (msgs []string, apiServer bool) {
	if why := c.schemaRefuses(s); why != "" {
		return []string{why}, true
	}
	stored := c.stored(s)
	resp := c.val.Handle(context.Background(), request(c.view, admissionv1.Create, "w", stored, nil))
	if !resp.Allowed {
		for _, cause := range resp.Result.Details.Causes {
			msgs = append(msgs, cause.Field+": "+cause.Message)
		}
		return msgs, false
	}
	if s.scale < 0 {
		return nil, false
	}
	var parent obj
	if err := json.Unmarshal(stored, &parent); err != nil {
		c.t.Fatal(err)
	}
	old := int32(-1)
	if s.replicas != nil {
		old = *s.replicas
	}
	h := NewScaleValidator(c.view, parents(&objBuilder{kind: c.view.GVK().Kind, o: parent}), nil)
	resp = h.Handle(context.Background(), scaleRequest(c.view, "w", old, s.scale, "100"))
	if !resp.Allowed {
		for _, cause := range resp.Result.Details.Causes {
			msgs = append(msgs, cause.Field+": "+cause.Message)
		}
	}
	return msgs, false
}

// The advice the webhooks give, each phrase with the states it leads to
// (any of them may be chosen: "X or more" is satisfied by some X' >= X).
var (
	adviceRaise      = regexp.MustCompile(`raise (\S*maxReplicas\S*(?: in the annotation \S+)?) to (\d+) or more`)
	adviceLower      = regexp.MustCompile(`lower (\S*minReplicas\S*(?: in the annotation \S+)?) to (\d+) or less( and add triggers or idle settings)?`)
	advicePin        = regexp.MustCompile(`pin the config \(minReplicas = maxReplicas\)`)
	adviceScaleLess  = regexp.MustCompile(`scale to (\d+) or less`)
	adviceScaleMore  = regexp.MustCompile(`scale to (\d+) or more`)
	adviceScaleFrom  = regexp.MustCompile(`scale to a count from (\d+) to (\d+)`)
	adviceScaleIn    = regexp.MustCompile(`scale within \[(\d+), (\d+)\]`)
	adviceRange      = regexp.MustCompile(`give the scale config a range that holds (\d+)`)
	adviceMinMore    = regexp.MustCompile(`set minReplicas to (\d+) or more(, and maxReplicas above it for a range)?`)
	adviceMaxLess    = regexp.MustCompile(`set maxReplicas to (\d+) or less(, and minReplicas below it for a range)?`)
	adviceAddIdle    = regexp.MustCompile(`add triggers or idle`)
	adviceStayZero   = regexp.MustCompile(`set maxReplicas to 0 to stay at zero`)
	adviceSwapBounds = regexp.MustCompile(`raise maxReplicas or lower minReplicas`)
	adviceLowerMax   = regexp.MustCompile(`allows; lower maxReplicas`)
	adviceLowerR     = regexp.MustCompile(`allows; lower it or raise the profile's maxReplicas`)
	adviceProfile    = regexp.MustCompile(`raise the profile's maxReplicas`)
	// plainly: the message says the change cannot be made.
	advicePlainly = regexp.MustCompile(`cannot be reached|cannot be scaled to|no count can be written|cannot be autoscaled`)
)

func atoi(s string) int32 {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return int32(n)
}

// alternatives parses msg's advice: each alternative is the states one
// piece of advice leads to. plain is true when msg says plainly that what
// was asked cannot be done.
func (c *adviceChecker) alternatives(s adviceState, msg string) (alts [][]adviceState, plain bool) {
	add := func(states ...adviceState) { alts = append(alts, states) }
	r := int32(0)
	if s.replicas != nil {
		r = *s.replicas
	}
	for _, m := range adviceRaise.FindAllStringSubmatch(msg, -1) {
		n := s
		n.max = atoi(m[2])
		add(n)
	}
	for _, m := range adviceLower.FindAllStringSubmatch(msg, -1) {
		n := s
		n.min = atoi(m[2])
		n.idle = n.idle || m[3] != ""
		add(n)
	}
	if advicePin.MatchString(msg) {
		// At the current count, or at the count being scaled to.
		var states []adviceState
		for _, v := range []int32{r, s.scale, s.min} {
			if v < 0 || (v == r && s.replicas == nil) {
				continue
			}
			n := s
			n.hasConfig, n.min, n.max = true, v, v
			states = append(states, n)
		}
		add(states...)
	}
	for _, m := range adviceScaleLess.FindAllStringSubmatch(msg, -1) {
		n := s
		n.scale = atoi(m[1])
		if s.scale < 0 {
			n.scale = -1
			n.replicas = cnt(atoi(m[1]))
		}
		add(n)
	}
	for _, m := range adviceScaleMore.FindAllStringSubmatch(msg, -1) {
		var states []adviceState
		for d := int32(0); d < 3; d++ {
			n := s
			n.scale = atoi(m[1]) + d
			states = append(states, n)
		}
		add(states...)
	}
	for _, re := range []*regexp.Regexp{adviceScaleFrom, adviceScaleIn} {
		for _, m := range re.FindAllStringSubmatch(msg, -1) {
			lo, hi := atoi(m[1]), atoi(m[2])
			var states []adviceState
			for _, v := range []int32{lo, hi, (lo + hi) / 2} {
				n := s
				n.scale = v
				states = append(states, n)
			}
			add(states...)
		}
	}
	for _, m := range adviceRange.FindAllStringSubmatch(msg, -1) {
		v := atoi(m[1])
		var states []adviceState
		for _, b := range [][2]int32{{v, v + 1}, {v - 1, v}, {v - 1, v + 1}} {
			n := s
			n.hasConfig, n.min, n.max = true, b[0], b[1]
			states = append(states, n)
		}
		add(states...)
	}
	for _, m := range adviceMinMore.FindAllStringSubmatch(msg, -1) {
		var states []adviceState
		for d := int32(0); d < 3; d++ {
			n := s
			n.min = atoi(m[1]) + d
			if m[2] != "" && n.max <= n.min {
				n.max = n.min + 1
			}
			states = append(states, n)
		}
		add(states...)
	}
	for _, m := range adviceMaxLess.FindAllStringSubmatch(msg, -1) {
		var states []adviceState
		for d := int32(0); d < 3; d++ {
			n := s
			n.max = atoi(m[1]) - d
			if m[2] != "" && n.min >= n.max {
				n.min = n.max - 1
			}
			states = append(states, n)
		}
		add(states...)
	}
	if adviceAddIdle.MatchString(msg) {
		n := s
		n.idle = true
		add(n)
	}
	if adviceStayZero.MatchString(msg) {
		n := s
		n.max = 0
		add(n)
	}
	if adviceSwapBounds.MatchString(msg) {
		raise, lower := s, s
		raise.max = s.min
		lower.min = s.max
		add(raise)
		add(lower)
	}
	if adviceLowerMax.MatchString(msg) {
		n := s
		n.max = c.view.Layout().MaxReplicas
		add(n)
	}
	if adviceLowerR.MatchString(msg) {
		n := s
		n.replicas = cnt(c.view.Layout().MaxReplicas)
		add(n)
	}
	return alts, advicePlainly.MatchString(msg)
}

func cnt(v int32) *int32 { return &v }

func (s adviceState) key() string { return s.String() }

// reaches reports whether s is accepted, or some advice of its refusals
// leads, step by step, to an accepted state within depth steps, never
// coming back to a state on the way.
func (c *adviceChecker) reaches(s adviceState, depth int, seen map[string]bool) bool {
	if v, ok := c.memo[s.key()]; ok {
		return v
	}
	msgs, apiServer := c.refusals(s)
	if len(msgs) == 0 {
		c.memo[s.key()] = true
		return true
	}
	if apiServer || depth == 0 || seen[s.key()] {
		return false
	}
	seen[s.key()] = true
	defer delete(seen, s.key())
	ok := false
	for _, msg := range msgs {
		alts, _ := c.alternatives(s, msg)
		for _, states := range alts {
			for _, n := range states {
				if c.reaches(n, depth-1, seen) {
					ok = true
					break
				}
			}
			if ok {
				break
			}
		}
		if ok {
			break
		}
	}
	if ok || len(seen) == 1 {
		c.memo[s.key()] = ok
	}
	return ok
}

// check judges every refusal of s: each piece of its advice must lead to
// an accepted state (through the advice of any refusal met on the way), or
// the message must say plainly that what was asked cannot be done. It
// returns how many refusals it judged.
func (c *adviceChecker) check(s adviceState) int {
	msgs, apiServer := c.refusals(s)
	if apiServer {
		return 0
	}
	for _, msg := range msgs {
		if adviceProfile.MatchString(msg) {
			c.profileEdits++
		}
		alts, plain := c.alternatives(s, msg)
		if len(alts) == 0 {
			if !plain {
				c.t.Errorf("%s: %s: refusal gives no advice this test knows and does not say it cannot be done:\n  %s", c.name, s, msg)
			}
			continue
		}
		for i, states := range alts {
			ok := false
			for _, n := range states {
				if c.reaches(n, 4, map[string]bool{s.key(): true}) {
					ok = true
					break
				}
			}
			if !ok {
				c.t.Errorf("%s: %s: advice %d of the refusal leads to %s, never to an accepted write:\n  %s", c.name, s, i+1, states[0], msg)
			}
		}
	}
	return len(msgs)
}

// TestEveryRefusalsAdviceIsSatisfiable applies each piece of advice the
// webhooks give, for writes of the object and of its /scale, across the
// sample kinds and third-party shapes with schema minimums and maximums
// (counts at .spec.instances, configs in an annotation, bounds with
// minimum 1), and checks that following it leads to a write that is
// accepted, or that the refusal says plainly it cannot be done. Advice
// that loops (a range told to lower minReplicas below what the schema
// allows, a pin told to become a range that needs the same) fails it.
func TestEveryRefusalsAdviceIsSatisfiable(t *testing.T) {
	views := adviceViews(t)
	names := make([]string, 0, len(views))
	for name := range views {
		names = append(names, name)
	}
	sort.Strings(names)
	replicas := []*int32{nil, cnt(0), cnt(1), cnt(2), cnt(5), cnt(11), cnt(60), cnt(1001)}
	configs := []adviceState{
		{}, {hasConfig: true, min: 1, max: 1}, {hasConfig: true, min: 3, max: 3}, {hasConfig: true, min: 0, max: 0},
		{hasConfig: true, min: 1, max: 5}, {hasConfig: true, min: 2, max: 6}, {hasConfig: true, min: 0, max: 5},
		{hasConfig: true, min: 0, max: 5, idle: true}, {hasConfig: true, min: 1, max: 15}, {hasConfig: true, min: 5, max: 2},
		{hasConfig: true, min: 2, max: 2000}, {hasConfig: true, min: 0, max: 12, idle: true},
	}
	scales := []int32{0, 1, 2, 3, 6, 7, 11, 12, 60, 1001}
	total, perKind := 0, map[string]int{}
	for _, name := range names {
		v := views[name]
		c := &adviceChecker{t: t, name: name, view: v, mut: NewMutator(v).(*mutator), val: NewValidator(v, testSources()).(*validator), memo: map[string]bool{}}
		for _, r := range replicas {
			for _, cfg := range configs {
				s := cfg
				s.replicas, s.scale = r, -1
				n := c.check(s)
				if msgs, _ := c.refusals(s); n > 0 || len(msgs) > 0 {
					perKind[name] += n
					continue
				}
				// An accepted object: every /scale write to it.
				for _, to := range scales {
					s.scale = to
					perKind[name] += c.check(s)
				}
			}
		}
		total += perKind[name]
		if c.profileEdits > 0 {
			t.Logf("%s: %d refusals also offer to raise the profile's maxReplicas (a profile edit, not applied)", name, c.profileEdits)
		}
	}
	t.Logf("refusals checked: %d (%v)", total, perKind)
	if total < 100 {
		t.Errorf("only %d refusals checked: the corpus no longer exercises the webhooks", total)
	}
}

// TestPinnedFunctionToZeroSaysItCannot: a Function-like kind whose
// replicas and scale-config bounds all have minimum 1 cannot be scaled to
// 0. Pinned, it used to be told to give the config a range; with a range,
// to lower minReplicas to 0, which its schema forbids: advice that loops.
// Both now say plainly that it cannot be done.
func TestPinnedFunctionToZeroSaysItCannot(t *testing.T) {
	v, err := profile.Compile(profiletest.PinnedFunction())
	if err != nil {
		t.Fatal(err)
	}
	if v, err = v.WithCRD(profiletest.PinnedFunctionCRD()); err != nil {
		t.Fatal(err)
	}
	want := "Invalid value: 0: spec.replicas cannot be 0: the CRD's schema requires a value of at least 1 (minimum); this kind cannot be scaled to 0; scale to a count from 1 to 1000"
	for _, cfg := range []obj{{"minReplicas": 2, "maxReplicas": 2}, {"minReplicas": 1, "maxReplicas": 5}} {
		parent := makeObj("Function", "fn").replicas(2).set(".spec.scaleConfig", cfg)
		resp := NewScaleValidator(v, parents(parent), nil).Handle(context.Background(), scaleRequest(v, "fn", 2, 0, "100"))
		if resp.Allowed {
			t.Fatalf("config %v: scale to 0 allowed", cfg)
		}
		if got := resp.Result.Details.Causes[0].Message; got != want {
			t.Errorf("config %v: refusal\n  %s\nwant\n  %s", cfg, got, want)
		}
	}
}
