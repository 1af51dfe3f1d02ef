package api

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Environment variables a runtime sets for the plugins it launches.
const (
	// PluginNameEnvVar holds the plugin's name (without index).
	PluginNameEnvVar = "NRI_PLUGIN_NAME"
	// PluginIdxEnvVar holds the plugin's two-digit index.
	PluginIdxEnvVar = "NRI_PLUGIN_IDX"
	// PluginSocketEnvVar holds the number of the inherited file
	// descriptor connected to the runtime (normally "3").
	PluginSocketEnvVar = "NRI_PLUGIN_SOCKET"
)

// MaxPluginNameLength is the longest plugin name, in bytes, that
// [CheckPluginName] accepts. Names are used in logs, metric labels and
// error messages; upstream NRI sets no limit, and names in use are far
// shorter.
const MaxPluginNameLength = 128

// CheckPluginIndex reports an error unless idx is exactly two decimal
// digits ("00" to "99").
func CheckPluginIndex(idx string) error {
	if len(idx) != 2 || idx[0] < '0' || idx[0] > '9' || idx[1] < '0' || idx[1] > '9' {
		return fmt.Errorf("invalid plugin index %s: must be two digits (00-99)", QuoteBounded(idx))
	}
	return nil
}

// CheckPluginName reports an error unless name is non-empty, at most
// [MaxPluginNameLength] bytes long and consists only of the characters
// [a-zA-Z0-9_.+-].
func CheckPluginName(name string) error {
	if name == "" {
		return fmt.Errorf("invalid plugin name: empty")
	}
	if len(name) > MaxPluginNameLength {
		return fmt.Errorf("invalid plugin name %s: %d bytes long, the limit is %d", QuoteBounded(name), len(name), MaxPluginNameLength)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '-', r == '_', r == '.', r == '+':
		default:
			return fmt.Errorf("invalid plugin name %s: character %q not allowed (use [a-zA-Z0-9_.+-])", QuoteBounded(name), r)
		}
	}
	return nil
}

// quoteLimit is how many bytes of a string QuoteBounded keeps.
const quoteLimit = 64

// QuoteBounded quotes s like %q, keeping at most its first 64 bytes and
// saying how long it was when it is longer: a peer-supplied string
// (a plugin name, an index, a version) goes into logs and error messages
// without letting the peer decide how large they get.
func QuoteBounded(s string) string {
	if len(s) <= quoteLimit {
		return fmt.Sprintf("%q", s)
	}
	cut := quoteLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
}

// ParsePluginName splits a full plugin name of the form IDX-NAME, such as
// a pre-installed plugin's file name "10-logger", into index and name,
// checking both.
func ParsePluginName(full string) (idx, name string, err error) {
	idx, name, ok := strings.Cut(full, "-")
	if !ok {
		return "", "", fmt.Errorf("invalid plugin name %s: want IDX-NAME, e.g. 10-logger", QuoteBounded(full))
	}
	if err := CheckPluginIndex(idx); err != nil {
		return "", "", fmt.Errorf("plugin %s: %w", QuoteBounded(full), err)
	}
	if err := CheckPluginName(name); err != nil {
		return "", "", fmt.Errorf("plugin %s: %w", QuoteBounded(full), err)
	}
	return idx, name, nil
}

// FullPluginName joins index and name as IDX-NAME.
func FullPluginName(idx, name string) string {
	return idx + "-" + name
}
