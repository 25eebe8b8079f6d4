class PlaceholderModule(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  def forward(self: __torch__.PlaceholderModule,
    x: Tensor,
    f: float,
    k: int) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    scaled = torch.add(torch.mul(x, 2.5), 1)
    shifted = torch.add(x, k)
    times_f = torch.mul(x, f)
    above = torch.gt(x, k)
    halved = torch.div(x, 2)
    _0 = (scaled, shifted, times_f, above, halved)
    return _0
