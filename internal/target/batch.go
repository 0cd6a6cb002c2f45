// batch.go applies several consecutive source transactions as one target
// transaction (a batch), under the GTID of the last: the target shows the
// state after the last one, a state the source had. Batchable says which
// transactions may share one.
package target

import (
	"bytes"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// Batchable reports whether txn may share a target transaction with its
// neighbours: a MariaDB transaction on transactional tables only that ends
// in an XID, of row events or of statements (each statement runs under its
// own session state inside the batch, as it would alone), none of which
// searches a full-text index.
func Batchable(txn *binlog.Transaction) bool {
	if txn.Flavor != binlog.FlavorMariaDB || txn.Has(binlog.FlagStandalone) || txn.Has(binlog.FlagDDL) ||
		!txn.Has(binlog.FlagTransactional|binlog.FlagAllowParallel) || len(txn.Events) == 0 {
		return false
	}
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.QueryEvent:
			if mayMatchFulltext(e.Query) {
				return false
			}
		case *replication.TableMapEvent, *replication.RowsEvent, *replication.MariadbAnnotateRowsEvent,
			*replication.XIDEvent, *replication.IntVarEvent:
		case *replication.GenericEvent:
			if t := ev.Header.EventType; t != replication.RAND_EVENT && t != replication.USER_VAR_EVENT {
				return false
			}
		default:
			return false
		}
	}
	return shapeOf(txn) == shapeTransaction
}

// mayMatchFulltext reports whether a statement may search a full-text
// index (MATCH ... AGAINST). InnoDB shows a full-text index the changes of
// committed transactions only, so such a statement batched behind earlier
// source transactions would not see their rows, and would silently find
// what the source did not: it starts a target transaction of its own. The
// word is looked for anywhere in the text; a false match costs one batch.
func mayMatchFulltext(query []byte) bool {
	return containsFold(query, "against")
}

// containsFold reports whether text holds word, of ASCII letters, in any
// case, anywhere.
func containsFold(text []byte, word string) bool {
	lowerC, upperC := word[0]|0x20, word[0]&^0x20
	// The next place word's first letter starts, in lower and in upper
	// case, found by IndexByte (far faster than a loop over bytes), each
	// searched again only once passed: -1 when there is none.
	next := func(c byte, from int) int {
		if j := bytes.IndexByte(text[from:], c); j >= 0 {
			return from + j
		}
		return -1
	}
	lower, upper := next(lowerC, 0), next(upperC, 0)
	for {
		i := lower
		if i < 0 || upper >= 0 && upper < i {
			i = upper
		}
		if i < 0 || i+len(word) > len(text) {
			return false
		}
		if bytes.EqualFold(text[i:i+len(word)], []byte(word)) {
			return true
		}
		if i == lower {
			lower = next(lowerC, i+1)
		} else {
			upper = next(upperC, i+1)
		}
	}
}

// batchScript applies Batchable transactions as one target transaction,
// under the GTID of the last: the target shows the state after the last, a
// state the source had. Row events of consecutive transactions share BINLOG
// statements; a transaction of statements runs them under their session
// state, as it would alone.
//
// With ahead (ExecuteAhead), the first ahead[i] events of each transaction
// (whole statements; all or none of a transaction of statements) run
// first, and the rest after aheadMark, each part in source order.
func (s *Session) batchScript(txns []*binlog.Transaction, ahead []int, checkpoint string) (body, tail []string, err error) {
	last := txns[len(txns)-1]
	if s.opts.KeepGTID {
		body = append(body, gtidStatements(last.MariaDB)...)
	}
	body = append(body, beginStatement, checkpoint)
	blocksFrom, statements := len(body), false
	mode, known := s.sqlMode()
	rows := s.rowBatcher()
	add := func(txn *binlog.Transaction, events []binlog.Event) error {
		if !Batchable(txn) {
			return fmt.Errorf("%s cannot be applied in a batch", txn)
		}
		if HasStatements(txn) {
			if len(events) != len(txn.Events) {
				return fmt.Errorf("a gapless bug: %s holds statements, and only some of its events were to run ahead", txn)
			}
			statements = true
			body = rows.flush(body)
			var own []string // its COMMIT: the batch has one of its own
			body, _, err = s.events(txn, body, &own, true, func() {})
			return err
		}
		for _, ev := range events {
			switch e := ev.Data.(type) {
			case *replication.TableMapEvent:
				body = rows.addTableMap(body, ev.Raw)
			case *replication.RowsEvent:
				body = rows.addRows(body, ev.Raw, e.Flags&replication.RowsEventStmtEndFlag != 0)
			}
		}
		return nil
	}
	for i, txn := range txns {
		events := txn.Events
		if ahead != nil {
			events = events[:ahead[i]]
		}
		if len(events) == 0 && ahead != nil {
			continue // all of it runs after the mark
		}
		if err := add(txn, events); err != nil {
			return nil, nil, err
		}
	}
	if ahead != nil {
		body = rows.flush(body)
		body = append(body, aheadMark)
		for i, txn := range txns {
			if ahead[i] == len(txn.Events) {
				continue
			}
			if err := add(txn, txn.Events[ahead[i]:]); err != nil {
				return nil, nil, err
			}
		}
	}
	body = rows.flush(body)
	if statements {
		// Row events alone make BINLOG statements, which no block holds.
		body = append(body[:blocksFrom], s.inBlocks(body[blocksFrom:], mode, known)...)
	}
	return body, []string{"COMMIT"}, nil
}
