package main

import (
	"context"
	"errors"
)

func releaseMain(ctx context.Context, args []string) error {
	return errors.New("not yet")
}
