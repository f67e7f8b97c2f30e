package read

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// dataKey opens the stored message's payload in a MSG.GET answer: a JSON
// string of base64, which holds no quote and no escape.
var dataKey = []byte(`"data":"`)

// placeholder is one zero byte in base64.
const placeholder = "AA=="

// decodeMsgGet decodes the JetStream API's answer to a MSG.GET. Nearly
// all of a large answer is the message's payload in base64, which
// encoding/json scans twice, byte by byte, before it decodes it: 14 to
// 18 ms for a snapshot of 2 MiB, more than the server takes to answer.
// The payload is cut out and decoded on its own, and the rest, a few
// hundred bytes, is left to encoding/json (BenchmarkDecodeMsgGet). An
// answer that does not come apart so (no payload, the key more than
// once, or anywhere but in the message) is decoded whole, and
// FuzzDecodeMsgGet holds every answer to encoding/json's.
func decodeMsgGet(body []byte) (msgGetResponse, error) {
	var resp msgGetResponse
	start := bytes.Index(body, dataKey)
	if start < 0 {
		return resp, json.Unmarshal(body, &resp)
	}
	from := start + len(dataKey)
	n := bytes.IndexByte(body[from:], '"')
	// base64 skips line breaks, which a JSON string cannot hold.
	if n < 0 || bytes.Contains(body[from+n:], dataKey) ||
		bytes.IndexByte(body[from:from+n], '\n') >= 0 || bytes.IndexByte(body[from:from+n], '\r') >= 0 {
		return resp, json.Unmarshal(body, &resp)
	}
	encoded := body[from : from+n]
	data := make([]byte, base64.StdEncoding.DecodedLen(len(encoded)))
	k, err := base64.StdEncoding.Decode(data, encoded)
	if err != nil {
		return resp, json.Unmarshal(body, &resp)
	}
	// The rest, with a payload of one zero byte in place of the real one:
	// finding it in the message proves the key was the message's.
	rest := make([]byte, 0, len(body)-n+len(placeholder))
	rest = append(append(append(rest, body[:from]...), placeholder...), body[from+n:]...)
	if err := json.Unmarshal(rest, &resp); err != nil || resp.Message == nil || string(resp.Message.Data) != "\x00" {
		resp = msgGetResponse{}
		return resp, json.Unmarshal(body, &resp)
	}
	resp.Message.Data = data[:k]
	return resp, nil
}
