package read

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// msgGetAnswers are MSG.GET answers as the server encodes them: stored
// messages of every payload size up to a few of base64's padding cases and
// a large one, with and without headers, subjects that need escaping, and
// errors whose text holds the payload's key.
func msgGetAnswers(t testing.TB) [][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return b
	}
	var out [][]byte
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC)
	for _, n := range []int{0, 1, 2, 3, 4, 5, 100, 1 << 20} {
		for _, hdr := range [][]byte{nil, []byte("NATS/1.0\r\nKV-Operation: PUT\r\n\r\n")} {
			for _, subj := range []string{"$KV.snap.c1", `odd."data":"subject`, "a\\b"} {
				add(server.JSApiMsgGetResponse{ApiResponse: server.ApiResponse{Type: server.JSApiMsgGetResponseType},
					Message: &server.StoredMsg{Subject: subj, Sequence: uint64(n) + 7, Header: hdr, Data: payload(n), Time: at}})
			}
		}
	}
	add(server.JSApiMsgGetResponse{ApiResponse: server.ApiResponse{Type: server.JSApiMsgGetResponseType,
		Error: &server.ApiError{Code: 404, ErrCode: errCodeNoMessage, Description: "no message found"}}})
	add(server.JSApiMsgGetResponse{ApiResponse: server.ApiResponse{Type: server.JSApiMsgGetResponseType,
		Error: &server.ApiError{Code: 500, ErrCode: 1, Description: `bad "data":"x" here`}}})
	return out
}

// TestDecodeMsgGet requires decodeMsgGet to decode every answer as
// encoding/json does.
func TestDecodeMsgGet(t *testing.T) {
	for _, body := range msgGetAnswers(t) {
		checkDecodeMsgGet(t, body)
	}
}

// FuzzDecodeMsgGet requires decodeMsgGet to agree with encoding/json on
// any input: the same answer when it decodes, an error when it does not.
func FuzzDecodeMsgGet(f *testing.F) {
	for _, body := range msgGetAnswers(f) {
		if len(body) < 4096 {
			f.Add(body)
		}
	}
	f.Add([]byte(`{"message":{"data":"QUJD","data":"QUJD"}}`))
	f.Add([]byte(`{"message":{"data":"QU\nJD"}}`))
	f.Add([]byte(`{"message":{"data":"QUJD"}}trailing`))
	f.Add([]byte(`{"data":"QUJD","message":{"subject":"x"}}`))
	f.Add([]byte(`{"message":{"x":{"data":"QUJD"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeMsgGet(t, body) })
}

// checkDecodeMsgGet compares decodeMsgGet with encoding/json on body.
func checkDecodeMsgGet(t *testing.T, body []byte) {
	t.Helper()
	var want msgGetResponse
	wantErr := json.Unmarshal(body, &want)
	got, err := decodeMsgGet(body)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%.80q: error %v, encoding/json's %v", body, err, wantErr)
	}
	if err != nil {
		return
	}
	// Both read an empty payload as empty; whether as nil does not matter.
	for _, r := range []*msgGetResponse{&want, &got} {
		if r.Message != nil && len(r.Message.Data) == 0 {
			r.Message.Data = nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.80q: decoded %+v, encoding/json %+v", body, got, want)
	}
}

// BenchmarkDecodeMsgGet decodes the answer for a snapshot of 2 MiB, and
// one for an event, both ways.
func BenchmarkDecodeMsgGet(b *testing.B) {
	for _, size := range []int{600, 2 << 20} {
		body, err := json.Marshal(server.JSApiMsgGetResponse{ApiResponse: server.ApiResponse{Type: server.JSApiMsgGetResponseType},
			Message: &server.StoredMsg{Subject: "$KV.snap.c1", Sequence: 9, Data: []byte(strings.Repeat("x", size)), Time: time.Now()}})
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("payload=%dB", size)
		b.Run(name+"/decodeMsgGet", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := decodeMsgGet(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var resp msgGetResponse
				if err := json.Unmarshal(body, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
