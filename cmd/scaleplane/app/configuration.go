package app

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/profile"
)

// LoadConfiguration reads the component configuration file at path (YAML
// or JSON, decoded strictly) and checks all of it, the component settings
// and every profile, reporting every problem at once with the path of the
// field to change. The warnings (a file of the previous version is read
// and converted) are returned even with an error: they name the fields the
// error may be about under their new names.
func LoadConfiguration(path string) (*configv1alpha2.Configuration, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read configuration: %w", err)
	}
	c, warnings, err := configv1alpha2.Decode(data)
	if err != nil {
		return nil, warnings, fmt.Errorf("configuration %s: decode: %w", path, err)
	}
	c.Default()
	errs := c.Validate()
	errs = append(errs, profile.ValidateAll(c.Profiles, field.NewPath("profiles"))...)
	if len(errs) > 0 {
		return nil, warnings, fmt.Errorf("configuration %s: %w", path, errs.ToAggregate())
	}
	return c, warnings, nil
}
