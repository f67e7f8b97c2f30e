package conversation

import "testing"

// BenchmarkDiagnose measures Diagnose, Parse included, on the inputs of
// BenchmarkParse: the difference between the two is the doctor's own cost.
func BenchmarkDiagnose(b *testing.B) {
	for _, name := range benchInputs {
		msgs, groups := loadBench(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.ReportMetric(float64(len(msgs)), "msgs")
			for b.Loop() {
				if _, err := Diagnose(msgs, groups); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
