package processors

import "time"

// Clock returns the current time. Processors that stamp the messages they
// create (createdAt, updatedAt, generated ids) or write today's date take
// one, so tests can fix the time.
type Clock func() time.Time

func (c Clock) now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// millis returns the clock's time in Unix milliseconds, as a JSON number.
func (c Clock) millis() float64 {
	return float64(c.now().UnixMilli())
}
