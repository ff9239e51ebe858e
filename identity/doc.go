// Package identity keeps identity groups: named sets of member entities
// and member groups, with metadata and policies, addressable by id and by
// name, as Vault's identity/group endpoints do, over a storage.Store.
//
// # Basics
//
// New returns Groups that keep their keys in the store it is given, scoped
// by the caller; a program gets them from mount.Table.Groups, which keeps
// them under "identity/" of its store. Writes take a GroupRequest, whose
// nil fields leave the stored values as they are, and return the group's
// id and name:
//
//	groups, err := identity.New(store, &identity.Options{Authorizer: keel.AllowAll{}})
//	eng, err := groups.CreateOrUpdateByName(ctx, "Engineering", identity.GroupRequest{Policies: &[]string{"dev", "DEV", "ci"}})
//	ops, err := groups.CreateOrUpdate(ctx, "", identity.GroupRequest{Name: new("ops"), MemberGroupIDs: &[]string{eng.ID}})
//	g, err := groups.GetByName(ctx, "engineering") // g.ParentGroupIDs == []string{ops.ID}
//	page, _ := groups.ListNames(ctx, keel.ListRequest{}) // keel.All(ctx, 0, groups.ListNames) walks every page
//
// The writes are those of Vault's three write endpoints, and each changes
// only the fields its GroupRequest sets: CreateOrUpdate (POST
// identity/group: by id, else by name, else creates a group named
// "entity-<UUID>"), Update (by id only) and CreateOrUpdateByName (creates
// when absent). The package assigns every group's id. Get, GetByName,
// Delete, DeleteByName, List (the ids) and ListNames complete them; the
// two lists are paged (keel.ListRequest, keel.Page), 1,000
// items a page unless asked otherwise. A field set replaces the stored
// one: an empty MemberGroupIDs removes every member group.
//
// Rules, each refused with keel.KindInvalid on the field of GroupRequest
// it concerns, named by its Go path (see keel.FieldError; an adapter maps it
// to its wire name):
//
//   - Type: "internal" (the default) or "external"; it cannot change
//     once the group exists. "" is taken as nil.
//   - Name: unique among groups ignoring case (Unicode lower case,
//     strings.ToLower, as Vault's index), stored with its case; non-empty
//     valid UTF-8 without ASCII control characters; its length is bounded
//     only by the store's key limit. "" is taken as nil. The name
//     argument of CreateOrUpdateByName is checked as Name.
//   - an external group takes no member ids (MemberGroupIDs,
//     MemberEntityIDs); an empty list is accepted.
//   - MemberGroupIDs: each must exist, a group cannot contain itself,
//     and no write may create a cycle in the membership graph. Ids are
//     de-duplicated; the empty id is refused, on its element
//     ("MemberGroupIDs[2]"), as in MemberEntityIDs.
//     On a store that bounds its transactions a write lists at most
//     Groups.Limits().MaxMemberGroups groups: 30 on etcdstore's default
//     limits (128 operations and 128 reads), none on memstore and
//     boltstore. A longer list is refused with the limit in the message
//     before anything is written: a membership change is all or nothing.
//   - MemberEntityIDs: de-duplicated and sorted; checked by
//     Options.Entities when the program provides one, accepted as given
//     otherwise.
//   - Policies: trimmed, lower-cased, de-duplicated and sorted, empty
//     names dropped (Vault's handling); "root" is refused.
//   - Metadata: at most 64 pairs, keys of 1 to 128 characters, values of
//     at most 512 (characters are runes).
//
// Every rule that fails is reported at once, in one keel.ValidationError.
//
// Membership. A group's ParentGroupIDs are the groups that list it among
// their MemberGroupIDs, always: a write that adds or removes member groups,
// and a delete, change both sides in one transaction. Deleting a group
// removes it from its members' parents and from its parents' member lists
// (Vault has left stale parents behind; keel does not). Member and parent
// ids read back sorted.
//
// Times and index. CreationTime and LastUpdateTime come from
// Options.Clock. ModifyIndex is 1 after creation and grows by one with
// every write to the group, even one that changes nothing (as Vault's), and
// when the delete of a member group changes its member list. A group's
// ParentGroupIDs are derived from its parents' member lists: a change of
// them does not touch the group's index.
//
// Not shown by the specification, done as Vault does: the alias object is
// not kept (an adapter renders it empty, as Vault does for a group without
// an alias); a write that updates an existing group returns its id and
// name and Result.Created false (the service's document shows id and
// name for updates too, and the adapter answers them with 200; Vault
// itself answers 204 with no body); CreateOrUpdate with an id that names
// no group, and Update of a missing id, fail with keel.KindNotFound
// (Vault answers 400 "invalid group ID"); deleting a missing group is
// keel.KindNotFound here and 204 in Vault's API; the name argument of
// CreateOrUpdateByName replaces the stored name, case included, and wins
// over GroupRequest.Name.
//
// # Errors
//
// Every error's message starts with "identity: ", and every error wraps a
// keel kind; act on the kind (errors.Is, keel.KindOf), not on the message:
//
//   - keel.KindInvalid: a broken rule above; keel.FieldErrors names the
//     field of each.
//   - keel.KindNotFound: a read, delete or update by id of a group that
//     does not exist.
//   - keel.KindForbidden: the Authorizer refused (see Rights).
//   - keel.KindTooLarge: a key or value beyond the store's limits, or a
//     transaction beyond them. Deleting a group is one transaction that
//     writes two keys per member group, three per parent group (the two
//     edge keys and the parent's record) and two more: on etcd's default
//     limits (128 writes) a group of Limits.MaxMemberGroups (30) member
//     groups can be deleted while it has at most 22 parent groups, a
//     group without member groups while it has at most 42. A larger
//     delete is refused, before anything is written, with the counts and
//     the limit in the message: remove the group from some parents first
//     (a group listed as a member by many groups). Adding member groups
//     to a group reads, to detect cycles, the parent groups of each of its
//     ancestors in the write's transaction, with the reads the rest of
//     the write leaves (one per member group it has or gains): on etcd a
//     group without member groups, in 61 parent groups (without parents
//     of their own) or at the bottom of a chain 61 deep, gains one; with
//     more ancestors the write is refused up front, naming the limit
//     (remove the group or its ancestors from some parents). Member
//     entities are kept in the group's record and cost no transaction
//     room: a group of 500 member entities is written and deleted on etcd
//     alike.
//   - an EntityDirectory's error with its kind, or keel.KindUnavailable
//     when it has none.
//   - the store's kinds (keel.KindUnavailable for a closed store, and so
//     on), keel.KindInternal for a corrupt record, and keel.KindCanceled
//     or KindDeadlineExceeded from ctx.
//
// A write or delete that fails leaves the store as it was.
//
// # Rights
//
// Each operation asks Options.Authorizer (nil: everything is allowed) for
// one capability on the resource of the endpoint it serves, as Vault's
// ACLs apply to the request path:
//
//	CreateOrUpdate        create or update  identity/group
//	Update                update            identity/group/id/<id>
//	CreateOrUpdateByName  create or update  identity/group/name/<name>
//	Get                   read              identity/group/id/<id>
//	GetByName             read              identity/group/name/<name>
//	Delete                delete            identity/group/id/<id>
//	DeleteByName          delete            identity/group/name/<name>
//	List                  list              identity/group/id/
//	ListNames             list              identity/group/name/
//
// Create or update is chosen inside the transaction that writes, as kv's
// Write does: a caller that may only create can never change a group that
// someone created meanwhile. Update always asks for update, even for a
// missing id, so that a caller without the right learns nothing. The
// rights are checked before the request's own faults are reported.
//
// Names are case-insensitive, and so are the rights on them: a right on
// identity/group/name/Admins holds for every spelling of the name, and a
// deny on it is not passed by asking for ADMINS. The resources carry the
// name folded (lower-cased) as the name index folds it, and New asks for
// them the view keel.Fold(Options.Authorizer, "identity/group/name/",
// fold), in which the Authorizer folds its rules beyond that prefix alike:
// keel.RuleAuthorizer does (keel.Folder), for globs too
// ("identity/group/name/Adm*", "identity/group/+/Admins"), without a
// wrapper the program could forget. An Authorizer of one's own that is not
// a keel.Folder sees only the folded names: its rules on group names must
// be folded (strings.ToLower) to apply.
//
// Rights follow the endpoint, not the group: a rule on
// identity/group/name/admins does not cover the same group reached
// through identity/group/id/<id> or identity/group. Grant or deny on all
// of them ("identity/group*").
//
// Write access is membership: whoever may write a group may add any
// entity or group to it, including their own, and so take its policies. A
// member of a weak group with update on identity/group/* can add itself
// to a stronger one. Grant write access to identity groups with care;
// read and list rights cannot change membership.
//
// # Concurrency
//
// Groups are safe for concurrent use; they keep no state besides their
// configuration. Every write is one transaction that reads what it decides
// on through the transaction, including the walk over the ancestors that
// detects cycles, so two concurrent writes can never create a cycle
// together, nor leave a parent link without its member link. Closures
// given to the store may run more than once: ids, generated names and the
// time are chosen before the transaction. The EntityDirectory is called
// before the transaction; the Authorizer inside it.
//
// # Caveats
//
// Member groups are kept as edge keys, two per membership, so adding one
// member writes a constant number of keys; but a write gives the whole
// member list, which is compared with the stored one: O(n) reads for n
// members (no quadratic work). The cycle check walks the ancestors of the
// group that gains members. Member entity ids are kept in the group's
// record, rewritten on each write.
//
// List reads only the ids of its page, and ListNames only the name index
// entries of its page: it lists names in the order of their folded form,
// the index's own, so walking n names costs n reads whatever the page.
//
// The Authorizer is called inside the write transaction, with the
// transaction's ctx: it must not start a transaction of the same store
// with that ctx (storage.ErrNestedTx), and a slow Authorizer holds up the
// store's writers.
//
// An entity that the EntityDirectory reports as existing may be deleted
// before the write commits; and deleting an entity does not remove it from
// groups. Entities are not this package's business.
package identity
