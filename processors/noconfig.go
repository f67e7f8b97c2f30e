package processors

import "github.com/convstream/convstream/enginecore"

// noConfig returns p for processors without settings, rejecting any
// config keys.
func noConfig(raw map[string]any, p enginecore.Processor) (enginecore.Processor, error) {
	var none struct{}
	if err := decodeConfig(raw, &none); err != nil {
		return nil, err
	}
	return p, nil
}
