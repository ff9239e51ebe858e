package tfe

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/internal/jsonbody"
	"github.com/keelhq/keel/examples/httpapi/internal/kindstatus"
)

// mediaType is the JSON:API media type of every request and response
// document.
const mediaType = "application/vnd.api+json"

// MaxDocument bounds a JSON request body (a policy upload is bounded by
// policy.MaxCodeSize instead): a program that bounds bodies before the
// adapter caps a reservation at it.
const MaxDocument = 1 << 20

// statusOf maps the error kinds HCP Terraform answers in its own way to
// their HTTP status: the one table of the adapter. The kinds every adapter
// answers alike (too large, unavailable, canceled, deadline) are in
// kindstatus.
var statusOf = map[keel.Kind]int{
	keel.KindNotFound:        http.StatusNotFound,
	keel.KindAlreadyExists:   http.StatusUnprocessableEntity, // HCP Terraform: "has already been taken"
	keel.KindInvalid:         http.StatusUnprocessableEntity,
	keel.KindConflict:        http.StatusConflict,
	keel.KindForbidden:       http.StatusForbidden,
	keel.KindUnauthenticated: http.StatusUnauthorized,
}

// errObject is one JSON:API error.
type errObject struct {
	Status string            `json:"status"`
	Title  string            `json:"title"`
	Detail string            `json:"detail,omitempty"`
	Source map[string]string `json:"source,omitempty"`
}

// writeJSON writes a JSON:API document with status.
func writeJSON(w http.ResponseWriter, status int, doc any) {
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(doc)
}

// writeData answers with err when it is not nil, else with status and the
// document {"data": data()}.
func (h *Handler) writeData(w http.ResponseWriter, r *http.Request, status int, err error, data func() any) {
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"data": data()})
}

// serve serves a request whose body is a one-resource document of type
// typ: read turns the resource into the operation's input, recording in v
// the problems of its form, and run runs the operation. A problem of the
// document or of its form, or the operation's error, is answered as an
// error document; else the result as doc renders it, with status.
func serve[In, Out any](h *Handler, w http.ResponseWriter, r *http.Request, typ string,
	read func(v *keel.Validation, res *reqResource) In, run func(In) (Out, error),
	status int, doc func(Out) map[string]any) {
	res, err := readDoc(w, r, typ)
	var in In
	if err == nil {
		var v keel.Validation
		in = read(&v, res)
		err = v.Err()
	}
	var out Out
	if err == nil {
		out, err = run(in)
	}
	h.writeData(w, r, status, err, func() any { return doc(out) })
}

// docs renders each element of list with doc.
func docs[T any](list []T, doc func(T) map[string]any) []any {
	out := make([]any, 0, len(list))
	for _, x := range list {
		out = append(out, doc(x))
	}
	return out
}

// writeList answers the documents of a list that is served on one page
// (data and meta.pagination), or err when it is not nil.
func (h *Handler) writeList(w http.ResponseWriter, r *http.Request, data []any, err error) {
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"data": data,
		"meta": map[string]any{"pagination": paginationMeta(newPagination(1, max(len(data), 1), len(data)))},
	})
}

// pageDoc is the document of one page pg of a list: data, links and
// meta.pagination.
func pageDoc(r *http.Request, data []any, pg pagination) map[string]any {
	return map[string]any{
		"data":  data,
		"links": pageLinks(r, pg),
		"meta":  map[string]any{"pagination": paginationMeta(pg)},
	}
}

// writeError writes the error document of err: one error per field
// problem, its source from the field (see source), else one error whose
// title is the kind's name.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	kind := keel.KindOf(err)
	status := kindstatus.Of(statusOf, kind)
	code := strconv.Itoa(status)
	var errs []errObject
	for _, fe := range keel.FieldErrors(err) {
		errs = append(errs, errObject{Status: code, Title: "invalid attribute", Detail: fe.Rule, Source: source(fe.Field)})
	}
	if len(errs) == 0 {
		e := errObject{Status: code, Title: kind.String()}
		switch status {
		case http.StatusNotFound:
			// The detail would tell what exists: "not found" only.
		case http.StatusInternalServerError:
			h.logger.ErrorContext(r.Context(), "tfe: request failed", "path", r.URL.Path, "err", err)
			e.Title = "internal server error"
		default:
			e.Detail = detail(err)
		}
		errs = append(errs, e)
	}
	writeJSON(w, status, map[string]any{"errors": errs})
}

// detail is the message of err without the names of the packages
// project and policy in front: keel's packages name themselves in every
// error ("project: …"), the wire shows keel's words only, as before they
// did.
func detail(err error) string {
	msg := err.Error()
	for {
		m := strings.TrimPrefix(strings.TrimPrefix(msg, "project: "), "policy: ")
		if m == msg {
			return msg
		}
		msg = m
	}
}

// place is where a field of an operation's input travels in a request.
type place uint8

const (
	attribute place = iota // /data/attributes/<name>
	toOne                  // /data/relationships/<name>/data: one resource identifier
	toMany                 // /data/relationships/<name>/data: resource identifiers
	parameter              // the query parameter <name>
	primary                // /data: the document's data is resource identifiers
)

// wire is where a field travels: its place, and its name there.
type wire struct {
	place place
	name  string
}

// wireOf is the one table from the Go names of the domain's inputs to
// their JSON:API names: the first segment of a keel.FieldError's field
// ("Enforce" of "Enforce[0].Mode"). The adapter also reads requests
// through it (attrString, relIDs, relID, param), so that each wire name is
// written here only. Go names shared by several inputs ("Name") travel
// alike in all of them. A name missing from the table is an attribute
// named in kebab case (see locate).
var wireOf = map[string]wire{
	// policy.CreateRequest and policy.UpdateRequest.
	"Name":             {attribute, "name"},
	"Description":      {attribute, "description"},
	"Kind":             {attribute, "kind"},
	"Query":            {attribute, "query"},
	"Enforce":          {attribute, "enforce"},
	"EnforcementLevel": {attribute, "enforcement-level"},
	"PolicySetIDs":     {toMany, "policy-sets"},
	// policy.CreateSetRequest and policy.UpdateSetRequest (a policy set's document); the
	// settings are attributes in kebab case.
	"PolicyIDs":             {toMany, "policies"},
	"WorkspaceIDs":          {toMany, "workspaces"},
	"ProjectIDs":            {toMany, "projects"},
	"WorkspaceExclusionIDs": {toMany, "workspace-exclusions"},
	// The ids of policy.Service.AddSetMembers and RemoveSetMembers: the
	// document's data is the array of identifiers.
	"IDs": {primary, ""},
	// The arguments of the project.Catalog's operations.
	"Email":     {attribute, "email"},
	"Access":    {attribute, "access"},
	"TeamID":    {toOne, "team"},
	"ProjectID": {toOne, "project"},
	// project.ListRequest and policy.ListRequest. The project list's
	// Query (q) and filters break no rule and are read by their names.
	"Sort":       {parameter, "sort"},
	"PageNumber": {parameter, "page[number]"},
	"PageSize":   {parameter, "page[size]"},
	"Search":     {parameter, "search[name]"},
	"FilterKind": {parameter, "filter[kind]"},
	// project.ListWorkspacesRequest.
	"WildcardName": {parameter, "search[wildcard-name]"},
	// The adapter's own parameter, which no input holds.
	"Include": {parameter, "include"},
}

// locate returns where the field named by the Go name head travels: its
// entry in wireOf, or else an attribute whose name is head in kebab case
// ("MaxCount" → "max-count"), JSON:API's convention for HCP Terraform's
// attributes.
func locate(head string) wire {
	if w, ok := wireOf[head]; ok {
		return w
	}
	return wire{attribute, kebab(head)}
}

// source is the JSON:API source of a keel.FieldError's field; nil for ""
// (the request as a whole). A field that starts with "/" is a JSON pointer
// already: the adapter names so the problems of a document's shape that no
// input field holds ("/data", "/data/type"). Any other field is a Go path
// ("Enforce[0].Mode", "PolicySetIDs[2]", "Sort"): its first segment is
// located in wireOf (locate), its indexes and sub-fields follow as pointer
// segments, sub-fields in kebab case:
//
//	"EnforcementLevel" → {"pointer": "/data/attributes/enforcement-level"}
//	"Enforce[0].Mode"  → {"pointer": "/data/attributes/enforce/0/mode"}
//	"PolicySetIDs[2]"  → {"pointer": "/data/relationships/policy-sets/data/2/id"}
//	"IDs[2]"           → {"pointer": "/data/2/id"}
//	"TeamID"           → {"pointer": "/data/relationships/team/data/id"}
//	"Sort"             → {"parameter": "sort"}
func source(field string) map[string]string {
	switch {
	case field == "":
		return nil
	case strings.HasPrefix(field, "/"):
		return map[string]string{"pointer": field}
	}
	head, rest := splitPath(field)
	w := locate(head)
	switch w.place {
	case parameter:
		return map[string]string{"parameter": w.name}
	case toOne:
		return map[string]string{"pointer": relPointer(head) + rest + "/id"}
	case toMany:
		if rest != "" {
			rest += "/id" // one element: its id
		}
		return map[string]string{"pointer": relPointer(head) + rest}
	case primary:
		if rest != "" {
			rest += "/id"
		}
		return map[string]string{"pointer": "/data" + rest}
	}
	return map[string]string{"pointer": "/data/attributes/" + w.name + rest}
}

// relPointer is the pointer of the data of the relationship of the Go
// name head: "/data/relationships/<name>/data".
func relPointer(head string) string {
	return "/data/relationships/" + locate(head).name + "/data"
}

// splitPath splits a Go path into its first name and the rest as JSON
// pointer segments: "Enforce[0].Mode" → "Enforce", "/0/mode".
func splitPath(field string) (head, rest string) {
	i := strings.IndexAny(field, "[.")
	if i < 0 {
		return field, ""
	}
	head = field[:i]
	var b strings.Builder
	for _, seg := range strings.FieldsFunc(field[i:], func(c rune) bool { return c == '[' || c == ']' || c == '.' }) {
		if k, err := strconv.Unquote(seg); err == nil {
			b.WriteString("/" + k) // a map key, as it is
			continue
		}
		b.WriteString("/" + kebab(seg))
	}
	return head, b.String()
}

// kebab writes a Go name in kebab case, lower case with a "-" before
// each word: a word starts at an upper-case letter that follows a
// lower-case letter or a digit, or that ends an initialism before a
// lower-case letter other than a plural "s" ("EnforcementLevel" →
// "enforcement-level", "TTLSeconds" → "ttl-seconds", "PolicySetIDs" →
// "policy-set-ids").
func kebab(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, c := range rs {
		if i > 0 && unicode.IsUpper(c) {
			prev, next := rs[i-1], rune(0)
			if i+1 < len(rs) {
				next = rs[i+1]
			}
			plural := next == 's' && (i+2 == len(rs) || !unicode.IsLower(rs[i+2]))
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && unicode.IsLower(next) && !plural {
				b.WriteByte('-')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// reqDoc is a request document whose data is one resource.
type reqDoc struct {
	Data *reqResource `json:"data"`
}

type reqResource struct {
	ID            string                     `json:"id"`
	Type          string                     `json:"type"`
	Attributes    map[string]json.RawMessage `json:"attributes"`
	Relationships map[string]struct {
		Data json.RawMessage `json:"data"`
	} `json:"relationships"`
}

// ref is a resource identifier.
type ref struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// readDoc decodes a one-resource document of type typ. A malformed body,
// or a wrong type, is keel.KindInvalid (422).
func readDoc(w http.ResponseWriter, r *http.Request, typ string) (*reqResource, error) {
	var doc reqDoc
	if err := decodeBody(w, r, &doc); err != nil {
		return nil, err
	}
	if doc.Data == nil {
		return nil, keel.Invalid("/data", "is required")
	}
	if doc.Data.Type != typ {
		return nil, keel.Invalid("/data/type", "must be %s", typ)
	}
	return doc.Data, nil
}

// decodeBody reads the JSON document of r's body into v: a body that is
// empty, malformed, larger than MaxDocument, or followed by anything but
// white space (a second document: {"data":…}{"data":…}) is refused.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	err := jsonbody.Decode(w, r, jsonbody.Options{Max: MaxDocument}, v)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jsonbody.ErrEmpty):
		return keel.Invalid("/data", "the body is empty")
	case errors.Is(err, jsonbody.ErrTrailing):
		return keel.Invalid("/data", "malformed JSON:API document: data after the document")
	case keel.KindOf(err) == keel.KindTooLarge:
		return err
	}
	return keel.Invalid("/data", "malformed JSON:API document: %v", err)
}

// attr returns the raw value of the attribute of the Go name field; nil
// when absent or null.
func (res *reqResource) attr(field string) json.RawMessage {
	raw := res.Attributes[locate(field).name]
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// attrString reads the string attribute of the Go name field: nil when
// absent or null; a value of another type is a problem recorded in v, on
// field.
func (res *reqResource) attrString(v *keel.Validation, field string) *string {
	raw := res.attr(field)
	if raw == nil {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		v.Add(field, "must be a string")
		return nil
	}
	return &s
}

// attrBool reads the boolean attribute of the Go name field: nil when
// absent or null; a value of another type is a problem recorded in v.
func (res *reqResource) attrBool(v *keel.Validation, field string) *bool {
	raw := res.attr(field)
	if raw == nil {
		return nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		v.Add(field, "must be a boolean")
		return nil
	}
	return &b
}

// attrStrings reads the attribute of the Go name field, an array of
// strings: nil when absent or null; a value of another type is a problem
// recorded in v.
func (res *reqResource) attrStrings(v *keel.Validation, field string) *[]string {
	raw := res.attr(field)
	if raw == nil {
		return nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		v.Add(field, "must be an array of strings")
		return nil
	}
	return &l
}

// attrInt reads the integer attribute of the Go name field: nil when
// absent or null; a value of another type is a problem recorded in v.
func (res *reqResource) attrInt(v *keel.Validation, field string) *int {
	raw := res.attr(field)
	if raw == nil {
		return nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		v.Add(field, "must be an integer")
		return nil
	}
	return &n
}

// relIDs reads the ids of the to-many relationship of the Go name field
// (a single identifier is taken as a list of one), whose elements must be
// of type typ; nil when absent or null.
func (res *reqResource) relIDs(v *keel.Validation, field, typ string) []string {
	rel, ok := res.Relationships[locate(field).name]
	if !ok || len(rel.Data) == 0 || string(rel.Data) == "null" {
		return nil
	}
	at := relPointer(field)
	var many []ref
	if err := json.Unmarshal(rel.Data, &many); err != nil {
		var one ref
		if err := json.Unmarshal(rel.Data, &one); err != nil {
			v.Add(at, "must be resource identifiers")
			return nil
		}
		many = []ref{one}
	}
	ids := make([]string, 0, len(many))
	for i, m := range many {
		if m.Type != typ {
			v.Add(at+"/"+strconv.Itoa(i)+"/type", "must be %s", typ)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// relID reads the id of the to-one relationship of the Go name field, of
// type typ; "" when absent or null (whether it is required is the
// domain's rule). More than one identifier is a problem recorded in v.
func (res *reqResource) relID(v *keel.Validation, field, typ string) string {
	ids := res.relIDs(v, field, typ)
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return ids[0]
	}
	v.Add(relPointer(field), "must be one resource identifier")
	return ""
}

// param returns the query parameter of the Go name field.
func param(r *http.Request, field string) string {
	return r.URL.Query().Get(locate(field).name)
}

// timestamp formats t as HCP Terraform does: UTC, milliseconds, "Z".
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// pageLinks returns the JSON:API pagination links of the page pg of a
// list, built on the request's URL.
func pageLinks(r *http.Request, pg pagination) map[string]any {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	at := func(n int) string {
		u := *r.URL
		q := u.Query()
		q.Set(locate("PageNumber").name, strconv.Itoa(n))
		q.Set(locate("PageSize").name, strconv.Itoa(pg.PageSize))
		u.RawQuery = q.Encode()
		return scheme + "://" + r.Host + u.RequestURI()
	}
	links := map[string]any{"self": at(pg.CurrentPage), "first": at(1), "last": at(pg.TotalPages), "prev": nil, "next": nil}
	if pg.PrevPage != nil {
		links["prev"] = at(*pg.PrevPage)
	}
	if pg.NextPage != nil {
		links["next"] = at(*pg.NextPage)
	}
	return links
}

// paginationMeta is meta.pagination of the page pg.
func paginationMeta(pg pagination) map[string]any {
	return map[string]any{
		"current-page": pg.CurrentPage, "page-size": pg.PageSize, "prev-page": pg.PrevPage, "next-page": pg.NextPage,
		"total-pages": pg.TotalPages, "total-count": pg.TotalCount,
	}
}

// nopLogger discards everything.
var nopLogger = slog.New(slog.DiscardHandler)
