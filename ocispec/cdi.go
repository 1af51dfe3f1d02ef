package ocispec

import (
	"fmt"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// CDIAnnotationKey is the annotation in which Apply records the CDI
// devices of an adjustment when the runtime gave it no injector
// (WithCDIDeviceInjector): a comma-separated list of fully-qualified CDI
// device names ("vendor.com/class=name"), the value format of CDI's
// "cdi.k8s.io/" annotations. ToContainer reads it back.
const CDIAnnotationKey = "cdi.k8s.io/nri"

// checkCDIName validates a fully-qualified CDI device name,
// "vendor/class=name".
func checkCDIName(field, name string) error {
	kind, dev, ok := strings.Cut(name, "=")
	vendor, class, ok2 := strings.Cut(kind, "/")
	if !ok || !ok2 || vendor == "" || class == "" || dev == "" || strings.ContainsAny(name, ", ") {
		return invalidf(field, "bad CDI device name %q (want vendor/class=name)", name)
	}
	return nil
}

// planCDIDevices hands the CDI devices to the runtime's injector, or
// records them in the CDIAnnotationKey annotation.
func planCDIDevices(cfg *config, devices []*api.CDIDevice) (step, error) {
	var names []string
	for i, d := range devices {
		if err := checkCDIName(fmt.Sprintf("CDI_devices[%d].name", i), d.GetName()); err != nil {
			return nil, err
		}
		names = append(names, d.GetName())
	}
	if len(names) == 0 {
		return nil, nil
	}
	if cfg.injectCDI != nil {
		return func(s *rspec.Spec) error {
			return fieldErr("CDI_devices", cfg.injectCDI(s, slices.Clone(names)))
		}, nil
	}
	return func(s *rspec.Spec) error {
		all := cdiFromAnnotations(s.Annotations)
		for _, n := range names {
			if !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[CDIAnnotationKey] = strings.Join(all, ",")
		return nil
	}, nil
}

// cdiFromAnnotations returns the CDI device names recorded in
// annotations.
func cdiFromAnnotations(annotations map[string]string) []string {
	v := annotations[CDIAnnotationKey]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}
