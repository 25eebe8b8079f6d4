class PlaceholderModule(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  def forward(self: __torch__.PlaceholderModule,
    x: Tensor) -> Tuple[Tensor, Tensor]:
    y = torch.t(x)
    _0 = torch.add_(y, 1)
    _1 = torch.mul_(torch.select(x, 0, 0), 2)
    _2 = torch.sub_(torch.select(torch.slice(x), 1, 2), 0.5)
    flat = torch.view(x, [-1])
    _3 = torch.select(flat, 0, 1)
    _4 = torch.tensor(100., dtype=ops.prim.dtype(_3), device=ops.prim.device(_3))
    _5 = torch.copy_(_3, _4)
    return (x, y)
