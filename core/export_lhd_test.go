package core

// SetLHDConstants sets lhd's constants (for TestLHD_Sensitivity) and
// returns a function that restores them. Trees made before keep their
// table sizes.
func SetLHDConstants(subLog2, classes, history, decay int) (restore func()) {
	old := [4]int{lhdSubLog2, lhdClasses, lhdHistory, lhdDecay}
	lhdSubLog2, lhdClasses, lhdHistory, lhdDecay = subLog2, classes, history, decay
	return func() { lhdSubLog2, lhdClasses, lhdHistory, lhdDecay = old[0], old[1], old[2], old[3] }
}
