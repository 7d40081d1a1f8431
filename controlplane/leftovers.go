package controlplane

import (
	"encoding/json"
	"os"
	"path/filepath"
)

const (
	// tempPattern names the temporary data folders Start makes when the
	// caller gives none (the e2e tests).
	tempPattern = "scaleplane-e2e-"
	// ownerFile, in such a folder, names the process that made it, so a
	// later Start can tell a folder whose test binary was killed (by go
	// test's -timeout, say) from one still in use.
	ownerFile = "owner.json"
)

// removeDeadTempDirs removes the temporary data folders in tmp whose owner
// no longer runs. Their processes died with the owner (see shim.go); the
// folders hold the control plane's credentials. A folder without a
// readable owner file is left alone.
func removeDeadTempDirs(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, tempPattern+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		var owner Process
		if err := json.Unmarshal(data, &owner); err != nil || owner.PID == 0 || owner.Running() {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// writeOwner records the calling process as the owner of dir.
func writeOwner(dir string) error {
	self, err := Self()
	if err != nil {
		return err
	}
	data, err := json.Marshal(self)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, ownerFile), data, 0o600)
}
