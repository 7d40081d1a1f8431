package framework

import "github.com/scaleplane/scaleplane/internal/load"

// Load calls a function at a steady interval until stopped, counting
// successes and failures (package internal/load, shared with the tests of
// module certs).
type Load = load.Load

// StartLoad calls do every interval until ctx ends or Stop; see load.Start.
var StartLoad = load.Start
