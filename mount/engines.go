package mount

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// EngineType builds the engines of the mounts of one type. The table calls
// it; a program adds its own types with Options.Types.
type EngineType struct {
	// Options checks the options of a mount of the type and returns
	// them with their defaults filled in, as they are stored. A refused
	// option is an error of kind keel.KindInvalid naming it as a field of
	// EnableRequest (Options["key"]; see OptionField). Nil: the type
	// takes no option.
	Options func(opts map[string]string) (map[string]string, error)
	// Build builds the engine of a mount. It is called when a mount is
	// enabled, tuned, and opened by a table (this one, another process's
	// on a shared store); it must not start background work: the table
	// calls the engine's Start (see Engine) when it serves the mount.
	Build func(env Env) (Engine, error)
}

// Env is what a table gives EngineType.Build for one mount.
type Env struct {
	// Entry is the mount's entry: its path, type, options with their
	// defaults, and TTLs.
	Entry Entry
	// Store is the engine's part of the table's store, guarded: once
	// the mount is disabled, its transactions fail (see the package
	// documentation). The engine keeps all its data in it.
	Store storage.Store
	// Leases is the mount's lease handle, registered with Store and the
	// mount's TTLs. An engine that issues leases issues them through it
	// (Issuer.Issue, or Issuer.Update with its own records) and names
	// its Revoker with it (Issuer.SetRevoker); until it does, the lease
	// manager puts the mount's due leases off.
	Leases *lease.Issuer
	// Authorizer is the table's one Authorizer.
	Authorizer keel.Authorizer
	// Clock, Logger and Observer are the table's.
	Clock    keel.Clock
	Logger   *slog.Logger
	Observer keel.Observer
	// Leader is the leader of the engine's background work (see
	// Options.Leader).
	Leader leader.Leader
}

// Engine is the engine a Build returned: *kv.Engine, *ldapengine.Engine or
// a program's own. When it has the methods Start() and Stop(), the table
// calls Start when it serves the mount and Stop when it stops serving it
// (Disable, Tune, Close).
type Engine any

// worker is an Engine with background work.
type worker interface {
	Start()
	Stop()
}

// OptionField returns the Go path of the option k of EnableRequest.Options,
// a map entry: Options["k"] (see keel.FieldError). An EngineType's Options
// names refused options with it.
func OptionField(k string) string { return "Options[" + strconv.Quote(k) + "]" }

// KV returns the type of the kv mounts: keel's kv engine, version 1, with
// the options "version" ("1", the default) and "leased_passthrough" (a
// boolean: each read issues a lease, as Vault's option does).
func kvEngineType() EngineType {
	return EngineType{
		Options: func(in map[string]string) (map[string]string, error) {
			var v keel.Validation
			opts := map[string]string{"version": "1"}
			for k, val := range in {
				switch k {
				case "version":
					if val != "1" && val != "" {
						v.Add(OptionField("version"), "only kv version 1 is available")
					}
				case "leased_passthrough":
					if _, err := strconv.ParseBool(val); err != nil {
						v.Add(OptionField("leased_passthrough"), "must be a boolean")
					}
					opts[k] = val
				default:
					v.Add(OptionField(k), "unknown option")
				}
			}
			return opts, v.Err()
		},
		Build: func(env Env) (Engine, error) {
			opts := &kv.Options{Authorizer: env.Authorizer, Observer: env.Observer, Clock: env.Clock, DefaultTTL: env.Entry.DefaultTTL}
			if leased, _ := strconv.ParseBool(env.Entry.Options["leased_passthrough"]); leased {
				opts.Leases = env.Leases
			}
			return kv.New(env.Store, trimSlash(env.Entry.Path), opts)
		},
	}
}

// LDAP returns the type of the ldap (flavor ldapengine.FlavorLDAP) or
// openldap mounts: package ldapengine's engine, reaching the directory
// through dir (nil: ldapengine.LDAP{}) and generating passwords with the
// policies (nil: none). They take no option.
func ldapEngineType(flavor ldapengine.Flavor, dir ldapengine.Directory, policies *passwordpolicy.Policies) EngineType {
	return EngineType{
		Build: func(env Env) (Engine, error) {
			return ldapengine.New(env.Store, flavor, trimSlash(env.Entry.Path), &ldapengine.Options{
				Directory: dir, Policies: policies, Clock: env.Clock, Authorizer: env.Authorizer, Logger: env.Logger, Observer: env.Observer,
				Leader: env.Leader, Leases: env.Leases, MaxTTL: env.Entry.MaxTTL,
			})
		},
	}
}

// checkOptions checks the options of a mount of type typ with its
// EngineType, and returns them as they are stored.
func (t *Table) checkOptions(typ string, in map[string]string) (map[string]string, error) {
	et, ok := t.types[typ]
	if !ok {
		return nil, keel.Invalid("Type", "no engine type %q (the table mounts %s)", typ, t.typeNames())
	}
	if et.Options == nil {
		var v keel.Validation
		for k := range in {
			v.Add(OptionField(k), "unknown option")
		}
		return map[string]string{}, v.Err()
	}
	return et.Options(in)
}

// build makes m's engine: it registers the mount with the lease manager
// and calls its type's Build; on failure nothing stays registered.
func (t *Table) build(m *Mount) error {
	et, ok := t.types[m.Type]
	if !ok {
		return keel.Invalid("Type", "no engine type %q (the table mounts %s)", m.Type, t.typeNames())
	}
	view := t.dataView(m.Entry)
	iss, err := t.leases.Register(lease.Mount{Path: m.Path, Store: view, DefaultTTL: m.DefaultTTL, MaxTTL: m.MaxTTL})
	if err != nil {
		return err
	}
	eng, err := et.Build(Env{
		Entry: m.Entry, Store: view, Leases: iss,
		Authorizer: t.auth, Clock: t.clock, Logger: t.log, Observer: t.obs, Leader: t.leader(leaderName(m.Entry)),
	})
	if err == nil && eng == nil {
		err = fmt.Errorf("mount: %q: the %s engine type built no engine: %w", m.Path, m.Type, keel.KindInternal)
	}
	if err != nil {
		t.leases.Unregister(m.Path)
		return err
	}
	m.Engine = eng
	m.KV, _ = eng.(*kv.Engine)
	m.LDAP, _ = eng.(*ldapengine.Engine)
	return nil
}

// unbuild stops m's engine and drops its lease registration.
func (t *Table) unbuild(m *Mount) {
	if w, ok := m.Engine.(worker); ok {
		w.Stop()
	}
	if m.Engine != nil {
		t.leases.Unregister(m.Path)
	}
}

// start starts the background work of m's engine, if it has any.
func start(m *Mount) {
	if w, ok := m.Engine.(worker); ok && m.Served() {
		w.Start()
	}
}

// stop stops the background work of m's engine, if it has any.
func stop(m *Mount) {
	if w, ok := m.Engine.(worker); ok {
		w.Stop()
	}
}

// leaderName is the name of the leader of the background work of e's
// engine (see Options.Leader).
func leaderName(e Entry) string {
	if e.Type == string(ldapengine.FlavorLDAP) || e.Type == string(ldapengine.FlavorOpenLDAP) {
		return "ldapengine/" + trimSlash(e.Path)
	}
	return "engine/" + trimSlash(e.Path)
}

func trimSlash(path string) string { return path[:len(path)-1] }
