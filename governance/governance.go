package governance

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
)

// The prefixes of the family's keys in the store given to Open (see the
// package documentation).
const (
	catalogPrefix = "project/"
	policyPrefix  = "policy/"
)

// Options configure Open. A nil *Options is refused, as its Authorizer is
// required; every other zero field means the default.
type Options struct {
	// Authorizer decides the rights of callers, in the catalog and in
	// the policies. It is required: a program that does its own access
	// control says so with keel.AllowAll{}.
	Authorizer keel.Authorizer
	// Clock gives creation and update times. Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Logger receives the deletions Open could not finish. Nil: discard.
	Logger *slog.Logger
	// Observer is told of the operations of the catalog and of the
	// policies (see keel.Observer). Nil: none.
	Observer keel.Observer
}

// Service is the governance family opened over one store: the catalog of
// organizations and the policies, joined. Create one with Open and Close
// it before closing the store. It is safe for concurrent use.
type Service struct {
	catalog  *project.Catalog
	policies *policy.Service
}

// Open builds the catalog over the view "project/" of store and the
// policies over its view "policy/", registers the policies with the
// catalog (deleting an organization deletes its policies and policy sets),
// and finishes the deletions an error or a crash stopped midway
// (project.Catalog.FinishDeletions).
//
// store is the program's whole store, or a view of it; Open writes nothing
// outside the two views. A deletion that cannot be finished is logged
// through Options.Logger and left pending: it does not fail Open. Open
// fails with an error of kind keel.KindInvalid, naming the field, when
// store or opts.Authorizer is nil, and then writes nothing.
func Open(ctx context.Context, store storage.Store, opts *Options) (*Service, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := storage.CheckRoot(store, o.Authorizer, []storage.Part{
		{Prefix: catalogPrefix, Kind: project.ClaimKind},
		{Prefix: policyPrefix, Kind: policy.ClaimKind},
	}, nil); err != nil {
		return nil, fmt.Errorf("governance: open: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	catalog, err := project.New(storage.Sub(store, catalogPrefix), &project.Options{Authorizer: o.Authorizer, Clock: o.Clock, Observer: o.Observer})
	if err != nil {
		return nil, fmt.Errorf("governance: open: %w", err)
	}
	policies, err := policy.New(storage.Sub(store, policyPrefix), &policy.Options{
		Authorizer: o.Authorizer, Clock: o.Clock, Organizations: catalog, Observer: o.Observer,
	})
	if err != nil {
		return nil, fmt.Errorf("governance: open: %w", err)
	}
	// Every service that keeps data per organization is registered
	// before this: finishing a deletion needs them all.
	if err := catalog.FinishDeletions(ctx); err != nil {
		o.Logger.Warn("governance: organization deletions left pending", "error", err)
	}
	return &Service{catalog: catalog, policies: policies}, nil
}

// Catalog returns the organization catalog: organizations, projects,
// workspaces, teams and team access.
func (s *Service) Catalog() *project.Catalog { return s.catalog }

// Policies returns the policies and policy sets, registered with Catalog.
func (s *Service) Policies() *policy.Service { return s.policies }

// Close stops what Open started and returns the errors of stopping it.
// Open starts no worker today, so Close stops nothing and returns nil:
// the Catalog and the Policies keep answering after it. A program calls
// it before it closes the store all the same, so that a worker the family
// gains later is stopped without a change to the program. Close does not
// close the store; it may be called more than once.
func (s *Service) Close() error { return nil }
