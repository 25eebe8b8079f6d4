class PlaceholderModule(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  def forward(self: __torch__.PlaceholderModule,
    x: Tensor) -> Tensor:
    if bool(torch.lt(torch.sum(x), 0)):
      ops.prim.RaiseException("negative input", "builtins.Exception")
    else:
      pass
    return torch.mul(x, 2)
