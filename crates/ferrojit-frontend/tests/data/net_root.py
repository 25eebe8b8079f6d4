class Net(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  names : Dict[str, int]
  blocks : __torch__.torch.nn.modules.container.ModuleList
  head : __torch__.torch.nn.modules.linear.___torch_mangle_0.Linear
  def forward(self: __torch__.Net,
    x: Tensor,
    n: int=3) -> Tuple[Tensor, List[int]]:
    sizes = annotate(List[int], [])
    blocks = self.blocks
    _0 = getattr(blocks, "0")
    _1 = getattr(blocks, "1")
    x0 = (_0).forward(x, )
    _2 = torch.append(sizes, torch.size(x0, -1))
    x1 = (_1).forward(x0, )
    _3 = torch.append(sizes, torch.size(x1, -1))
    x2 = x1
    i = 0
    _4 = torch.lt(0, n)
    while _4:
      _5 = torch.slice(torch.slice(x2, 0, 0, 1), 1, None, None, 2)
      _6 = __torch__.scale_and_sum([x2, _5], 2., )
      x3 = torch.add(x2, (_6)[0])
      i0 = torch.add(i, 1)
      _4, x2, i = torch.lt(i0, n), x3, i0
    head = self.head
    out = (head).forward(x2, )
    a, b, = torch.chunk(out, 2, -1)
    _7 = torch.cat([a, b], 1)
    _8 = annotate(List[int], [])
    for _9 in range(torch.len(sizes)):
      s = sizes[_9]
      _10 = torch.append(_8, torch.floordiv(s, 2))
    return (_7, _8)
  def describe(self: __torch__.Net,
    scale: float) -> str:
    _9 = "AssertionError: scale must be positive"
    names = self.names
    _10 = torch.add("net with ", str(torch.len(names)))
    s = torch.add(_10, " names")
    if torch.gt(scale, 0.):
      pass
    else:
      ops.prim.RaiseException(_9)
    if torch.gt(scale, 1.):
      _11 = s
    else:
      _11 = torch.add("small\n", s)
    return _11
class Block(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  alpha : float
  fc : __torch__.torch.nn.modules.linear.Linear
  def forward(self: __torch__.Block,
    x: Tensor) -> Tensor:
    fc = self.fc
    y = (fc).forward(x, )
    if bool(torch.gt(torch.sum(y), 0)):
      _12 = torch.relu(y)
      alpha = self.alpha
      y0 = torch.mul(_12, alpha)
    else:
      if torch.eq(torch.numel(y), 0):
        y1 = torch.neg(y)
      else:
        y1 = torch.pow(y, 2)
      y0 = y1
    return y0
def scale_and_sum(xs: List[Tensor],
    factor: float=2.) -> Tuple[Tensor, int]:
  total = torch.zeros([1])
  total0 = total
  count = 0
  for _13 in range(torch.len(xs)):
    x = xs[_13]
    if torch.gt(torch.dim(x), 1):
      total2 = torch.add(total0, torch.mul(torch.sum(x), factor))
      total1 = total2
    else:
      total1 = torch.sub_(total0, torch.mean(x))
    total0, count = total1, torch.add(count, 1)
  return (total0, count)
