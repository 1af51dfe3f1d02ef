package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"

	"github.com/nrikit/nrikit/tools/internal/nriline"
)

// table is the field table read from one proto file.
type table struct {
	fields       []fieldRow
	capabilities []capabilityRow
	unowned      []string
}

// fieldRow is one value of enum Field.
type fieldRow struct {
	goName     string // Go name of the enum value ("Field_MemLimit")
	path       string // path in ContainerAdjustment
	name       string // human name
	key        string // per-entry key, empty for a field owned as a whole
	owner      string // "single", "entry" or "accumulate"
	accessor   string // owner accessor, without the "Owner" suffix
	capability string // stable name of the capability the field belongs to
}

// capabilityRow is one adjustment or update field a grant allows.
type capabilityRow struct {
	name          string // stable name ("linux.resources.memory")
	path          string // path in its root message
	update        bool   // a field of ContainerUpdate
	upstream      string // upstream's enum name, empty if none
	upstreamValue uint64
}

// annotation is the parsed "nri:" line of a comment.
type annotation map[string]string

// parseAnnotation returns the key=value pairs of the "nri:" line of c
// (bare words map to ""), or nil if there is none.
func parseAnnotation(c protogen.Comments) (annotation, error) {
	line, ok := nriline.Line(c)
	if !ok {
		return nil, nil
	}
	return nriline.Pairs(line)
}

// readTable reads the table of f: nil if f has no enum Field.
func readTable(f *protogen.File) (*table, error) {
	enum := findEnum(f, "Field")
	if enum == nil {
		return nil, nil
	}
	adjust, update := findMessage(f, "ContainerAdjustment"), findMessage(f, "ContainerUpdate")
	if adjust == nil || update == nil {
		return nil, errors.New("enum Field without messages ContainerAdjustment and ContainerUpdate")
	}
	t := &table{}
	if err := t.readCapabilities(adjust, "", false); err != nil {
		return nil, err
	}
	if err := t.readCapabilities(update, "", true); err != nil {
		return nil, err
	}
	for _, v := range enum.Values {
		if v.Desc.Number() == 0 {
			continue
		}
		row, err := t.readField(adjust, v)
		if err != nil {
			return nil, fmt.Errorf("enum Field value %s: %w", v.Desc.Name(), err)
		}
		t.fields = append(t.fields, row)
	}
	for _, c := range adjust.Fields {
		if err := t.checkCovered(c, string(c.Desc.Name())); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// readCapabilities adds the capabilities of m's fields: each field is one,
// except groups (whose fields are) and meta fields.
func (t *table) readCapabilities(m *protogen.Message, prefix string, update bool) error {
	for _, fd := range m.Fields {
		a, err := parseAnnotation(fd.Comments.Leading)
		if err != nil {
			return fmt.Errorf("field %s: %w", fd.Desc.FullName(), err)
		}
		path := prefix + string(fd.Desc.Name())
		switch {
		case has(a, "meta"):
			continue
		case has(a, "group"):
			if fd.Message == nil || fd.Desc.IsList() || fd.Desc.IsMap() {
				return fmt.Errorf("field %s: a group must be a message", fd.Desc.FullName())
			}
			if err := t.readCapabilities(fd.Message, path+".", update); err != nil {
				return err
			}
			continue
		}
		name := strings.ToLower(path)
		if update {
			name = "update." + name
		}
		c := capabilityRow{name: name, path: path, update: update}
		if u, ok := a["upstream"]; ok {
			enumName, value, ok := strings.Cut(u, ":")
			n, err := strconv.ParseUint(value, 10, 32)
			if !ok || err != nil || enumName == "" {
				return fmt.Errorf("field %s: upstream=%q is not NAME:VALUE", fd.Desc.FullName(), u)
			}
			c.upstream, c.upstreamValue = enumName, n
		}
		t.capabilities = append(t.capabilities, c)
	}
	return nil
}

// readField reads the row of the Field value v.
func (t *table) readField(adjust *protogen.Message, v *protogen.EnumValue) (fieldRow, error) {
	a, err := parseAnnotation(v.Comments.Leading)
	if err != nil {
		return fieldRow{}, err
	}
	if a == nil {
		return fieldRow{}, errors.New(`no "nri:" line (path=..., name=...)`)
	}
	row := fieldRow{
		goName:   v.GoIdent.GoName,
		path:     a["path"],
		name:     a["name"],
		key:      a["key"],
		owner:    "single",
		accessor: a["accessor"],
	}
	if row.path == "" || row.name == "" {
		return fieldRow{}, errors.New("path= and name= are required")
	}
	if row.accessor == "" {
		row.accessor = string(v.Desc.Name())
	}
	switch o := a["owner"]; {
	case o == "accumulate" && row.key == "":
		row.owner = o
	case o != "":
		return fieldRow{}, fmt.Errorf("owner=%q: only accumulate, for a field without key", o)
	case row.key != "":
		row.owner = "entry"
	}
	if resolve(adjust, row.path) == nil {
		return fieldRow{}, fmt.Errorf("path %q is not a field of ContainerAdjustment", row.path)
	}
	for _, c := range t.capabilities {
		if !c.update && (row.path == c.path || strings.HasPrefix(row.path, c.path+".")) {
			row.capability = c.name
		}
	}
	if row.capability == "" {
		return fieldRow{}, fmt.Errorf("path %q is in no capability", row.path)
	}
	for _, o := range t.fields {
		if o.path == row.path || strings.HasPrefix(row.path, o.path+".") || strings.HasPrefix(o.path, row.path+".") {
			return fieldRow{}, fmt.Errorf("path %q overlaps %s's %q", row.path, o.goName, o.path)
		}
	}
	return row, nil
}

// checkCovered fails unless the adjustment field fd at path, or each of
// its fields, is owned by a Field value or marked unowned.
func (t *table) checkCovered(fd *protogen.Field, path string) error {
	for _, r := range t.fields {
		if r.path == path {
			return nil
		}
	}
	a, err := parseAnnotation(fd.Comments.Leading)
	if err != nil {
		return err
	}
	if has(a, "unowned") {
		t.unowned = append(t.unowned, path)
		return nil
	}
	if fd.Message == nil || fd.Desc.IsList() || fd.Desc.IsMap() || strings.HasPrefix(fd.Message.GoIdent.GoName, "Optional") {
		return fmt.Errorf("adjustment field %s (%s) has no value in enum Field: add one with its \"nri:\" line, or mark the field \"nri: unowned\"", path, fd.Desc.FullName())
	}
	for _, sub := range fd.Message.Fields {
		if err := t.checkCovered(sub, path+"."+string(sub.Desc.Name())); err != nil {
			return err
		}
	}
	return nil
}

// resolve returns the field at a dotted path of proto names under m.
func resolve(m *protogen.Message, path string) *protogen.Field {
	var found *protogen.Field
	for name := range strings.SplitSeq(path, ".") {
		if m == nil {
			return nil
		}
		found = nil
		for _, fd := range m.Fields {
			if string(fd.Desc.Name()) == name {
				found = fd
			}
		}
		if found == nil {
			return nil
		}
		m = found.Message
	}
	return found
}

func has(a annotation, k string) bool {
	_, ok := a[k]
	return ok
}

func findEnum(f *protogen.File, name string) *protogen.Enum {
	for _, e := range f.Enums {
		if string(e.Desc.Name()) == name {
			return e
		}
	}
	return nil
}

func findMessage(f *protogen.File, name string) *protogen.Message {
	for _, m := range f.Messages {
		if string(m.Desc.Name()) == name {
			return m
		}
	}
	return nil
}
