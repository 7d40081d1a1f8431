package promql

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// RequireLabel returns query with name="value" added to every selector
// that does not already have exactly that matcher, so that it reads only
// series with that label, whatever else it says: the external scaler keeps
// a ScaledObject's query to its own namespace this way. query must have no
// placeholders left (Expand it first) and be within the Limits: it is
// parsed.
func RequireLabel(query, name, value string) (string, error) {
	expr, err := parser.NewParser(parserOptions).ParseExpr(query)
	if err != nil {
		return "", fmt.Errorf("parse query: %w", err)
	}
	m, err := labels.NewMatcher(labels.MatchEqual, name, value)
	if err != nil {
		return "", err
	}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, have := range vs.LabelMatchers {
			if have.Type == labels.MatchEqual && have.Name == name && have.Value == value {
				return nil
			}
		}
		vs.LabelMatchers = append(vs.LabelMatchers, m)
		return nil
	})
	return expr.String(), nil
}
