package signature

import (
	"bytes"
	"context"
	"testing"
)

// TestNotCheckedEntriesBounded: a card's "signatures" array may hold half a
// million entries within a 1 MiB body (",0" each). The ones past
// Limits.Signatures are one not-checked Result together, not one each: a
// Result per entry allocated about 300 MiB per verification through the
// fetcher, an outcome too large to keep (so paid again at every
// observation), and a pin of tens of MiB.
func TestNotCheckedEntriesBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(baseCard[:len(baseCard)-1])
	b.WriteString(`,"signatures":[{}`)
	for b.Len() < 1<<20-10 {
		b.WriteString(`,0`)
	}
	b.WriteString(`]}`)
	res, err := Verify(context.Background(), b.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != MaxSignatures+1 {
		t.Fatalf("%d results, want %d: the first %d entries and one for the rest", len(res), MaxSignatures+1, MaxSignatures)
	}
	if r := res[MaxSignatures]; r.Index != MaxSignatures || r.Reason != ReasonNotChecked {
		t.Errorf("the last result %+v, want entry %d on, not-checked", r, MaxSignatures)
	}
	if r := res[0]; r.Reason != ReasonMalformed {
		t.Errorf("entry 0 ({}): %+v, want malformed", r)
	}
}
