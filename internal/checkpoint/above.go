package checkpoint

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gapless/internal/gtid"
)

// encodeAbove writes the above column: the GTIDs sorted, and each run of
// consecutive sequence numbers of one domain and server as one
// "domain-server-first..last" (a batch of 1024 is one short entry, and
// the column, a TEXT, holds any window).
func encodeAbove(above []gtid.MariaDBGTID) string {
	sorted := slices.Clone(above)
	slices.SortFunc(sorted, func(a, b gtid.MariaDBGTID) int {
		return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Server, b.Server), cmp.Compare(a.Seq, b.Seq))
	})
	sorted = slices.Compact(sorted)
	var b strings.Builder
	for i := 0; i < len(sorted); {
		first := sorted[i]
		j := i + 1
		for j < len(sorted) && sorted[j].Domain == first.Domain && sorted[j].Server == first.Server && sorted[j].Seq == sorted[j-1].Seq+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(first.String())
		if last := sorted[j-1]; j-1 > i {
			b.WriteString("..")
			b.WriteString(strconv.FormatUint(last.Seq, 10))
		}
		i = j
	}
	return b.String()
}

// maxRun bounds one run of the above column as read.
const maxRun = 1 << 20

// decodeAbove reads the above column, as encodeAbove writes it or as one
// GTID per entry.
func decodeAbove(above string) ([]gtid.MariaDBGTID, error) {
	var out []gtid.MariaDBGTID
	for entry := range strings.SplitSeq(above, ",") {
		if entry == "" {
			continue
		}
		head, lastText, isRun := strings.Cut(entry, "..")
		g, err := gtid.ParseMariaDBGTID(head)
		if err != nil {
			return nil, err
		}
		last := g.Seq
		if isRun {
			// (A run is at most the window and a batch; the bound keeps a
			// damaged row from asking for a run of billions.)
			if last, err = strconv.ParseUint(lastText, 10, 64); err != nil || last < g.Seq || last-g.Seq >= maxRun {
				return nil, fmt.Errorf("%q: not a run of sequence numbers", entry)
			}
		}
		for seq := g.Seq; ; seq++ {
			out = append(out, gtid.MariaDBGTID{Domain: g.Domain, Server: g.Server, Seq: seq})
			if seq == last {
				break
			}
		}
	}
	return out, nil
}
