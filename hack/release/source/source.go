// Package source says which commit a release is built from: its version,
// full hash and time, from git and the standard overrides (VERSION,
// SOURCE_DATE_EPOCH). It only reads.
package source

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Source identifies what is built.
type Source struct {
	// Version is a SemVer with a leading v: the tag on the commit, else a
	// Go pseudo-version (v0.0.0-<commit time>-<12 hex>), else VERSION.
	Version string
	// Commit is the full commit hash.
	Commit string
	// Created is the commit's time, or SOURCE_DATE_EPOCH.
	Created time.Time
	// Dirty says the working tree has uncommitted changes: the build is
	// then not exactly the commit's.
	Dirty bool
}

// ChartVersion is Version without the v, as Helm wants it.
func (s Source) ChartVersion() string { return strings.TrimPrefix(s.Version, "v") }

var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// FromGit reads the source of the checkout at root. getenv supplies
// VERSION and SOURCE_DATE_EPOCH (os.Getenv in the command).
func FromGit(ctx context.Context, root string, getenv func(string) string) (Source, error) {
	var s Source
	var err error
	if s.Commit, err = git(ctx, root, "rev-parse", "HEAD"); err != nil {
		return s, err
	}
	if epoch := getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		n, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return s, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970: %w", epoch, err)
		}
		s.Created = time.Unix(n, 0).UTC()
	} else {
		ct, err := git(ctx, root, "log", "-1", "--format=%ct", "HEAD")
		if err != nil {
			return s, err
		}
		n, err := strconv.ParseInt(ct, 10, 64)
		if err != nil {
			return s, fmt.Errorf("commit time %q: %w", ct, err)
		}
		s.Created = time.Unix(n, 0).UTC()
	}
	switch v := getenv("VERSION"); {
	case v != "":
		s.Version = v
	default:
		if tag, err := git(ctx, root, "describe", "--tags", "--exact-match", "--match", "v*", "HEAD"); err == nil && semver.MatchString(tag) {
			s.Version = tag
		} else {
			s.Version = fmt.Sprintf("v0.0.0-%s-%s", s.Created.Format("20060102150405"), s.Commit[:12])
		}
	}
	if !semver.MatchString(s.Version) {
		return s, fmt.Errorf("version %q is not a SemVer with a leading v (v1.2.3, v1.2.3-rc.1); set VERSION to one", s.Version)
	}
	status, err := git(ctx, root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return s, err
	}
	s.Dirty = status != ""
	return s, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
