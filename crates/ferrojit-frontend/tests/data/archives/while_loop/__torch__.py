class PlaceholderModule(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  def forward(self: __torch__.PlaceholderModule,
    a: Tensor,
    b: Tensor,
    limit: float) -> Tuple[Tensor, int]:
    _0 = uninitialized(Tensor)
    _1 = uninitialized(int)
    _2 = uninitialized(Tuple[Tensor, int])
    m = torch.matmul(a, torch.t(b))
    flat = torch.view(m, [-1])
    picks = [torch.select(flat, 0, 0), torch.select(flat, 0, 1), torch.select(flat, 0, -1)]
    first = picks[0]
    second = picks[1]
    total = torch.sum(flat)
    _3 = False
    _4 = _2
    total0 = total
    count = 0
    _5 = True
    while _5:
      if bool(torch.gt(total0, limit)):
        _6, _7, _8, _9, _10 = False, True, (total0, count), _0, _1
      else:
        _11 = torch.add(total0, torch.mul(first, second))
        total1 = torch.add(_11, picks[2])
        count0 = torch.add(count, 1)
        _6, _7, _8, _9, _10 = torch.lt(count0, 10), False, _2, total1, count0
      _5, _3, _4, total0, count = _6, _7, _8, _9, _10
    if _3:
      _12 = _4
    else:
      _12 = (total0, -1)
    return _12
