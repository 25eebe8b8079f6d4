class ModuleList(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : NoneType
  __annotations__["0"] = __torch__.Block
  __annotations__["1"] = __torch__.Block
  def __len__(self: __torch__.torch.nn.modules.container.ModuleList) -> int:
    return 2
