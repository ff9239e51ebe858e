package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// DeviceConfig is a device of a Table, in the fields of Vault's
// sys/audit. Type "file" is the one type: Options["file_path"] names its
// file (required) and Options["mode"] the permission, in octal, of a file
// it creates (0600 when absent).
type DeviceConfig struct {
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Options     map[string]string `json:"options"`
	Local       bool              `json:"local"`
}

// keptDevice is a device as a Table keeps it in the store: its
// configuration and its salt.
type keptDevice struct {
	DeviceConfig
	Salt []byte `json:"salt"`
}

// TableOptions configure a Table. A nil *TableOptions means the defaults.
type TableOptions struct {
	// Prefix is where the devices are kept in the store, one key per
	// device path. Empty: "audit/".
	Prefix string
	// Clock is given to the files (their checks that the path still
	// names the file). Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Logger receives the devices that could not be opened when another
	// process enabled them. Nil: slog.Default().
	Logger *slog.Logger
}

// Table is a Broker's devices kept in a store: each device's
// configuration and salt, under one key per path, so that the devices and
// the hashes of their records outlive a restart and are shared by every
// process on the store. A Table follows the store: a device enabled or
// disabled through another process (or by a restore) is enabled or
// disabled in this one soon after. A Table is safe for concurrent use;
// Close stops it.
type Table struct {
	broker *Broker
	store  storage.Store
	prefix string
	clock  keel.Clock
	log    *slog.Logger
	stop   func()

	mu      sync.Mutex // serializes Enable, Disable and follow
	kept    map[string]keptDevice
	files   map[string]*File
	enabled atomic.Int32 // len(files), read without mu
}

// OpenTable enables on broker the devices kept in store under the
// options' prefix, and follows the store until Close. A kept device whose
// file cannot be opened is logged and left disabled, so that a program
// still starts and an operator can fix or disable it.
func OpenTable(ctx context.Context, store storage.Store, broker *Broker, opts *TableOptions) (*Table, error) {
	var o TableOptions
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = "audit/"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	t := &Table{
		broker: broker, store: store, prefix: o.Prefix, clock: keel.ClockOrSystem(o.Clock), log: o.Logger,
		kept: map[string]keptDevice{}, files: map[string]*File{},
	}
	changed := make(chan struct{}, 1)
	stopWatch, err := storage.Watch(ctx, store, t.prefix, func(string) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("audit: watch the devices: %w", err)
	}
	if err := t.follow(ctx); err != nil {
		stopWatch()
		return nil, err
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-changed:
				if err := t.follow(context.Background()); err != nil {
					t.log.Error("audit devices not read again", "err", err)
				}
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	t.stop = func() {
		once.Do(func() {
			stopWatch()
			close(done)
			<-ended
		})
	}
	return t, nil
}

// Enabled reports whether at least one device of the table is enabled.
// It takes no lock: a program reads it on every request.
func (t *Table) Enabled() bool { return t.enabled.Load() > 0 }

// List returns the devices kept, by path: those enabled, and those whose
// file could not be opened (see OpenTable).
func (t *Table) List() map[string]DeviceConfig {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]DeviceConfig, len(t.kept))
	for path, dev := range t.kept {
		c := dev.DeviceConfig
		c.Options = maps.Clone(c.Options)
		out[path] = c
	}
	return out
}

// Enable opens the device c at path with a new salt, enables it on the
// broker and keeps it in the store. A path already kept is
// keel.KindAlreadyExists; a configuration that is not valid, or a file
// that cannot be opened, keel.KindInvalid naming the field. Nothing is
// kept when the device cannot be enabled, and nothing is enabled when it
// cannot be kept.
func (t *Table) Enable(ctx context.Context, path string, c DeviceConfig) error {
	if err := validate(path, c); err != nil {
		return fmt.Errorf("audit: enable %q: %w", path, err)
	}
	dev := keptDevice{DeviceConfig: c, Salt: GenerateSalt()}
	dev.Options = maps.Clone(c.Options)
	raw, err := json.Marshal(dev)
	if err != nil {
		return fmt.Errorf("audit: enable %q: %w", path, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.kept[path]; ok {
		return fmt.Errorf("audit: path already in use at %s: %w", path, keel.KindAlreadyExists)
	}
	if err := t.enable(path, dev); err != nil {
		return fmt.Errorf("audit: enable %q: %w", path, err)
	}
	err = t.store.Update(ctx, func(_ context.Context, tx storage.Tx) error {
		switch _, err := tx.Get(t.prefix + path); {
		case err == nil:
			return fmt.Errorf("path already in use at %s: %w", path, keel.KindAlreadyExists)
		case !errors.Is(err, storage.ErrNotFound):
			return err
		}
		return tx.Put(t.prefix+path, raw)
	})
	if err != nil {
		t.disable(path)
		return fmt.Errorf("audit: enable %q: %w", path, err)
	}
	t.kept[path] = dev
	return nil
}

// Disable disables the device at path and removes it from the store. A
// path with no device succeeds, as in Vault.
func (t *Table) Disable(ctx context.Context, path string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.store.Update(ctx, func(_ context.Context, tx storage.Tx) error { return tx.Delete(t.prefix + path) })
	if err != nil {
		return fmt.Errorf("audit: disable %q: %w", path, err)
	}
	delete(t.kept, path)
	t.disable(path)
	return nil
}

// Reopen reopens every file, as after a rotation (the example server
// calls it on SIGHUP).
func (t *Table) Reopen() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for path, f := range t.files {
		if err := f.Reopen(); err != nil {
			errs = append(errs, fmt.Errorf("audit: reopen %q: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// Close stops following the store, disables the table's devices on the
// broker and closes their files. The store keeps them.
func (t *Table) Close() error {
	t.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for path, f := range t.files {
		t.broker.Disable(path)
		errs = append(errs, f.Close())
	}
	clear(t.files)
	t.enabled.Store(0)
	return errors.Join(errs...)
}

// follow brings the enabled devices in line with those kept in the
// store: it enables those it does not have and disables those no longer
// kept, or kept anew (another salt) by another process.
func (t *Table) follow(ctx context.Context) error {
	kept := map[string]keptDevice{}
	err := t.store.View(ctx, func(_ context.Context, tx storage.Tx) error {
		clear(kept)
		return tx.Scan(t.prefix, storage.ScanOptions{}, func(key string, v []byte) error {
			var dev keptDevice
			if err := json.Unmarshal(v, &dev); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			kept[strings.TrimPrefix(key, t.prefix)] = dev
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("audit: read the devices: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for path, dev := range t.kept {
		if k, ok := kept[path]; !ok || !bytes.Equal(k.Salt, dev.Salt) {
			delete(t.kept, path)
			t.disable(path)
		}
	}
	for path, dev := range kept {
		if _, ok := t.kept[path]; ok {
			continue
		}
		t.kept[path] = dev
		if err := t.enable(path, dev); err != nil {
			t.log.Error("audit device not enabled", "path", path, "err", err)
		}
	}
	return nil
}

// validate checks a device's path and configuration.
func validate(path string, c DeviceConfig) error {
	var v keel.Validation
	if path == "" {
		v.Add("path", "is required")
	}
	if c.Type != "file" {
		v.Add("Type", "must be %q, the one device type there is; got %q", "file", c.Type)
	}
	for k, val := range c.Options {
		switch k {
		case "file_path":
			if val == "" || val == "stdout" || val == "discard" {
				v.Add(`Options["file_path"]`, "must be the path of a file (stdout and discard are not supported), got %q", val)
			}
		case "mode":
			if _, err := fileMode(val); err != nil {
				v.Add(`Options["mode"]`, "must be an octal file mode such as 0600, got %q", val)
			}
		default:
			v.Add(fmt.Sprintf("Options[%q]", k), "is not supported (only file_path and mode are)")
		}
	}
	if _, ok := c.Options["file_path"]; !ok {
		v.Add(`Options["file_path"]`, "is required")
	}
	return v.Err()
}

func fileMode(s string) (os.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err == nil && v > 0o777 {
		err = strconv.ErrRange
	}
	return os.FileMode(v), err
}

// enable opens dev's file and enables it on the broker under path.
// Callers hold t.mu.
func (t *Table) enable(path string, dev keptDevice) error {
	mode := os.FileMode(0o600)
	if m, ok := dev.Options["mode"]; ok {
		var err error
		if mode, err = fileMode(m); err != nil {
			return keel.Invalid(`Options["mode"]`, "must be an octal file mode such as 0600, got %q", m)
		}
	}
	f, err := OpenFile(dev.Options["file_path"], &FileOptions{Mode: mode, Clock: t.clock})
	if err != nil {
		return keel.Invalid(`Options["file_path"]`, "cannot be opened for writing: %v", err)
	}
	salt, err := NewSalt(dev.Salt)
	if err == nil {
		err = t.broker.Enable(path, f, salt)
	}
	if err != nil {
		f.Close()
		return err
	}
	t.files[path] = f
	t.enabled.Store(int32(len(t.files)))
	return nil
}

// disable removes path's device from the broker and closes its file.
// Callers hold t.mu.
func (t *Table) disable(path string) {
	f := t.files[path]
	if f == nil {
		return
	}
	t.broker.Disable(path)
	f.Close()
	delete(t.files, path)
	t.enabled.Store(int32(len(t.files)))
}
