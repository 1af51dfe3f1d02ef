package merge

import (
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// ErrUpdateDuringCreation is wrapped by the error Create.Apply returns when
// a plugin asks to update the container that is being created (it must
// adjust it instead).
var ErrUpdateDuringCreation = errors.New("update of a container during its creation")

// ConflictError reports that two plugins set the same field (or the same
// entry of a keyed field) of a container.
type ConflictError struct {
	// ContainerID is the container whose field both plugins set.
	ContainerID string
	// Container is that container as NAMESPACE/POD/NAME, when known (a
	// conflict while a container is created); messages use it instead of
	// the ID.
	Container string
	// Field is the contested field.
	Field api.Field
	// Key is the contested entry of a keyed field (an environment variable
	// name, a mount destination, a device path, ...); empty for simple
	// fields.
	Key string
	// Plugins are the field's owner and the plugin that tried to set it
	// next, in that order ("IDX-NAME").
	Plugins [2]string
}

// Error describes the conflict, e.g.
// `plugins "10-a" and "20-b" both adjust env "FOO" of container "ml/trainer/train"`
// (or of the container's ID when its name is not known).
func (e *ConflictError) Error() string {
	what := FieldName(e.Field)
	if e.Key != "" {
		what += fmt.Sprintf(" %q", e.Key)
	}
	ctr := e.Container
	if ctr == "" {
		ctr = e.ContainerID
	}
	return fmt.Sprintf("plugins %q and %q both adjust %s of container %q",
		e.Plugins[0], e.Plugins[1], what, ctr)
}

// FieldName returns a short human-readable name of f, as used in error
// messages ("env", "memory limit", ...): its name in api's field table.
func FieldName(f api.Field) string {
	return f.HumanName()
}
