class PlaceholderModule(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  def forward(self: __torch__.PlaceholderModule,
    x: Tensor,
    n: int) -> Tensor:
    x0 = x
    for i in range(n):
      _0 = torch.eq(torch.remainder(i, 2), 0)
      if _0:
        x1 = torch.add(torch.mul(x0, 2), i)
      else:
        x1 = torch.sub(x0, 1.5)
      x0 = x1
    return x0
