package adaptation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/nrikit/nrikit/policy"
)

// The administrator's policy (package policy, docs/policy.md): which
// plugin may change what, where, and which plugins are required. The
// Adaptation holds the current one in a.pol; each plugin holds its grant
// under it (grant.go), resolved when the plugin is configured and again,
// for every plugin, when a new policy is applied. Each plugin's own
// answer is checked against its grant before it is merged (checkGrant
// finds, enforceGrant decides).

// ErrNoPolicyFile is returned by [Adaptation.ReloadPolicy] when the
// Adaptation was not given a policy file.
var ErrNoPolicyFile = errors.New("adaptation: no policy file to reload")

// WithPolicy makes p the administrator's policy: each plugin may make
// only the changes its grant allows (docs/policy.md), and the plugins p
// requires gate pods and containers. Nil is no policy, the default:
// every plugin may change everything. Of WithPolicy and [WithPolicyFile],
// the last one given applies (an embedder's WithPolicy overrides the
// file compat/nri reads by default).
func WithPolicy(p *policy.Policy) Option {
	return func(c *config) error {
		c.policy, c.policyFile = p, ""
		return nil
	}
}

// WithPolicyFile reads the administrator's policy from path
// ([policy.Load]: the file and its directories must be trusted as the
// runtime's configuration is) when the Adaptation is created, and again
// whenever the file changes (looked for every [WithPolicyReloadInterval])
// or [Adaptation.ReloadPolicy] is called. A file that does not exist when
// the Adaptation is created means no policy (logged), if its directory is
// trusted ([policy.CheckDirectory]); an invalid or untrusted one, or one
// missing from a directory others may write, means a policy under which
// no plugin may change anything
// (logged with its mistakes) until a valid file is read: the runtime and
// its plugins keep running. Later, a new valid file applies to the requests that
// follow, for connected plugins too; an invalid one, or a file removed,
// keeps the policy in force (fail-safe: removing the file does not allow
// every plugin everything until the runtime restarts) and is logged with
// its mistakes. Of [WithPolicy] and WithPolicyFile, the last one given
// applies.
func WithPolicyFile(path string) Option {
	return func(c *config) error {
		if path == "" {
			return errors.New("adaptation: empty policy file path")
		}
		c.policy, c.policyFile = nil, path
		return nil
	}
}

// policyFile is the state of the policy file of WithPolicyFile.
type policyFile struct {
	// info is the file's when it was last read; nil if it was absent.
	info fs.FileInfo
}

// changed reports whether fi (nil: absent) differs from the file last
// read.
func (f *policyFile) changed(fi fs.FileInfo) bool {
	switch {
	case fi == nil || f.info == nil:
		return (fi == nil) != (f.info == nil)
	case !os.SameFile(fi, f.info):
		return true
	}
	return fi.Size() != f.info.Size() || !fi.ModTime().Equal(f.info.ModTime())
}

// loadPolicy reads the policy file: the policy, and the file's info
// (nil, with no policy and no error, if the file does not exist in a
// trusted directory; a file missing from a directory others may write is
// an error: anyone may have removed it).
func (c *config) loadPolicy(path string) (*policy.Policy, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := policy.CheckDirectory(path); err != nil {
			return nil, nil, fmt.Errorf("adaptation: no policy file %s, in a directory that is not trusted: %w", path, err)
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("adaptation: policy file: %w", err)
	}
	p, err := policy.Load(path, policy.WithFilterOptions(c.filterOptions()...))
	if err != nil {
		return nil, fi, fmt.Errorf("adaptation: policy file %s: %w", path, err)
	}
	return p, fi, nil
}

// initPolicy sets the policy New starts with.
func (a *Adaptation) initPolicy() error {
	if a.cfg.policyFile == "" {
		a.pol.Store(a.cfg.policy)
		return nil
	}
	p, fi, err := a.cfg.loadPolicy(a.cfg.policyFile)
	if err != nil {
		// Fail closed, and stay within reach of a fix: no plugin may
		// change anything until a valid file is read (the runtime and
		// its plugins keep running; the file is watched as usual).
		deny, perr := policy.Parse(a.cfg.policyFile, nil)
		if perr != nil {
			return fmt.Errorf("adaptation: the deny-all policy: %w", perr)
		}
		a.polFile.info = fi
		a.pol.Store(deny)
		a.log.Error("invalid policy file: no plugin may change anything until it is fixed", "path", a.cfg.policyFile, "error", err)
		return nil
	}
	a.polFile.info = fi
	a.pol.Store(p)
	if fi == nil {
		a.log.Info("no policy file, every plugin may make every change", "path", a.cfg.policyFile)
	} else {
		a.log.Info("policy loaded", "path", a.cfg.policyFile, "grants", len(p.Grants()), "required", p.Required())
		a.logPolicyWarnings(p)
	}
	return nil
}

// logPolicyWarnings logs what is valid in p but weak (policy.Warnings).
func (a *Adaptation) logPolicyWarnings(p *policy.Policy) {
	for _, w := range p.Warnings() {
		a.log.Warn("policy warning", "warning", w.Error())
	}
}

// Policy returns the policy in force: nil for none.
func (a *Adaptation) Policy() *policy.Policy { return a.pol.Load() }

// ReloadPolicy reads the policy file of [WithPolicyFile] again and, if it
// is valid, applies it to the requests that follow, for the connected
// plugins too (each plugin's grant, where included, is resolved again).
// An invalid file keeps the policy in force; its mistakes are logged and
// returned. A file that was removed keeps the policy in force too (see
// WithPolicyFile). It returns [ErrNoPolicyFile] without a policy file.
//
// When the new policy changes the where of a connected plugin, the
// containers that plugin updates or evicts are checked against the new
// where at once: ReloadPolicy then lists the runtime's pods and
// containers as a plugin's registration does (its [ListFunc], or its
// [SyncFunc], which takes the runtime's lock; after the runtime's
// [PluginSyncBlock]s), at most the registration timeout, and applies
// the policy in the same critical section. It must not be called with
// the runtime's lock held. If the list cannot be taken, the policy
// applies all the same, and those updates and evictions are refused
// ([WhereUncheckedError]) until it can be.
func (a *Adaptation) ReloadPolicy() error {
	if a.cfg.policyFile == "" {
		return ErrNoPolicyFile
	}
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	return a.reloadLocked()
}

// reloadLocked is ReloadPolicy under a.reloadMu.
func (a *Adaptation) reloadLocked() error {
	path := a.cfg.policyFile
	p, fi, err := a.cfg.loadPolicy(path)
	if err != nil {
		a.polFile.info = fi // not retried until it changes again
		a.log.Error("invalid policy file, keeping the policy in force", "path", path, "error", err)
		return err
	}
	if fi == nil {
		a.polFile.info = nil
		if a.pol.Load() != nil {
			a.log.Warn("policy file removed, keeping the policy in force until the runtime restarts", "path", path)
		}
		return nil
	}
	a.polFile.info = fi
	a.applyPolicy(p)
	a.log.Info("policy reloaded", "path", path, "grants", len(p.Grants()), "required", p.Required())
	a.logPolicyWarnings(p)
	return nil
}

// watchPolicy looks for a change of the policy file every reload
// interval until the Adaptation stops, and reloads it when it changed.
func (a *Adaptation) watchPolicy() {
	for a.sleep(a.cfg.limits.PolicyReloadInterval) {
		fi, err := os.Stat(a.cfg.policyFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // unreadable: keep the policy, look again
		}
		if err != nil {
			fi = nil
		}
		a.reloadMu.Lock()
		if a.polFile.changed(fi) {
			_ = a.reloadLocked() // logged
		}
		a.keepWhereIndex()
		a.reloadMu.Unlock()
	}
}
