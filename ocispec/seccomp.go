package ocispec

import (
	"fmt"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// planSeccompPolicy replaces linux.seccomp with the given policy.
func planSeccompPolicy(p *api.LinuxSeccomp) (step, error) {
	if p == nil {
		return nil, nil
	}
	o, err := seccompToOCI(p)
	if err != nil {
		return nil, err
	}
	return func(s *rspec.Spec) error {
		ensureLinux(s).Seccomp = o
		return nil
	}, nil
}

// seccompToOCI converts a seccomp policy. Unlike upstream's generator it
// keeps the default errno.
func seccompToOCI(p *api.LinuxSeccomp) (*rspec.LinuxSeccomp, error) {
	o := &rspec.LinuxSeccomp{
		DefaultAction:    rspec.LinuxSeccompAction(p.GetDefaultAction()),
		DefaultErrnoRet:  optUint(p.GetDefaultErrno()),
		ListenerPath:     p.GetListenerPath(),
		ListenerMetadata: p.GetListenerMetadata(),
	}
	for _, a := range p.GetArchitectures() {
		o.Architectures = append(o.Architectures, rspec.Arch(a))
	}
	for _, f := range p.GetFlags() {
		o.Flags = append(o.Flags, rspec.LinuxSeccompFlag(f))
	}
	for i, sc := range p.GetSyscalls() {
		field := fmt.Sprintf("linux.seccomp_policy.syscalls[%d]", i)
		if len(sc.GetNames()) == 0 {
			return nil, invalidf(field+".names", "syscall rule without names")
		}
		if sc.GetAction() == "" {
			return nil, invalidf(field+".action", "syscall rule without action")
		}
		r := rspec.LinuxSyscall{
			Names:    slices.Clone(sc.GetNames()),
			Action:   rspec.LinuxSeccompAction(sc.GetAction()),
			ErrnoRet: optUint(sc.GetErrnoRet()),
		}
		for _, a := range sc.GetArgs() {
			r.Args = append(r.Args, rspec.LinuxSeccompArg{
				Index: uint(a.GetIndex()), Value: a.GetValue(), ValueTwo: a.GetValueTwo(), Op: rspec.LinuxSeccompOperator(a.GetOp()),
			})
		}
		o.Syscalls = append(o.Syscalls, r)
	}
	return o, nil
}

// optUint converts an optional errno.
func optUint(v *api.OptionalUInt32) *uint {
	if v == nil {
		return nil
	}
	u := uint(v.GetValue())
	return &u
}

// seccompFromOCI converts the spec's seccomp policy.
func seccompFromOCI(o *rspec.LinuxSeccomp) *api.LinuxSeccomp {
	if o == nil {
		return nil
	}
	p := &api.LinuxSeccomp{
		DefaultAction:    string(o.DefaultAction),
		DefaultErrno:     optUint32(o.DefaultErrnoRet),
		ListenerPath:     o.ListenerPath,
		ListenerMetadata: o.ListenerMetadata,
	}
	for _, a := range o.Architectures {
		p.Architectures = append(p.Architectures, string(a))
	}
	for _, f := range o.Flags {
		p.Flags = append(p.Flags, string(f))
	}
	for _, sc := range o.Syscalls {
		r := &api.LinuxSyscall{Names: slices.Clone(sc.Names), Action: string(sc.Action), ErrnoRet: optUint32(sc.ErrnoRet)}
		for _, a := range sc.Args {
			r.Args = append(r.Args, &api.LinuxSeccompArg{
				Index: uint32(a.Index), Value: a.Value, ValueTwo: a.ValueTwo, Op: string(a.Op),
			})
		}
		p.Syscalls = append(p.Syscalls, r)
	}
	return p
}

// optUint32 converts an errno from the spec.
func optUint32(v *uint) *api.OptionalUInt32 {
	if v == nil {
		return nil
	}
	return &api.OptionalUInt32{Value: uint32(*v)}
}
