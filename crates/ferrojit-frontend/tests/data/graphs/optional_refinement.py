def f(x, b: Optional[torch.Tensor]):
    if b is not None:
        x = x + b
    return x
