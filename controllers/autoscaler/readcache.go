package autoscaler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// A workload's object is read from the informer cache on every reconcile,
// and most reconciles find it as the last one did: what the loop derives
// from it (the profile's Read, the config's fingerprint) is kept in the
// workload's memory and reused while the object is the same one, which its
// UID and resourceVersion say (the API server gives every change a new
// resourceVersion). An object without a resourceVersion (one built by
// hand, never stored) is read every time. The memory holds one object's
// read and goes with the workload (forget).

// objectIdentity is one version of one object, read through one profile.
type objectIdentity struct {
	view *profile.Compiled
	uid  types.UID
	rv   string
}

func identityOf(v *profile.Compiled, u *unstructured.Unstructured) (objectIdentity, bool) {
	rv := u.GetResourceVersion()
	return objectIdentity{view: v, uid: u.GetUID(), rv: rv}, rv != ""
}

// objectRead is what the loop derived from one version of the object.
type objectRead struct {
	id   objectIdentity
	w    scaling.Workload
	errs field.ErrorList
	// fp is configFingerprint(w.Config), once hasFP.
	fp    string
	hasFP bool
}

// read is k.view.Read(u), from st's memory when u is the version read
// last. The Workload is shared between the reconciles that read the same
// version: nothing the loop calls changes it.
func (k *kindLoop) read(st *workload, u *unstructured.Unstructured) (scaling.Workload, field.ErrorList) {
	id, ok := identityOf(k.view, u)
	if ok && st.read != nil && st.read.id == id {
		return st.read.w, st.read.errs
	}
	w, errs := k.view.Read(u)
	if ok {
		st.read = &objectRead{id: id, w: w, errs: errs}
	} else {
		st.read = nil
	}
	return w, errs
}

// fingerprint is configFingerprint(w.Config), computed once per version
// of the object when w is the Workload read kept in st (the same Config,
// which nothing changes).
func (k *kindLoop) fingerprint(st *workload, w scaling.Workload) string {
	r := st.read
	if r == nil || w.Config == nil || r.w.Config != w.Config {
		return configFingerprint(w.Config)
	}
	if !r.hasFP {
		r.fp, r.hasFP = configFingerprint(w.Config), true
	}
	return r.fp
}
