package tfe

import (
	"math"
	"net/http"
	"strconv"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
)

// pagination describes one page of a list that is paged by number, as
// HCP Terraform's meta.pagination shows it. keel's lists are paged by
// cursor (keel.ListRequest, keel.CountedPage); the adapter renders a page
// number as the request's Offset, and the page's Matching as total-count.
type pagination struct {
	CurrentPage int
	PageSize    int
	PrevPage    *int // nil on the first page
	NextPage    *int // nil on the last page and past it
	TotalPages  int  // at least 1, also for an empty list
	TotalCount  int
}

// newPagination returns the pagination of page number, of size items, of
// a list of total items. number and size must be at least 1.
func newPagination(number, size, total int) pagination {
	p := pagination{CurrentPage: number, PageSize: size, TotalCount: total}
	p.TotalPages = max((total+size-1)/size, 1)
	if number > 1 {
		prev := min(number-1, p.TotalPages)
		p.PrevPage = &prev
	}
	if number < p.TotalPages {
		next := number + 1
		p.NextPage = &next
	}
	return p
}

// maxPageNumber is the largest page[number] read: far beyond any list
// (2^31-1 pages of the largest page size), and small enough that the
// offset of its first element, (number-1) * page size, never overflows an
// int.
const maxPageNumber = math.MaxInt32

// maxListPage is the largest page[number] answered: a larger one is 422
// on page[number] ("must be at most 16777216"), as keel answered when its
// lists were paged by number.
const maxListPage = 1 << 24

// numbered is the page a request asks for by number: page[number] (from
// 1) and page[size] (project.DefaultPageSize when not given, cut to
// project.MaxPageSize, as HCP Terraform cuts it). The packages project and
// policy share those sizes.
type numbered struct{ number, size int }

// pageQuery reads page[number] and page[size]. Each is a whole number from
// 1 (page[number] at most maxPageNumber, page[size] at most math.MaxInt32;
// a size beyond project.MaxPageSize is cut to it); any other value, a
// negative one or one beyond those included, is a problem naming its
// parameter.
func pageQuery(r *http.Request) (numbered, error) {
	var v keel.Validation
	parse := func(field string) int {
		s := param(r, field)
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 || n > maxPageNumber {
			v.Add(field, "must be an integer from 1 to %d", maxPageNumber)
			return 0
		}
		return int(n)
	}
	n := numbered{number: max(parse("PageNumber"), 1), size: parse("PageSize")}
	if n.size == 0 {
		n.size = project.DefaultPageSize
	}
	n.size = min(n.size, project.MaxPageSize)
	return n, v.Err()
}

// check refuses a page number beyond maxListPage.
func (n numbered) check() error {
	if n.number > maxListPage {
		return keel.Invalid("PageNumber", "must be at most %d", maxListPage)
	}
	return nil
}

// list is the keel.ListRequest of the page: its size as the Limit; the
// Offset is offset().
func (n numbered) list() keel.ListRequest { return keel.ListRequest{Limit: n.size} }

// offset is the position of the page's first item in the list.
func (n numbered) offset() int { return (n.number - 1) * n.size }

// of is the pagination of the page in a list of matching items.
func (n numbered) of(matching int) pagination { return newPagination(n.number, n.size, matching) }
