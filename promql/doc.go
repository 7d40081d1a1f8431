// Package promql is scaleplane's metrics pipeline (placeholder doc, expanded below).
package promql
