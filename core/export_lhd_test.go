package core

// SetLHDConstants sets lhd's constants (for TestLHD_Sensitivity) and
// returns a function that restores them. Trees made before keep their
// table sizes.
func SetLHDConstants(subLog2, classes, history, decay, refit int) (restore func()) {
	old := [5]int{lhdSubLog2, lhdClasses, lhdHistory, lhdDecay, lhdRefit}
	lhdSubLog2, lhdClasses, lhdHistory, lhdDecay, lhdRefit = subLog2, classes, history, decay, refit
	return func() {
		lhdSubLog2, lhdClasses, lhdHistory, lhdDecay, lhdRefit = old[0], old[1], old[2], old[3], old[4]
	}
}
