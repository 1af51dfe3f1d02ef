package wirelimit

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrMalformed is wrapped by the errors of bytes that are not a valid
// protobuf encoding of the message: proto.Unmarshal would refuse them.
var ErrMalformed = errors.New("not a valid protobuf encoding")

// malformed returns an error wrapping ErrMalformed that says why.
func malformed(why string) error { return fmt.Errorf("%w: %s", ErrMalformed, why) }

// LimitError is a message that exceeds its [Limits].
type LimitError struct {
	// Message is the full name of the message type checked.
	Message protoreflect.FullName
	// Field is the full name of the capped field whose entries exceed
	// Limit; "" if What is exceeded.
	Field protoreflect.FullName
	// What is the bound exceeded when Field is "": "values" or
	// "nesting depth".
	What string
	// Limit is the bound.
	Limit int
}

// Error says what the message holds too many of.
func (e *LimitError) Error() string {
	switch {
	case e.Field != "":
		return fmt.Sprintf("%s holds more than %d %s entries", e.Message.Name(), e.Limit, e.Field.Name())
	case e.What == "values":
		return fmt.Sprintf("%s holds more than %d values (nested messages, list elements and map entries)", e.Message.Name(), e.Limit)
	}
	return fmt.Sprintf("%s nests deeper than %d levels", e.Message.Name(), e.Limit)
}

// SizeError is a message larger than the size its reader accepts, refused
// before it was read.
type SizeError struct {
	// Size is the message's size in bytes; Limit the largest accepted.
	Size, Limit int
}

// Error says how large the message is.
func (e *SizeError) Error() string {
	return fmt.Sprintf("%d bytes, above the limit of %d", e.Size, e.Limit)
}
