// Package config holds scaleplane's kustomize manifests (the folders crd,
// default, manager, rbac, webhook, certmanager and samples) and embeds the
// few of them the binary and the tests need, so that `scaleplane dev` works
// from a lone binary. Its only Go code is that embedding.
//
// The Go types live in packages named for what they own: the API types in
// api/v1alpha1, the component configuration file in api/config/v1alpha2,
// and compiling and applying profiles in package profile.
package config
