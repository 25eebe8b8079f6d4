class ScriptedModule(Module):
  __parameters__ = []
  __buffers__ = ["offset", ]
  offset : Tensor
  training : bool
  _is_full_backward_hook : Optional[bool]
  fc1 : __torch__.torch.nn.modules.linear.Linear
  relu : __torch__.torch.nn.modules.activation.ReLU
  fc2 : __torch__.torch.nn.modules.linear.___torch_mangle_0.Linear
  def forward(self: __torch__.ScriptedModule,
    x: Tensor,
    scale: float) -> Tensor:
    fc2 = self.fc2
    relu = self.relu
    fc1 = self.fc1
    _0 = (relu).forward((fc1).forward(x, ), )
    _1 = torch.mul((fc2).forward(_0, ), scale)
    offset = self.offset
    return torch.add(_1, offset)
