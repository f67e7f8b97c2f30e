package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
)

// TestExportEraseImport exports every conversation of the shared
// corpus's reference suite and a sample of its generated files, erases
// it (`convctl erase`: the receipt counts its events, the conversation is
// gone), imports the document back under the same id, and finds the same
// stored flatList and contextTree, and the same export, as before.
func TestExportEraseImport(t *testing.T) {
	run := workertest.Start(t)
	t.Setenv("CONVSTREAM_NATS_URL", run.URL)
	docs := corpusDocs(t, []string{"reference-suite"}, 1, 0)
	for name, doc := range corpusDocs(t, []string{"generated-normal", "generated-noise"}, 10, 0) {
		docs[name] = doc
	}
	if len(docs) < 60 {
		t.Fatalf("only %d corpus conversations", len(docs))
	}
	dir := t.TempDir()
	for conv, doc := range docs {
		if code, out, errOut := convctl(t, doc, "send", "--all", "--wait", conv); code != 0 {
			t.Fatalf("send %s: %d %s %s", conv, code, out, errOut)
		}
		flat, tree := storedSnapshot(t, conv)
		code, exported, errOut := convctl(t, "", "export", conv)
		if code != 0 {
			t.Fatalf("export %s: %d %s", conv, code, errOut)
		}
		file := filepath.Join(dir, conv+".json")
		if err := os.WriteFile(file, []byte(exported), 0o644); err != nil {
			t.Fatal(err)
		}

		code, out, errOut := convctl(t, "", "erase", "--by", "TestExportEraseImport", conv)
		var receipt streams.EraseReceipt
		if code != 0 || json.Unmarshal([]byte(out), &receipt) != nil || receipt.Erased.Events == 0 || receipt.Erased.Snapshots == 0 {
			t.Fatalf("erase %s: %d %s %s", conv, code, out, errOut)
		}
		if code, _, errOut := convctl(t, "", "export", conv); code != 1 || !strings.Contains(errOut, "no events") {
			t.Fatalf("export %s after the erasure: %d %s", conv, code, errOut)
		}
		if code, out, _ := convctl(t, "", "watch", "--once", conv); code == 0 {
			t.Fatalf("watch %s after the erasure: a snapshot %s", conv, out)
		}

		if code, out, errOut := convctl(t, "", "import", conv, file); code != 0 {
			t.Fatalf("import %s: %d %s %s", conv, code, out, errOut)
		}
		iflat, itree := storedSnapshot(t, conv)
		if flat != iflat || tree != itree {
			t.Errorf("%s: imported after the erasure differs\nflatList %s\nimported %s\ncontextTree %s\nimported    %s", conv, flat, iflat, tree, itree)
		}
		if code, again, errOut := convctl(t, "", "export", conv); code != 0 || again != exported {
			t.Errorf("export %s after the import: %d %s\n%s\nwant %s", conv, code, errOut, again, exported)
		}
	}
	t.Logf("%d conversations exported, erased and imported", len(docs))
}
