package record

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nrikit/nrikit/record/recordpb"
)

// MaxLoadedRecords bounds the records [Load] keeps in memory.
const MaxLoadedRecords = 1 << 20

// Recording is a whole recording read into memory, for replay.
type Recording struct {
	// Files are the files read, oldest first.
	Files []string
	// Header is the first file's header.
	Header *recordpb.Header
	// Entries are the records of every file, in order.
	Entries []*Entry
	// Warnings say what was not read whole: a file cut short, records
	// the recorder dropped.
	Warnings []string
}

// Load reads the files of a recording, in the order given (each a
// rotated set's current file expands to the set, oldest first: see
// [Files]). A file cut short is read up to its last whole record, with a
// warning; a file that is not a recording fails.
func Load(paths ...string) (*Recording, error) {
	rec := &Recording{}
	for _, p := range paths {
		files, err := Files(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if err := rec.read(f); err != nil {
				return nil, err
			}
		}
	}
	return rec, nil
}

func (rec *Recording) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rec.Files = append(rec.Files, path)
	if rec.Header == nil {
		rec.Header = r.Header()
	} else if r.Header().GetFileIndex() == 0 {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s starts another recording (the recorder restarted): replayed after the one before it, its snapshot not", path))
	}
	for {
		e, err := r.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, ErrTruncated):
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s ends in the middle of a record (the recorder did not close it): read up to its last whole record", path))
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(rec.Entries) >= MaxLoadedRecords {
			return fmt.Errorf("%s: more than %d records: replay a part of the recording (its rotated files one by one)", path, MaxLoadedRecords)
		}
		if e.GetKind() == recordpb.Kind_DROPPED {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s: the recorder dropped %d record(s) before record %d (its queue was full)", path, e.GetDropped(), e.GetSeq()))
		}
		rec.Entries = append(rec.Entries, e)
	}
}
