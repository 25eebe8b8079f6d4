# torch.nn.functional: activation functions, written for ferrojit in TorchScript.
# Signatures (names, order, defaults) are PyTorch's; the bodies call the aten operators
# PyTorch's own functions reach, with PyTorch's argument checks and messages.


def _threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.threshold_(input, threshold, value)
    return torch.threshold(input, threshold, value)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.relu_(input)
    return torch.relu(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.ops.aten.relu6_(input)
    return torch.ops.aten.relu6(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    # Halving a zero-dimensional tensor has no size to halve.
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    return torch.ops.aten.glu(input, dim)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if max_val < min_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return torch.ops.aten.hardtanh_(input, min_val, max_val)
    return torch.ops.aten.hardtanh(input, min_val, max_val)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.ops.aten.elu_(input, alpha)
    return torch.ops.aten.elu(input, alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.selu_(input)
    return torch.selu(input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.celu_(input, alpha)
    return torch.celu(input, alpha)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.ops.aten.leaky_relu_(input, negative_slope)
    return torch.ops.aten.leaky_relu(input, negative_slope)


def tanhshrink(input):
    return input - torch.tanh(input)


def softsign(input):
    return input / (torch.abs(input) + 1)


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    # The implicit dimension of PyTorch's deprecated softmax-without-dim calls.
    if ndim == 0 or ndim == 1 or ndim == 3:
        return 0
    return 1


def softmin(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Optional[int] = None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    negated = torch.neg(input)
    if dtype is None:
        return negated.softmax(dim)
    return negated.softmax(dim, dtype=dtype)


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Optional[int] = None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    if dtype is None:
        return input.softmax(dim)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Optional[int] = None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    if dtype is None:
        return input.log_softmax(dim)
    return input.log_softmax(dim, dtype=dtype)


def tanh(input):
    return torch.tanh(input)


def sigmoid(input):
    return torch.sigmoid(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.ops.aten.hardsigmoid_(input)
    return torch.ops.aten.hardsigmoid(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.ops.aten.silu_(input)
    return torch.ops.aten.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.ops.aten.mish_(input)
    return torch.ops.aten.mish(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return torch.ops.aten.hardswish_(input)
    return torch.ops.aten.hardswish(input)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if inplace:
        return torch.dropout_(input, p, training)
    return torch.dropout(input, p, training)


