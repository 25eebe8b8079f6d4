class Sequential(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  __annotations__["0"] = __torch__.torch.nn.modules.linear.___torch_mangle_1.Linear
  __annotations__["1"] = __torch__.torch.nn.modules.activation.___torch_mangle_2.ReLU
  __annotations__["2"] = __torch__.torch.nn.modules.linear.___torch_mangle_3.Linear
  def forward(self: __torch__.torch.nn.modules.container.Sequential,
    input: Tensor) -> Tensor:
    _2 = getattr(self, "2")
    _1 = getattr(self, "1")
    _0 = getattr(self, "0")
    _3 = (_1).forward((_0).forward(input, ), )
    return (_2).forward(_3, )
