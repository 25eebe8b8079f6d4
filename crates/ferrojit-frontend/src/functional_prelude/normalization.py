# torch.nn.functional: normalization, embeddings and padding, written for ferrojit in
# TorchScript.


def _verify_batch_size(size: List[int]) -> None:
    # Training statistics need more than one value per channel.
    values_per_channel = size[0]
    for i in range(2, len(size)):
        values_per_channel *= size[i]
    if values_per_channel == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor], weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-05) -> Tensor:
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, True)


def _verify_spatial_size(size: List[int]) -> None:
    spatial_elements = 1
    for i in range(2, len(size)):
        spatial_elements *= size[i]
    if spatial_elements == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None, running_var: Optional[Tensor] = None, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-05) -> Tensor:
    if use_input_stats:
        _verify_spatial_size(input.size())
    return torch.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, True)


def layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-05) -> Tensor:
    return torch.layer_norm(input, normalized_shape, weight, bias, eps, True)


def rms_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None, eps: Optional[float] = None) -> Tensor:
    return torch.rms_norm(input, normalized_shape, weight, eps)


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-05) -> Tensor:
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    # Each group's statistics must cover more than one value.
    sizes = input.size()
    grouped = [sizes[0] * sizes[1] // num_groups, num_groups]
    for i in range(2, len(sizes)):
        grouped.append(sizes[i])
    _verify_batch_size(grouped)
    return torch.group_norm(input, num_groups, weight, bias, eps, True)


def local_response_norm(input: Tensor, size: int, alpha: float = 0.0001, beta: float = 0.75, k: float = 1.0) -> Tensor:
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    # The mean of squares over a window of `size` neighbouring channels.
    squares = input.mul(input)
    if dim == 3:
        windows = torch.constant_pad_nd(squares.unsqueeze(1), [0, 0, size // 2, (size - 1) // 2], 0.0)
        averaged = torch.ops.aten.avg_pool2d(windows, [size, 1], [1, 1]).squeeze(1)
    else:
        sizes = input.size()
        stacked = squares.view([sizes[0], 1, sizes[1], sizes[2], -1])
        windows = torch.constant_pad_nd(stacked, [0, 0, 0, 0, size // 2, (size - 1) // 2], 0.0)
        averaged = torch.ops.aten.avg_pool3d(windows, [size, 1, 1], [1, 1, 1]).squeeze(1).view(sizes)
    return input / averaged.mul(alpha).add(k).pow(beta)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Optional[Tensor] = None) -> Tensor:
    if out is None:
        denominator = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
        return input / denominator
    denominator = input.norm(p, dim, keepdim=True).clamp_min_(eps).expand_as(input)
    return torch.div(input, denominator, out=out)


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    # Scales, in place and outside autograd, every row `input` looks up whose norm exceeds
    # max_norm down to max_norm (aten::embedding_renorm_'s rule). A row met twice is already
    # within bounds the second time, so repeated indices need no deduplication.
    rows = weight.detach()
    indices = input.reshape(-1)
    for i in range(indices.numel()):
        row = rows[int(indices[i])]
        norm = float(row.norm(norm_type))
        if norm > max_norm:
            row.mul_(max_norm / (norm + 1e-07))


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None, max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    num_embeddings = weight.size(0)
    if padding_idx is None:
        index = -1
    else:
        index = padding_idx
        if index > 0:
            if index >= num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif index < 0:
            if index < -num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            index = num_embeddings + index
    if max_norm is not None:
        input = input.contiguous()
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return torch.embedding(weight, input, index, scale_grad_by_freq, sparse)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Optional[Tensor] = None, max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, per_sample_weights: Optional[Tensor] = None, include_last_offset: bool = False, padding_idx: Optional[int] = None) -> Tensor:
    # The deprecated (weight, input) order: an integer weight and a floating input.
    if weight.dtype == torch.long and input.is_floating_point():
        swapped = input
        input = weight
        weight = swapped
    if per_sample_weights is not None:
        if input.size() != per_sample_weights.size():
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it must have the same shape as the input ({input.shape})")
    if not weight.dim() == 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. However, found offsets of type <unknown>")
        # Every row of a 2-D input is one bag.
        bag_offsets = torch.arange(0, input.numel(), input.size(1), dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        bag_offsets = offsets
        if bag_offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode == "sum":
        mode_enum = 0
    elif mode == "mean":
        mode_enum = 1
    elif mode == "max":
        mode_enum = 2
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    else:
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{mode}'). Please open a feature request on GitHub.")
    result, _, _, _ = torch.embedding_bag(weight, input, bag_offsets, scale_grad_by_freq, mode_enum, sparse, per_sample_weights, include_last_offset, padding_idx)
    return result


def pad(input: Tensor, pad: List[int], mode: str = "constant", value: Optional[float] = None) -> Tensor:
    return torch.ops.aten.pad(input, pad, mode, value)


