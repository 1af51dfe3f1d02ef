package ocispec

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// planSysctl adds, replaces and removes (by "-key") linux.sysctl entries.
func planSysctl(cfg *config, in map[string]string) (step, error) {
	if len(in) == 0 {
		return nil, nil
	}
	in, err := filtered("linux.sysctl", cfg.filterSysctl, in)
	if err != nil {
		return nil, err
	}
	edit, err := splitMarked("linux.sysctl", in)
	if err != nil {
		return nil, err
	}
	return func(s *rspec.Spec) error {
		l := ensureLinux(s)
		l.Sysctl = edit.apply(l.Sysctl)
		return nil
	}, nil
}

// planNetDevices adds, replaces and removes (by "-hostif") the network
// devices moved into the container. Entries without a value are ignored.
func planNetDevices(in map[string]*api.LinuxNetDevice) (step, error) {
	if len(in) == 0 {
		return nil, nil
	}
	marked, err := splitMarked("linux.net_devices", in)
	if err != nil {
		return nil, err
	}
	edit := mapEdit[rspec.LinuxNetDevice]{del: marked.del, set: map[string]rspec.LinuxNetDevice{}}
	for k, d := range marked.set {
		if d != nil {
			edit.set[k] = rspec.LinuxNetDevice{Name: d.GetName()}
		}
	}
	return func(s *rspec.Spec) error {
		l := ensureLinux(s)
		l.NetDevices = edit.apply(l.NetDevices)
		return nil
	}, nil
}
