// Package ldifparse parses the LDIF text (RFC 2849) of the dynamic roles
// of package ldapengine into the changes it describes, one record at a
// time with github.com/go-ldap/ldif, refusing what rendered LDIF must not
// do (read URLs, carry controls). Every error of Parse is of kind
// keel.KindInvalid for the field it is given. Everything here is safe for
// concurrent use.
package ldifparse

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-ldap/ldap/v3"
	"github.com/go-ldap/ldif"
	"github.com/keelhq/keel"
)

// MaxEntries is the most entries one LDIF text may hold.
const MaxEntries = 100

// The types of Change, those of LDIF change records (RFC 2849).
const (
	ChangeAdd    = "add"
	ChangeModify = "modify"
	ChangeDelete = "delete"
)

// The operations of a Modification.
const (
	ModAdd     = "add"
	ModDelete  = "delete"
	ModReplace = "replace"
)

// Change is one LDIF change record: add an entry with Attributes, apply
// Modifications to an entry, or delete an entry.
type Change struct {
	Type          string         // ChangeAdd, ChangeModify or ChangeDelete
	DN            string         // the entry
	Attributes    []Attribute    // ChangeAdd: the attributes of the new entry
	Modifications []Modification // ChangeModify: applied in order
}

// Attribute is an attribute type and its values.
type Attribute struct {
	Name   string
	Values []string
}

// Modification is one part of a modify change: Op is ModAdd, ModDelete
// or ModReplace.
type Modification struct {
	Op string
	Attribute
}

// DecodeField returns s decoded when it is standard base64 of UTF-8
// text, and s otherwise. LDIF text always holds ':', which base64 does not,
// so the two cannot be mistaken for each other.
func DecodeField(s string) string {
	if s == "" {
		return s
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !utf8.Valid(b) {
		return s
	}
	return string(b)
}

// ldifRecord is the text of one LDIF record: its raw lines and the
// number of its first line in the whole text.
type ldifRecord struct {
	start int
	lines []string
}

// Parse parses LDIF text (RFC 2849) into the changes it describes, in
// order. Records with changetype add, modify and delete are kept; a record
// without changetype (a content record) is an add. Errors are of kind
// keel.KindInvalid for field and name the entry (from 1) and the line where
// it starts. Values read from URLs (attr:< file://…) and controls are
// refused: rendered LDIF must not read the service's files or carry
// controls the parser would drop.
//
// Records are cut at blank lines and each is parsed alone with
// github.com/go-ldap/ldif, so that an error names its entry and line, and
// the changetype of one record cannot leak into the next (the parser keeps
// it across records).
func Parse(field, text string) ([]Change, error) {
	var recs []ldifRecord
	var cur *ldifRecord
	for i, ln := range strings.Split(text, "\n") {
		ln = strings.TrimRight(ln, "\r")
		if ln == "" {
			if cur != nil {
				recs = append(recs, *cur)
				cur = nil
			}
			continue
		}
		if cur == nil {
			cur = &ldifRecord{start: i + 1}
		}
		cur.lines = append(cur.lines, ln)
	}
	if cur != nil {
		recs = append(recs, *cur)
	}
	var out []Change
	entry := 0
	for ri, rec := range recs {
		logical, err := unfold(rec.lines)
		if err != "" {
			return nil, keel.Invalid(field, "LDIF entry %d (line %d): %s", entry+1, rec.start, err)
		}
		if len(logical) == 0 {
			continue // comments only
		}
		if strings.HasPrefix(logical[0], "version:") && ri > 0 {
			return nil, keel.Invalid(field, "LDIF entry %d (line %d): version must come first", entry+1, rec.start)
		}
		for _, l := range logical {
			name, rest, _ := strings.Cut(l, ":")
			if strings.HasPrefix(rest, "<") {
				return nil, keel.Invalid(field, "LDIF entry %d (line %d): values read from URLs (%s:<) are not allowed", entry+1, rec.start, name)
			}
			if strings.EqualFold(name, "control") {
				return nil, keel.Invalid(field, "LDIF entry %d (line %d): controls are not allowed", entry+1, rec.start)
			}
		}
		parsed, perr := ldif.Parse(strings.Join(rec.lines, "\n"))
		if perr != nil {
			msg := perr.Error()
			if pe, ok := perr.(*ldif.ParseError); ok {
				msg = pe.Message
			}
			return nil, keel.Invalid(field, "LDIF entry %d (line %d): %s", entry+1, rec.start, msg)
		}
		if strings.HasPrefix(logical[0], "version:") {
			logical = logical[1:]
		}
		for _, e := range parsed.Entries {
			entry++
			if entry > MaxEntries {
				return nil, keel.Invalid(field, "LDIF must hold at most %d entries", MaxEntries)
			}
			ch, why := toChange(e, logical)
			if why == "" {
				why = checkDN(ch.DN)
			}
			if why != "" {
				return nil, keel.Invalid(field, "LDIF entry %d (line %d): %s", entry, rec.start, why)
			}
			out = append(out, ch)
		}
	}
	if len(out) == 0 {
		return nil, keel.Invalid(field, "LDIF holds no entry")
	}
	return out, nil
}

// unfold joins continuation lines (those starting with a space) to the
// line they continue and drops comments. It returns why the lines are not
// LDIF, or "".
func unfold(lines []string) ([]string, string) {
	var out []string
	comment := false
	for i, l := range lines {
		switch {
		case l[0] == '#':
			comment = true
		case l[0] == ' ':
			if comment {
				continue
			}
			if i == 0 || len(out) == 0 {
				return nil, "continuation line without a line to continue"
			}
			out[len(out)-1] += l[1:]
		default:
			comment = false
			out = append(out, l)
		}
	}
	return out, ""
}

// toChange converts a parsed record. logical are the record's unfolded
// lines, which give the order of the attributes of an add (the parser
// keeps them in a map).
func toChange(e *ldif.Entry, logical []string) (Change, string) {
	order := map[string]int{}
	for i, l := range logical {
		name, _, _ := strings.Cut(l, ":")
		if _, ok := order[name]; !ok {
			order[name] = i
		}
	}
	sortAttrs := func(as []Attribute) []Attribute {
		slices.SortStableFunc(as, func(a, b Attribute) int { return order[a.Name] - order[b.Name] })
		return as
	}
	switch {
	case e.Add != nil:
		var as []Attribute
		for _, a := range e.Add.Attributes {
			if strings.EqualFold(a.Type, "changetype") {
				return Change{}, "add record without attributes"
			}
			as = append(as, Attribute{Name: a.Type, Values: slices.Clone(a.Vals)})
		}
		return Change{Type: ChangeAdd, DN: e.Add.DN, Attributes: sortAttrs(as)}, ""
	case e.Entry != nil:
		var as []Attribute
		for _, a := range e.Entry.Attributes {
			as = append(as, Attribute{Name: a.Name, Values: slices.Clone(a.Values)})
		}
		return Change{Type: ChangeAdd, DN: e.Entry.DN, Attributes: sortAttrs(as)}, ""
	case e.Modify != nil:
		ch := Change{Type: ChangeModify, DN: e.Modify.DN}
		for _, c := range e.Modify.Changes {
			var op string
			switch c.Operation {
			case ldap.AddAttribute:
				op = ModAdd
			case ldap.DeleteAttribute:
				op = ModDelete
			case ldap.ReplaceAttribute:
				op = ModReplace
			default:
				return Change{}, "unsupported modify operation"
			}
			ch.Modifications = append(ch.Modifications, Modification{Op: op,
				Attribute: Attribute{Name: c.Modification.Type, Values: slices.Clone(c.Modification.Vals)}})
		}
		if len(ch.Modifications) == 0 {
			return Change{}, "modify record without modifications"
		}
		return ch, ""
	case e.Del != nil:
		// The parser lets one attribute line through (it checks for more
		// than one): a delete record is its dn and changetype lines.
		if len(logical) > 2 {
			return Change{}, "no attributes allowed for changetype delete"
		}
		return Change{Type: ChangeDelete, DN: e.Del.DN}, ""
	}
	return Change{}, "empty record"
}

// checkDN returns why dn is not a DN an LDIF change may name, or "".
func checkDN(dn string) string {
	if strings.TrimSpace(dn) == "" {
		return "dn must not be empty"
	}
	if _, err := ldap.ParseDN(dn); err != nil {
		if len(dn) > 200 {
			dn = dn[:200] + "..."
		}
		return fmt.Sprintf("dn %q: %v", dn, err)
	}
	return ""
}
