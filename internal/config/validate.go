// This file checks configuration values and names the field that is
// wrong, so that each package validates its own Config in one place and a
// command can still report the problem under its own flag name.

package config

import (
	"cmp"
	"errors"
	"fmt"
)

// FieldError is a configuration field that failed validation.
type FieldError struct {
	// Field is the Go name of the Config field, e.g. "PollInterval".
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// Field returns err as a *FieldError of field; nil stays nil.
func Field(field string, err error) error {
	if err == nil {
		return nil
	}
	return &FieldError{Field: field, Err: err}
}

// First returns the first non-nil error.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// AtLeast requires v >= lo.
func AtLeast[T cmp.Ordered](v, lo T) error {
	if v < lo {
		return fmt.Errorf("must be at least %v, got %v", lo, v)
	}
	return nil
}

// Positive requires v > 0.
func Positive[T cmp.Ordered](v T) error {
	var zero T
	if v <= zero {
		return fmt.Errorf("must be greater than 0, got %v", v)
	}
	return nil
}

// InRange requires lo <= v <= hi.
func InRange[T cmp.Ordered](v, lo, hi T) error {
	if v < lo || v > hi {
		return fmt.Errorf("must be between %v and %v, got %v", lo, hi, v)
	}
	return nil
}

// Projects requires non-empty, distinct project ids.
func Projects(ids []string) error {
	seen := make(map[string]bool, len(ids))
	for _, p := range ids {
		if p == "" {
			return errors.New("empty project id")
		}
		if seen[p] {
			return fmt.Errorf("project %q given twice", p)
		}
		seen[p] = true
	}
	return nil
}

// Rename prefixes err with the name (a flag, a file key) that sets its
// field, from names by Go field name; other errors pass unchanged.
func Rename(err error, names map[string]string) error {
	var fe *FieldError
	if errors.As(err, &fe) && names[fe.Field] != "" {
		return fmt.Errorf("%s: %w", names[fe.Field], fe.Err)
	}
	return err
}
