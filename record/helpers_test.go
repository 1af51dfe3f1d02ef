package record

import (
	"compress/gzip"
	"encoding/binary"
	"io"
	"time"
)

func newGzip(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) }

func uvarint(n uint64) []byte { return binary.AppendUvarint(nil, n) }

var fixedTime = time.Unix(1700000000, 0)
