package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// Stamped by the release build (hack/release, the Dockerfile):
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=<40 hex>"
//
// A plain `go build` or `go install` leaves them empty and versionInfo falls
// back to what the Go toolchain recorded in the binary.
var (
	version string
	commit  string
)

// VersionInfo is what `scaleplane version` prints.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Modified says the binary was built from a tree with uncommitted
	// changes (from the toolchain's VCS stamp; unknown when not stamped).
	Modified bool `json:"modified,omitempty"`
}

// versionInfo combines the release stamps with the build information the
// Go toolchain embeds: the module version for `go install ...@v1.2.3`,
// vcs.revision and vcs.modified for a build inside a git checkout. A stamp
// wins over build information; "unknown" says neither said anything.
func versionInfo(ldVersion, ldCommit string, bi *debug.BuildInfo, goos, goarch string) VersionInfo {
	v := VersionInfo{Version: ldVersion, Commit: ldCommit, Platform: goos + "/" + goarch}
	if bi != nil {
		v.GoVersion = bi.GoVersion
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.GoVersion == "" {
		v.GoVersion = runtime.Version()
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

func currentVersion() VersionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionInfo(version, commit, bi, runtime.GOOS, runtime.GOARCH)
}

func versionMain(args []string) int {
	return writeVersion(os.Stdout, os.Stderr, args, currentVersion())
}

func writeVersion(stdout, stderr io.Writer, args []string, v VersionInfo) int {
	fs := flag.NewFlagSet("scaleplane version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("o", "text", "output format: text or json")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch *output {
	case "json":
		data, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(stdout, "%s\n", data)
	case "text":
		modified := ""
		if v.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(stdout, "scaleplane %s\ncommit: %s%s\ngo: %s\nplatform: %s\n", v.Version, v.Commit, modified, v.GoVersion, v.Platform)
	default:
		fmt.Fprintf(stderr, "scaleplane version: -o %q: use text or json\n", *output)
		return 2
	}
	return 0
}
