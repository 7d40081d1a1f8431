package webhooks

import (
	"encoding/json"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// The mutating webhook's patch is, by definition, the jsonpatch diff of the
// decoded object before and after Compiled.WriteSpec. Encoding the object twice
// and decoding both again to diff them cost a defaulting review about a
// thousand allocations, for a patch of a few operations on fields known in
// advance: WriteSpec writes only R, C's bounds (or a new C holding them) and
// the groups' members. So where the profile's paths are plain, the patch is
// computed from the Workload before and after defaulting, operation by
// operation as the diff would give it; anything out of the ordinary (a
// config in an annotation, a missing parent object, a bound of unknown
// presence) takes the diff. TestDirectPatch and FuzzMutate check that both
// give the same patch.

// patchPaths are a view's JSON pointers; ok is false when one of its paths
// is not a plain dotted path, and the diff is always used.
type patchPaths struct {
	ok bool
	// replicas, config and groups are path segments; config is nil for a
	// config in an annotation.
	replicas, config, groups []string
	members                  string
}

func newPatchPaths(l scaling.Layout) patchPaths {
	pp := patchPaths{members: l.GroupMembersField}
	var ok1, ok2, ok3 bool
	pp.replicas, ok1 = plainSegs(l.ReplicasPath)
	pp.config, ok2 = plainSegs(l.ConfigPath)
	pp.groups, ok3 = plainSegs(l.GroupsPath)
	pp.ok = ok1 && ok2 && ok3 && !l.ConfigInAnnotation && pp.config != nil && pp.replicas != nil &&
		(pp.groups == nil || plainKey(pp.members))
	return pp
}

// plainSegs splits a path made of plain keys only (nil for a nil path).
func plainSegs(p *field.Path) ([]string, bool) {
	if p == nil {
		return nil, true
	}
	segs := strings.Split(p.String(), ".")
	for _, s := range segs {
		if !plainKey(s) {
			return nil, false
		}
	}
	return segs, true
}

// plainKey: a key that needs no escaping in a JSON pointer or a field path,
// and is no list index.
func plainKey(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func pointer(segs []string) string { return "/" + strings.Join(segs, "/") }

// directPatch returns the patch that writing want over cur gives, and false
// when it must be left to the diff.
func (pp patchPaths) directPatch(obj *object, cur, want scaling.Workload) ([]jsonpatch.JsonPatchOperation, bool) {
	if !pp.ok {
		return nil, false
	}
	var ops []jsonpatch.JsonPatchOperation
	// op is the operation that sets segs to n: replace when the key is
	// there (even as null), add when only its parent is.
	op := func(segs []string, present bool, n int32) {
		kind := "add"
		if present {
			kind = "replace"
		}
		ops = append(ops, jsonpatch.NewOperation(kind, pointer(segs), number(n)))
	}
	if want.Replicas != nil && !sameInt32(cur.Replicas, want.Replicas) {
		_, found, parent := lookupIn(obj.u.Object, pp.replicas)
		if !parent {
			return nil, false
		}
		op(pp.replicas, found, *want.Replicas)
	}
	if want.Config != nil {
		if cur.Config == nil {
			_, found, parent := lookupIn(obj.u.Object, pp.config)
			if found || !parent {
				return nil, false
			}
			c := map[string]interface{}{}
			for _, b := range []struct {
				key string
				val *int32
			}{{"minReplicas", want.Config.MinReplicas}, {"maxReplicas", want.Config.MaxReplicas}} {
				if b.val != nil {
					c[b.key] = number(*b.val)
				}
			}
			ops = append(ops, jsonpatch.NewOperation("add", pointer(pp.config), c))
		} else {
			for _, b := range []struct {
				key       string
				cur, want *int32
			}{{"minReplicas", cur.Config.MinReplicas, want.Config.MinReplicas}, {"maxReplicas", cur.Config.MaxReplicas, want.Config.MaxReplicas}} {
				if b.want == nil || sameInt32(b.cur, b.want) {
					continue
				}
				present, known := obj.hasBound(pp.config, b.key, b.cur != nil)
				if !known {
					return nil, false
				}
				op(append(pp.config[:len(pp.config):len(pp.config)], b.key), present, *b.want)
			}
		}
	}
	if len(want.Groups) > 0 {
		raw, _, _ := lookupIn(obj.u.Object, pp.groups)
		list, ok := raw.([]interface{})
		if !ok || len(want.Groups) > len(list) || len(cur.Groups) != len(want.Groups) {
			return nil, false
		}
		for i, g := range want.Groups {
			if g.Members == nil || sameInt32(cur.Groups[i].Members, g.Members) {
				continue
			}
			item, ok := list[i].(map[string]interface{})
			if !ok {
				return nil, false
			}
			_, present := item[pp.members]
			segs := append(pp.groups[:len(pp.groups):len(pp.groups)], strconv.Itoa(i), pp.members)
			op(segs, present, *g.Members)
		}
	}
	sortPatch(ops)
	return ops, true
}

// hasBound reports whether the config holds the key bound (even as null);
// read says whether Read found a number there.
func (o *object) hasBound(config []string, bound string, read bool) (present, known bool) {
	if read {
		return true, true
	}
	raw, found, _ := lookupIn(o.u.Object, config)
	m, ok := raw.(map[string]interface{})
	if !found || !ok {
		return false, false
	}
	_, present = m[bound]
	return present, true
}

// number is n as the diff gives numbers: decoded with UseNumber.
func number(n int32) json.Number { return json.Number(strconv.FormatInt(int64(n), 10)) }

// lookupIn returns the value at segs, whether it is there, and whether its
// parent object is.
func lookupIn(m map[string]interface{}, segs []string) (v interface{}, found, parent bool) {
	for i, s := range segs {
		v, found = m[s]
		if i == len(segs)-1 {
			return v, found, true
		}
		if m, parent = v.(map[string]interface{}); !parent {
			return nil, false, false
		}
	}
	return nil, false, false
}
