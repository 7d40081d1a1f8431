package framework

import "path/filepath"

// BinaryModuleDir is the folder of module cmd/scaleplane: `go build -o
// <file> .` run there builds the scaleplane binary with that module's
// requirements.
func BinaryModuleDir() string { return filepath.Join(RepoRoot(), "cmd", "scaleplane") }
