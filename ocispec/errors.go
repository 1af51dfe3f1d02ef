package ocispec

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (errors.Is) by errors for adjustments or updates
// that cannot be applied because a value is malformed.
var ErrInvalid = errors.New("invalid value")

// FieldError is the error Apply and ApplyUpdate return for a field they
// cannot apply. Field is a path in the protocol's terms, such as
// "linux.devices[1].type" (list entries by their index in the adjustment).
type FieldError struct {
	// Field names the offending field.
	Field string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *FieldError) Error() string {
	return e.Field + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error {
	return e.Err
}

// invalidf returns a FieldError for a malformed value of field.
func invalidf(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))}
}

// fieldErr wraps err, if not nil, as a FieldError for field.
func fieldErr(field string, err error) error {
	if err == nil {
		return nil
	}
	return &FieldError{Field: field, Err: err}
}
