package controlplane

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestDeadTestFoldersRemoved: a Start without a data folder
// removes the temporary folders of test binaries that were killed, and
// only those.
func TestDeadTestFoldersRemoved(t *testing.T) {
	tmp := t.TempDir()
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	dead := self
	dead.StartTime-- // this pid, used by an earlier process
	mk := func(name string, owner *Process) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, apiServerFolder), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != nil {
			data, _ := json.Marshal(owner)
			if err := os.WriteFile(filepath.Join(dir, ownerFile), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	killed := mk(tempPattern+"killed", &dead)
	live := mk(tempPattern+"live", &self)
	unowned := mk(tempPattern+"unowned", nil)
	other := mk("other-killed", &dead)

	removeDeadTempDirs(tmp)

	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the folder of a killed owner is still there: %v", err)
	}
	for _, dir := range []string{live, unowned, other} {
		if _, err := os.Stat(filepath.Join(dir, apiServerFolder)); err != nil {
			t.Errorf("%s was touched: %v", dir, err)
		}
	}
}
