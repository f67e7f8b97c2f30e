package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestSupervisorRoleRestore(t *testing.T) {
	msgs := parseMessages(t, `[{"id":"1","role":"supervisor","content":"plan"},{"id":"2","role":"user","content":"ok"}]`)
	out := process(t, processors.NewSupervisorRoleRestore(), msgs)
	assertJSON(t, out.Messages, `[{"id":"1","role":"assistant","content":"plan"},{"id":"2","role":"user","content":"ok"}]`)
	assertJSON(t, out.Metadata, `{"supervisorRoleRestoreProcessed":1}`)
	if &out.Messages[1] == &msgs[1] {
		t.Fatal("changed list shares the input's array")
	}
	if out.Messages[1]["content"] != "ok" {
		t.Fatal("unchanged message lost")
	}
}
