package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/convstream/convstream/streams"
)

// ErrEraseFailed is what Erase returns, wrapped with the worker's reason,
// when the worker could not erase the whole conversation. Asked again, it
// erases what is left.
var ErrEraseFailed = errors.New("client: erase failed")

// Erase asks a worker to erase a conversation everywhere it is stored
// (streams.EraseRequest) and returns the receipt, which the worker also
// keeps in the receipts stream. by names who asks, for the receipt. The
// user needs the right to erase (streams.WithErase). Give ctx a deadline:
// a long conversation takes a while (worker.DefaultEraseTimeout bounds
// the worker's side).
func (c *Client) Erase(ctx context.Context, conversationID, by string) (*streams.EraseReceipt, error) {
	if err := checkConversationID(conversationID); err != nil {
		return nil, err
	}
	body, err := json.Marshal(streams.EraseRequest{By: by})
	if err != nil {
		return nil, err
	}
	reply, err := c.nc.RequestWithContext(ctx, c.subjects.Erase(conversationID), body)
	if err != nil {
		return nil, fmt.Errorf("client: erase request: %w", err)
	}
	var resp streams.EraseResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("client: erase answer is not an EraseResponse: %w", err)
	}
	if resp.Error != "" || resp.Receipt == nil {
		return nil, fmt.Errorf("%w: %s", ErrEraseFailed, resp.Error)
	}
	return resp.Receipt, nil
}
