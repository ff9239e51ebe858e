package tfe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
)

// mediaType is the JSON:API media type of every request and response
// document.
const mediaType = "application/vnd.api+json"

// maxDocument bounds a JSON request body.
const maxDocument = 1 << 20

// statusOf maps each error kind to its HTTP status: the one table of the
// adapter.
var statusOf = map[keel.Kind]int{
	keel.KindNotFound:         http.StatusNotFound,
	keel.KindAlreadyExists:    http.StatusUnprocessableEntity, // HCP Terraform: "has already been taken"
	keel.KindInvalid:          http.StatusUnprocessableEntity,
	keel.KindConflict:         http.StatusConflict,
	keel.KindForbidden:        http.StatusForbidden,
	keel.KindUnauthenticated:  http.StatusUnauthorized,
	keel.KindTooLarge:         http.StatusRequestEntityTooLarge,
	keel.KindUnavailable:      http.StatusServiceUnavailable,
	keel.KindCanceled:         http.StatusServiceUnavailable,
	keel.KindDeadlineExceeded: http.StatusGatewayTimeout,
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

// writeError writes the error document of err: one error per field problem,
// writeData answers with err when it is not nil, else with status and the
// document {"data": data()}.
func (h *Handler) writeData(w http.ResponseWriter, r *http.Request, status int, err error, data func() any) {
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"data": data()})
}

// else one error whose title is the kind's name.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	kind := keel.KindOf(err)
	status, ok := statusOf[kind]
	if !ok {
		status = http.StatusInternalServerError
	}
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
			e.Detail = err.Error()
		}
		errs = append(errs, e)
	}
	writeJSON(w, status, map[string]any{"errors": errs})
}

// source is the JSON:API source of a field: a pointer for document fields
// ("data.attributes.name" → "/data/attributes/name"), a parameter for query
// parameters.
func source(field string) map[string]string {
	if field == "data" || strings.HasPrefix(field, "data.") {
		return map[string]string{"pointer": "/" + strings.ReplaceAll(field, ".", "/")}
	}
	if field == "" {
		return nil
	}
	return map[string]string{"parameter": field}
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
		return nil, keel.Invalid("data", "is required")
	}
	if doc.Data.Type != typ {
		return nil, keel.Invalid("data.type", "must be %s", typ)
	}
	return doc.Data, nil
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxDocument)
	if err := json.NewDecoder(body).Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("document larger than %d bytes: %w", maxDocument, keel.ErrTooLarge)
		}
		if errors.Is(err, io.EOF) {
			return keel.Invalid("data", "the body is empty")
		}
		return keel.Invalid("data", "malformed JSON:API document: %v", err)
	}
	return nil
}

// attrString reads a string attribute: nil when absent or null; a value of
// another type is a problem recorded in v.
func (res *reqResource) attrString(v *keel.Validation, name string) *string {
	raw, ok := res.Attributes[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		v.Add("data.attributes."+name, "must be a string")
		return nil
	}
	return &s
}

// relIDs reads the ids of a to-many (or to-one) relationship whose
// elements must be of type typ.
func (res *reqResource) relIDs(v *keel.Validation, name, typ string) []string {
	rel, ok := res.Relationships[name]
	if !ok || len(rel.Data) == 0 || string(rel.Data) == "null" {
		return nil
	}
	field := "data.relationships." + name + ".data"
	var many []ref
	if err := json.Unmarshal(rel.Data, &many); err != nil {
		var one ref
		if err := json.Unmarshal(rel.Data, &one); err != nil {
			v.Add(field, "must be resource identifiers")
			return nil
		}
		many = []ref{one}
	}
	ids := make([]string, 0, len(many))
	for i, m := range many {
		if m.Type != typ {
			v.Add(fmt.Sprintf("%s.%d.type", field, i), "must be %s", typ)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// timestamp formats t as HCP Terraform does: UTC, milliseconds, "Z".
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// pageQuery reads page[number] and page[size]; 0 means not given.
func pageQuery(r *http.Request) (number, size int, err error) {
	var v keel.Validation
	q := r.URL.Query()
	parse := func(name string) int {
		s := q.Get(name)
		if s == "" {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			v.Add(name, "must be a positive integer")
		}
		return n
	}
	number, size = parse("page[number]"), parse("page[size]")
	return number, size, v.Err()
}

// pageLinks returns the JSON:API pagination links of the page pg of a
// list, built on the request's URL.
func pageLinks(r *http.Request, pg keel.Pagination) map[string]any {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	at := func(n int) string {
		u := *r.URL
		q := u.Query()
		q.Set("page[number]", strconv.Itoa(n))
		q.Set("page[size]", strconv.Itoa(pg.PageSize))
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
func paginationMeta(pg keel.Pagination) map[string]any {
	return map[string]any{
		"current-page": pg.CurrentPage, "page-size": pg.PageSize, "prev-page": pg.PrevPage, "next-page": pg.NextPage,
		"total-pages": pg.TotalPages, "total-count": pg.TotalCount,
	}
}

// nopLogger discards everything.
var nopLogger = slog.New(slog.DiscardHandler)
