package framework

import "github.com/scaleplane/scaleplane/controlplane"

// Re-exports of package controlplane, so tests need one import.
type (
	Cluster        = controlplane.Cluster
	Options        = controlplane.Options
	Manager        = controlplane.Manager
	ManagerOptions = controlplane.ManagerOptions
)

var (
	// Start brings up a control plane; see controlplane.Start.
	Start = controlplane.Start
	// RepoRoot is the repository's top folder.
	RepoRoot = controlplane.RepoRoot
	// Binary is the full path of a control-plane program.
	Binary = controlplane.Binary
)
