package record

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/nrikit/nrikit/record/recordpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// KeySize is the size of a redaction key in bytes.
const KeySize = 32

// RedactedPrefix starts every redacted value.
const RedactedPrefix = "redacted:"

// hashSize is the number of bytes of the keyed hash a redacted value
// keeps (128 bits: collisions are out of reach).
const hashSize = 16

// The fields whose values are redacted, found by name and type in any
// message of the protocol: a repeated string "env" holds NAME=VALUE
// entries (Container.env, Hook.env), a repeated message "env" key-value
// pairs (ContainerAdjustment.env: api.KeyValue), a map "annotations"
// keys and values (PodSandbox, Container, ContainerAdjustment).
const (
	envField         = "env"
	annotationsField = "annotations"
)

// Kinds of redacted values, part of what is hashed: an annotation and a
// variable of the same name and value hash differently.
const (
	kindEnv        = "env"
	kindAnnotation = "annotation"
)

// Redactor replaces the values of environment variables and annotations
// in protocol messages by keyed hashes: RedactedPrefix and the first 128
// bits of HMAC-SHA256(key, domain, kind, name, value), base64url. Equal
// values of the same variable (or annotation) hash equally, so replay
// compares them; without the key, the hash reveals nothing of the value,
// not even its length, and a guessed value cannot be checked against it
// (the key never goes into a recording). Because the name is hashed with
// the value, two variables with the same value (a password reused as a
// token) are not linked. What a hash does reveal is equality: that a
// variable has the same value in two containers, or changed between two
// events.
//
// Names matching a keep pattern (* matches any run of characters, ?
// one) keep their values in clear:
// an annotation a plugin reads to decide what to do must be kept for a
// replay of that plugin to mean anything.
//
// A nil *Redactor redacts nothing. A Redactor is safe for concurrent use.
type Redactor struct {
	key                   []byte
	keepEnv, keepAnnotate []string
}

// NewRedactor returns a redactor with key (KeySize bytes) keeping the
// values of the variables and annotations matching the patterns in
// clear.
func NewRedactor(key []byte, keepEnv, keepAnnotations []string) (*Redactor, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("record: redaction key of %d bytes, want %d", len(key), KeySize)
	}
	for _, p := range append(append([]string(nil), keepEnv...), keepAnnotations...) {
		if p == "" {
			return nil, errors.New("record: empty keep pattern")
		}
	}
	return &Redactor{key: append([]byte(nil), key...), keepEnv: keepEnv, keepAnnotate: keepAnnotations}, nil
}

// KeyID identifies the key without revealing it: the first 8 bytes of
// HMAC-SHA256(key, "nrikit-record key id").
func (r *Redactor) KeyID() []byte {
	if r == nil {
		return nil
	}
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte("nrikit-record key id"))
	return m.Sum(nil)[:8]
}

// Header returns the redaction as recorded in a file's header.
func (r *Redactor) header() *recordpb.Redaction {
	if r == nil {
		return &recordpb.Redaction{}
	}
	return &recordpb.Redaction{Enabled: true, KeyId: r.KeyID(), KeepEnv: r.keepEnv, KeepAnnotations: r.keepAnnotate}
}

// Hash returns the redacted form of value, the value of the variable (kind
// "env") or annotation (kind "annotation") name.
func (r *Redactor) hash(kind, name, value string) string {
	m := hmac.New(sha256.New, r.key)
	// Length-prefixed parts: no two different tuples hash the same input.
	for _, s := range []string{"nrikit-record/v1", kind, name, value} {
		fmt.Fprintf(m, "%d:%s", len(s), s)
	}
	return RedactedPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:hashSize])
}

// Env returns the redacted value of variable name (as replay needs to
// compare a value a plugin sets with a recorded one).
func (r *Redactor) Env(name, value string) string {
	if r == nil || keep(r.keepEnv, name) {
		return value
	}
	return r.hash(kindEnv, name, value)
}

// Annotation returns the redacted value of annotation key.
func (r *Redactor) Annotation(key, value string) string {
	if r == nil || keep(r.keepAnnotate, key) {
		return value
	}
	return r.hash(kindAnnotation, key, value)
}

func keep(patterns []string, name string) bool {
	for _, p := range patterns {
		if glob(p, name) {
			return true
		}
	}
	return false
}

// glob reports whether name matches pattern, where * matches any run of
// characters, slashes included (annotation keys have them: a pattern
// "gpu-env.nrikit.dev/*" keeps every key of that prefix), and ? any one
// character. It takes time linear in len(pattern)×len(name) at worst.
func glob(pattern, name string) bool {
	px, nx := 0, 0
	star, next := -1, 0
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch c := pattern[px]; {
			case c == '*':
				star, next = px, nx+1
				px++
				continue
			case nx < len(name) && (c == '?' || c == name[nx]):
				px++
				nx++
				continue
			}
		}
		if star >= 0 && next <= len(name) {
			px, nx = star+1, next
			next++
			continue
		}
		return false
	}
	return true
}

// Redact redacts m in place: every field named env or annotations in m
// and the messages it holds (see [Redactor]).
func (r *Redactor) Redact(m proto.Message) {
	if r == nil || m == nil {
		return
	}
	r.walk(m.ProtoReflect(), 0)
}

// maxWalkDepth bounds the nesting Redact follows (the protocol's messages
// nest about 8 deep).
const maxWalkDepth = 64

func (r *Redactor) walk(m protoreflect.Message, depth int) {
	if depth > maxWalkDepth || !m.IsValid() {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == envField && fd.IsList():
			r.env(m, fd, v.List())
		case fd.Name() == annotationsField && fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				mp.Set(k, protoreflect.ValueOfString(r.Annotation(k.String(), v.String())))
				return true
			})
		case fd.Message() == nil:
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				r.walk(l.Get(i).Message(), depth+1)
			}
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
					r.walk(v.Message(), depth+1)
					return true
				})
			}
		default:
			r.walk(v.Message(), depth+1)
		}
		return true
	})
}

// env redacts a list of NAME=VALUE strings or of key-value messages.
func (r *Redactor) env(_ protoreflect.Message, fd protoreflect.FieldDescriptor, l protoreflect.List) {
	switch {
	case fd.Kind() == protoreflect.StringKind:
		for i := range l.Len() {
			name, value, _ := strings.Cut(l.Get(i).String(), "=")
			l.Set(i, protoreflect.ValueOfString(name+"="+r.Env(name, value)))
		}
	case fd.Message() != nil:
		kd, vd := fd.Message().Fields().ByName("key"), fd.Message().Fields().ByName("value")
		if kd == nil || vd == nil || kd.Kind() != protoreflect.StringKind || vd.Kind() != protoreflect.StringKind {
			return
		}
		for i := range l.Len() {
			kv := l.Get(i).Message()
			name := kv.Get(kd).String()
			if strings.HasPrefix(name, "-") || !kv.Has(vd) {
				continue // a removal: no value
			}
			kv.Set(vd, protoreflect.ValueOfString(r.Env(name, kv.Get(vd).String())))
		}
	}
}

// LoadKey reads the redaction key from path, creating it (0600, KeySize
// random bytes) if it does not exist. An existing key file must be a
// regular file of KeySize bytes that only its owner can read or write.
func LoadKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err == nil {
		defer f.Close()
		key := make([]byte, KeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("record: making a redaction key: %w", err)
		}
		if _, err := f.Write(key); err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("record: writing the redaction key: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("record: writing the redaction key: %w", err)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("record: creating the redaction key: %w", err)
	}
	return ReadKey(path)
}

// ReadKey reads an existing redaction key (see [LoadKey]), as replay does
// to compare values with a recording's.
func ReadKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		return nil, fmt.Errorf("record: reading the redaction key: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("record: reading the redaction key: %w", err)
	}
	if !info.Mode().IsRegular() || info.Size() != KeySize {
		return nil, fmt.Errorf("record: redaction key %s: want a regular file of %d bytes", path, KeySize)
	}
	if !ownedBySelf(info) {
		return nil, fmt.Errorf("record: redaction key %s: owned by another user: want a key file of the recorder's own", path)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("record: redaction key %s: mode %v lets others read or write it: want 0600", path, info.Mode().Perm())
	}
	key := make([]byte, KeySize)
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, fmt.Errorf("record: reading the redaction key: %w", err)
	}
	return key, nil
}
