package keel

// Pagination describes one page of a list that is paged by number, as
// HCP Terraform's meta.pagination shows it.
type Pagination struct {
	CurrentPage int
	PageSize    int
	PrevPage    *int // nil on the first page
	NextPage    *int // nil on the last page and past it
	TotalPages  int  // at least 1, also for an empty list
	TotalCount  int
}

// NewPagination returns the pagination of page number, of size items, of a
// list of total items. number and size must be at least 1.
func NewPagination(number, size, total int) Pagination {
	p := Pagination{CurrentPage: number, PageSize: size, TotalCount: total}
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
