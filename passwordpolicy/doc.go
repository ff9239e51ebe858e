// Package passwordpolicy implements Vault's password policies
// (sys/policies/password): named policies in HCL that say how long a
// generated password is and which characters it must hold, and the
// generation of passwords from them. The secrets engines of package
// ldapengine generate their passwords with them.
//
// # Basics
//
// A policy is written in Vault's HCL format:
//
//	length = 20
//	rule "charset" {
//	  charset = "abcdefghijklmnopqrstuvwxyz"
//	  min-chars = 1
//	}
//	rule "charset" {
//	  charset = "0123456789"
//	  min-chars = 2
//	}
//
// Parse checks and parses one into a Policy, whose Generate returns a
// password that meets it (Policy.Meets). New makes the Policies of a store,
// which keeps policies by name: Put, Get, Delete, List, and Generate from a
// stored policy, each checking the caller's right. GenerateUnchecked is
// Generate without the rights check, for engines that generate a password
// on their own account. GenerateAlphanumeric generates a password without
// a policy. Passwords come from crypto/rand.
//
// # Errors
//
// Errors wrap the kinds of package keel: keel.KindInvalid, with the field
// "Name", "Policy" or "Store" (see keel.FieldErrors), for a broken name or
// policy, or a store New cannot use (nil, or a view claimed for another
// component, see storage.CheckClaim); keel.KindNotFound for a missing
// policy; keel.KindForbidden from the Authorizer; keel.KindInternal for a
// failing random source or a stored record that cannot be read.
//
// # Rights
//
// Each operation of Policies asks the Authorizer of Options for the
// capability on "sys/policies/password/NAME" (update for Put, read for
// Get, delete for Delete), list on "sys/policies/password/" and read on
// "sys/policies/password/NAME/generate".
//
// # Concurrency
//
// Policies is safe for concurrent use; so are Parse, GenerateAlphanumeric
// and the methods of a Policy nobody changes.
//
// # Caveats
//
// Following Vault: a policy's length is 4 to 100, it needs at least one
// charset rule, the only rule type is "charset" (with min-chars or
// min_chars), and the sum of min-chars may not exceed the length. Lengths
// count characters (runes), not bytes. Put replaces a policy as a whole;
// Delete of a missing policy succeeds. Engines read and parse a policy at
// each generation, so a change applies to the next password.
package passwordpolicy
