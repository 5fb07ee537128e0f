package abi

// OpMambaSetAlpha sets the marconi Mamba policy's alpha of an instance
// (core.Tree.SetMambaAlpha): a host that tunes alpha online, by replaying
// recent requests on shadow instances, applies its choice with it.
const OpMambaSetAlpha Op = 0x0070

func init() { registerOp(OpMambaSetAlpha, "mamba_set_alpha") }
