package worker

import (
	"context"
	"errors"
	"fmt"
	"net/textproto"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/streams"
)

// pipelineFailure describes the failed run of pipeline for a request.
func pipelineFailure(requestID, conv, pipeline string, err error) streams.PipelineFailed {
	failed := streams.PipelineFailed{RequestID: requestID, ConversationID: conv, Pipeline: pipeline,
		Code: failureCode(err), Message: err.Error(), Cause: err.Error()}
	var pe *enginecore.PipelineError
	if errors.As(err, &pe) {
		failed.Processor = pe.Processor
		if pe.Cause != nil {
			failed.Cause = pe.Cause.Error()
		}
	}
	return failed
}

// failureCode classifies the error of a pipeline run.
func failureCode(err error) streams.FailureCode {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return streams.FailedTimeout
	case errors.Is(err, context.Canceled):
		return streams.FailedCanceled
	case errors.Is(err, enginecore.ErrLimitExceeded):
		return streams.FailedLimit
	case errors.Is(err, enginecore.ErrProcessorPanic), errors.Is(err, enginecore.ErrNilContext), errors.Is(err, enginecore.ErrNilProcessor):
		return streams.FailedInternal
	}
	return streams.FailedProcessor
}

// tooLargeFailure is the failure that answers a request whose context
// takes size bytes on the wire, over limit.
func tooLargeFailure(out streams.InferenceContext, size, limit int) streams.PipelineFailed {
	msg := fmt.Sprintf("the context of %d messages takes %d bytes with its headers, more than the %d a message may carry (the NATS server's max payload)",
		len(out.Messages), size, limit)
	return streams.PipelineFailed{RequestID: out.RequestID, ConversationID: out.ConversationID, Pipeline: out.Pipeline,
		Code: streams.FailedTooLarge, Message: msg, Cause: msg}
}

// replySize is what msg takes on the wire as a reply, as the server counts
// it against its max payload: the data and the headers, with those that
// micro adds to a service error (errCode set).
func replySize(msg *nats.Msg, errCode, errText string) int {
	n := len(msg.Data)
	headers := 0
	for k, vs := range msg.Header {
		if errCode != "" && (k == micro.ErrorHeader || k == micro.ErrorCodeHeader) {
			continue // replaced by the error's own
		}
		for _, v := range vs {
			headers += headerLineSize(k, v)
		}
	}
	if errCode != "" {
		headers += headerLineSize(micro.ErrorHeader, errText) + headerLineSize(micro.ErrorCodeHeader, errCode)
	}
	if headers > 0 {
		headers += len("NATS/1.0\r\n") + len("\r\n")
	}
	return n + headers
}

// headerLineSize is the length of "key: value\r\n" as nats.go writes it.
func headerLineSize(k, v string) int {
	return len(k) + len(": ") + len(textproto.TrimString(v)) + len("\r\n")
}
