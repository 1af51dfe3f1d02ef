package ocispec

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// planAnnotations adds, replaces and removes (by "-key") annotations.
func planAnnotations(cfg *config, in map[string]string) (step, error) {
	if len(in) == 0 {
		return nil, nil
	}
	in, err := filtered("annotations", cfg.filterAnnotations, in)
	if err != nil {
		return nil, err
	}
	edit, err := splitMarked("annotations", in)
	if err != nil {
		return nil, err
	}
	return func(s *rspec.Spec) error {
		s.Annotations = edit.apply(s.Annotations)
		return nil
	}, nil
}
