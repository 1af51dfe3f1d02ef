package api

import (
	"fmt"
	"strings"
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

// CheckPluginIndex reports an error unless idx is exactly two decimal
// digits ("00" to "99").
func CheckPluginIndex(idx string) error {
	if len(idx) != 2 || idx[0] < '0' || idx[0] > '9' || idx[1] < '0' || idx[1] > '9' {
		return fmt.Errorf("invalid plugin index %q: must be two digits (00-99)", idx)
	}
	return nil
}

// CheckPluginName reports an error unless name is non-empty and consists
// only of the characters [a-zA-Z0-9_.+-].
func CheckPluginName(name string) error {
	if name == "" {
		return fmt.Errorf("invalid plugin name: empty")
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '-', r == '_', r == '.', r == '+':
		default:
			return fmt.Errorf("invalid plugin name %q: character %q not allowed (use [a-zA-Z0-9_.+-])", name, r)
		}
	}
	return nil
}

// ParsePluginName splits a full plugin name of the form IDX-NAME, such as
// a pre-installed plugin's file name "10-logger", into index and name,
// checking both.
func ParsePluginName(full string) (idx, name string, err error) {
	idx, name, ok := strings.Cut(full, "-")
	if !ok {
		return "", "", fmt.Errorf("invalid plugin name %q: want IDX-NAME, e.g. 10-logger", full)
	}
	if err := CheckPluginIndex(idx); err != nil {
		return "", "", fmt.Errorf("plugin %q: %w", full, err)
	}
	if err := CheckPluginName(name); err != nil {
		return "", "", fmt.Errorf("plugin %q: %w", full, err)
	}
	return idx, name, nil
}

// FullPluginName joins index and name as IDX-NAME.
func FullPluginName(idx, name string) string {
	return idx + "-" + name
}
