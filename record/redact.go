package record

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

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
	// kindEnvEntry keys the cache of whole NAME=VALUE entries; it is
	// never hashed.
	kindEnvEntry = "env entry"
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
	// macs pools keyed hashers: a hasher made anew per value (the key
	// schedule) costs more than the hashing of a short value.
	macs sync.Pool
	// seen caches the hashes of recent values: a container's variables
	// and annotations come again in each of its events (a recorder sees
	// each about eight times), and a hash costs two SHA-256 blocks or
	// more. Bounded by maxCached entries (emptied when full).
	mu   sync.Mutex
	seen map[hashInput]string
}

// hashInput is what a hash is of.
type hashInput struct{ kind, name, value string }

// maxCached bounds Redactor.seen.
const maxCached = 8192

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
	r := &Redactor{key: append([]byte(nil), key...), keepEnv: keepEnv, keepAnnotate: keepAnnotations}
	r.macs.New = func() any { return hmac.New(sha256.New, r.key) }
	return r, nil
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
	in := hashInput{kind, name, value}
	r.mu.Lock()
	h, ok := r.seen[in]
	r.mu.Unlock()
	if ok {
		return h
	}
	h = r.compute(kind, name, value)
	r.remember(in, h)
	return h
}

// remember caches out for in.
func (r *Redactor) remember(in hashInput, out string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) >= maxCached || r.seen == nil {
		r.seen = make(map[hashInput]string, maxCached)
	}
	r.seen[in] = out
}

// compute is hash without the cache.
func (r *Redactor) compute(kind, name, value string) string {
	m := r.macs.Get().(hash.Hash)
	defer r.macs.Put(m)
	m.Reset()
	// Length-prefixed parts ("LEN:PART", LEN in decimal): no two
	// different tuples hash the same input.
	var buf [64]byte
	for _, s := range [...]string{"nrikit-record/v1", kind, name, value} {
		b := strconv.AppendInt(buf[:0], int64(len(s)), 10)
		b = append(b, ':')
		m.Write(b)
		io.WriteString(m, s)
	}
	var sum [sha256.Size]byte
	var out [len(RedactedPrefix) + 22]byte // base64 of hashSize bytes, unpadded
	copy(out[:], RedactedPrefix)
	base64.RawURLEncoding.Encode(out[len(RedactedPrefix):], m.Sum(sum[:0])[:hashSize])
	return string(out[:])
}

// Env returns the redacted value of variable name (as replay needs to
// compare a value a plugin sets with a recorded one).
func (r *Redactor) Env(name, value string) string {
	if r == nil || keep(r.keepEnv, name) {
		return value
	}
	return r.hash(kindEnv, name, value)
}

// envEntry returns a NAME=VALUE entry with its value redacted, from the
// cache if it was seen.
func (r *Redactor) envEntry(entry string) string {
	in := hashInput{kind: kindEnvEntry, value: entry}
	r.mu.Lock()
	out, ok := r.seen[in]
	r.mu.Unlock()
	if ok {
		return out
	}
	name, value, _ := strings.Cut(entry, "=")
	out = name + "=" + r.Env(name, value)
	r.remember(in, out)
	return out
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
	for _, fd := range planOf(m.Descriptor()) {
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.Name() == envField && fd.IsList():
			r.env(m, fd, v.List())
		case fd.Name() == annotationsField && fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				mp.Set(k, protoreflect.ValueOfString(r.Annotation(k.String(), v.String())))
				return true
			})
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				r.walk(l.Get(i).Message(), depth+1)
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				r.walk(v.Message(), depth+1)
				return true
			})
		default:
			r.walk(v.Message(), depth+1)
		}
	}
}

// plans caches planOf's answers, by message type.
var plans sync.Map // protoreflect.FullName → []protoreflect.FieldDescriptor

// planOf returns the fields of messages of type md that Redact looks at:
// the env and annotations fields, and the message fields (single, lists
// or map values) whose types hold such fields, however deep. It is
// derived from the descriptors, once per type: the rest of a message is
// not walked.
func planOf(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if p, ok := plans.Load(md.FullName()); ok {
		return p.([]protoreflect.FieldDescriptor)
	}
	p := computePlan(md, map[protoreflect.FullName]bool{})
	plans.Store(md.FullName(), p)
	return p
}

// computePlan is planOf's; visiting holds the types being planned (a
// recursive type refers back to one of them).
func computePlan(md protoreflect.MessageDescriptor, visiting map[protoreflect.FullName]bool) []protoreflect.FieldDescriptor {
	visiting[md.FullName()] = true
	defer delete(visiting, md.FullName())
	var out []protoreflect.FieldDescriptor
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.Name() == envField && fd.IsList(),
			fd.Name() == annotationsField && fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
			out = append(out, fd)
			continue
		}
		sub := fd.Message()
		if fd.IsMap() {
			sub = fd.MapValue().Message()
		}
		if sub == nil {
			continue
		}
		if visiting[sub.FullName()] || len(computePlan(sub, visiting)) > 0 {
			out = append(out, fd) // a recursive type: walked, bounded by maxWalkDepth
		}
	}
	return out
}

// env redacts a list of NAME=VALUE strings or of key-value messages.
func (r *Redactor) env(_ protoreflect.Message, fd protoreflect.FieldDescriptor, l protoreflect.List) {
	switch {
	case fd.Kind() == protoreflect.StringKind:
		for i := range l.Len() {
			l.Set(i, protoreflect.ValueOfString(r.envEntry(l.Get(i).String())))
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
