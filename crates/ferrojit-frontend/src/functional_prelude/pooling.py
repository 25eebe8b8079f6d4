# torch.nn.functional: pooling and unpooling, written for ferrojit in TorchScript.
# `BroadcastingListN[int]` parameters take one int (repeated N times) or a list of N.


def max_pool1d_with_indices(input: Tensor, kernel_size: BroadcastingList1[int], stride: Optional[BroadcastingList1[int]] = None, padding: BroadcastingList1[int] = 0, dilation: BroadcastingList1[int] = 1, ceil_mode: bool = False, return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    # An empty stride means "the kernel size" to the operator.
    strides = torch.jit.annotate(List[int], []) if stride is None else stride
    return torch.max_pool1d_with_indices(input, kernel_size, strides, padding, dilation, ceil_mode)


def _max_pool1d(input: Tensor, kernel_size: BroadcastingList1[int], stride: Optional[BroadcastingList1[int]] = None, padding: BroadcastingList1[int] = 0, dilation: BroadcastingList1[int] = 1, ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    strides = torch.jit.annotate(List[int], []) if stride is None else stride
    return torch.max_pool1d(input, kernel_size, strides, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input: Tensor, kernel_size: BroadcastingList2[int], stride: Optional[BroadcastingList2[int]] = None, padding: BroadcastingList2[int] = 0, dilation: BroadcastingList2[int] = 1, ceil_mode: bool = False, return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    strides = torch.jit.annotate(List[int], []) if stride is None else stride
    return torch.ops.aten.max_pool2d_with_indices(input, kernel_size, strides, padding, dilation, ceil_mode)


def _max_pool2d(input: Tensor, kernel_size: BroadcastingList2[int], stride: Optional[BroadcastingList2[int]] = None, padding: BroadcastingList2[int] = 0, dilation: BroadcastingList2[int] = 1, ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    strides = torch.jit.annotate(List[int], []) if stride is None else stride
    return torch.max_pool2d(input, kernel_size, strides, padding, dilation, ceil_mode)


def max_pool3d_with_indices(input: Tensor, kernel_size: BroadcastingList3[int], stride: Optional[BroadcastingList3[int]] = None, padding: BroadcastingList3[int] = 0, dilation: BroadcastingList3[int] = 1, ceil_mode: bool = False, return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    strides = torch.jit.annotate(List[int], []) if stride is None else stride
    return torch.ops.aten.max_pool3d_with_indices(input, kernel_size, strides, padding, dilation, ceil_mode)


def _max_pool3d(input: Tensor, kernel_size: BroadcastingList3[int], stride: Optional[BroadcastingList3[int]] = None, padding: BroadcastingList3[int] = 0, dilation: BroadcastingList3[int] = 1, ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    strides = torch.jit.annotate(List[int], []) if stride is None else stride
    return torch.max_pool3d(input, kernel_size, strides, padding, dilation, ceil_mode)


def _unpool_output_size(input: Tensor, kernel_size: List[int], stride: List[int], padding: List[int], output_size: Optional[List[int]]) -> List[int]:
    # The size max pooling would have come from, unless output_size names one within a
    # stride of it.
    spatial = len(kernel_size)
    input_size = input.size()
    default_size = torch.jit.annotate(List[int], [])
    for d in range(spatial):
        default_size.append((input_size[d - spatial] - 1) * stride[d] + kernel_size[d] - 2 * padding[d])
    if output_size is None:
        result = default_size
    else:
        requested = output_size
        if len(requested) == spatial + 2:
            requested = requested[2:]
        if len(requested) != spatial:
            raise ValueError(f"output_size should be a sequence containing {spatial} or {spatial + 2} elements, but it has a length of '{len(requested)}'")
        for d in range(spatial):
            min_size = default_size[d] - stride[d]
            max_size = default_size[d] + stride[d]
            if not (min_size < requested[d] and requested[d] < max_size):
                raise ValueError(f'invalid output_size "{requested}" (dim {d} must be between {min_size} and {max_size})')
        result = requested
    for d in range(spatial):
        if result[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got output_size[{d}]={result[d]}")
    return result


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: BroadcastingList1[int], stride: Optional[BroadcastingList1[int]] = None, padding: BroadcastingList1[int] = 0, output_size: Optional[BroadcastingList1[int]] = None) -> Tensor:
    strides = kernel_size if stride is None else stride
    size = _unpool_output_size(input, kernel_size, strides, padding, output_size)
    # One-dimensional unpooling is two-dimensional unpooling over a trailing unit axis
    # (a new list: `size` may be the caller's).
    size = size + [1]
    return torch.ops.aten.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), size).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: BroadcastingList2[int], stride: Optional[BroadcastingList2[int]] = None, padding: BroadcastingList2[int] = 0, output_size: Optional[BroadcastingList2[int]] = None) -> Tensor:
    strides = kernel_size if stride is None else stride
    size = _unpool_output_size(input, kernel_size, strides, padding, output_size)
    return torch.ops.aten.max_unpool2d(input, indices, size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: BroadcastingList3[int], stride: Optional[BroadcastingList3[int]] = None, padding: BroadcastingList3[int] = 0, output_size: Optional[BroadcastingList3[int]] = None) -> Tensor:
    strides = kernel_size if stride is None else stride
    size = _unpool_output_size(input, kernel_size, strides, padding, output_size)
    return torch.ops.aten.max_unpool3d(input, indices, size, strides, padding)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Optional[BroadcastingList1[int]] = None, ceil_mode: bool = False) -> Tensor:
    if norm_type == 0:
        raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
    if stride is None:
        pooled = torch.avg_pool1d(input.pow(norm_type), [kernel_size], torch.jit.annotate(List[int], []), [0], ceil_mode)
    else:
        pooled = torch.avg_pool1d(input.pow(norm_type), [kernel_size], stride, [0], ceil_mode)
    return (torch.sign(pooled) * torch.relu(torch.abs(pooled))).mul(kernel_size).pow(1.0 / norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: BroadcastingList2[int], stride: Optional[BroadcastingList2[int]] = None, ceil_mode: bool = False) -> Tensor:
    if norm_type == 0:
        raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
    strides = torch.jit.annotate(List[int], []) if stride is None else stride
    pooled = torch.ops.aten.avg_pool2d(input.pow(norm_type), kernel_size, strides, [0, 0], ceil_mode)
    return (torch.sign(pooled) * torch.relu(torch.abs(pooled))).mul(kernel_size[0] * kernel_size[1]).pow(1.0 / norm_type)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: BroadcastingList1[int], return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    return torch.adaptive_max_pool1d(input, output_size)


def _adaptive_max_pool1d(input: Tensor, output_size: BroadcastingList1[int], return_indices: bool = False) -> Tensor:
    return adaptive_max_pool1d_with_indices(input, output_size)[0]


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: BroadcastingList2[int], return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    return torch.ops.aten.adaptive_max_pool2d(input, output_size)


def _adaptive_max_pool2d(input: Tensor, output_size: BroadcastingList2[int], return_indices: bool = False) -> Tensor:
    return adaptive_max_pool2d_with_indices(input, output_size)[0]


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: BroadcastingList3[int], return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    return torch.ops.aten.adaptive_max_pool3d(input, output_size)


def _adaptive_max_pool3d(input: Tensor, output_size: BroadcastingList3[int], return_indices: bool = False) -> Tensor:
    return adaptive_max_pool3d_with_indices(input, output_size)[0]


def adaptive_avg_pool2d(input: Tensor, output_size: BroadcastingList2[int]) -> Tensor:
    return torch.ops.aten.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: BroadcastingList3[int]) -> Tensor:
    return torch.ops.aten.adaptive_avg_pool3d(input, output_size)


def unfold(input: Tensor, kernel_size: BroadcastingList2[int], dilation: BroadcastingList2[int] = 1, padding: BroadcastingList2[int] = 0, stride: BroadcastingList2[int] = 1) -> Tensor:
    return torch.ops.aten.im2col(input, kernel_size, dilation, padding, stride)


def fold(input: Tensor, output_size: BroadcastingList2[int], kernel_size: BroadcastingList2[int], dilation: BroadcastingList2[int] = 1, padding: BroadcastingList2[int] = 0, stride: BroadcastingList2[int] = 1) -> Tensor:
    return torch.ops.aten.col2im(input, output_size, kernel_size, dilation, padding, stride)




def _fractional_output_size(input: Tensor, dims: int, output_size: Optional[List[int]], output_ratio: Optional[List[float]], name: str) -> List[int]:
    # The output size given, or each of the last `dims` input sizes times its ratio.
    if output_size is not None:
        return output_size
    if output_ratio is None:
        raise ValueError(name + " requires specifying either an output_size or an output_ratio")
    sizes = torch.jit.annotate(List[int], [])
    for k in range(dims):
        sizes.append(int(input.size(k - dims) * output_ratio[k]))
    return sizes


def _fractional_samples(input: Tensor, dims: int, random_samples: Optional[Tensor]) -> Tensor:
    # The caller's samples, or one uniform draw per (batch entry, plane, spatial dim).
    if random_samples is not None:
        return random_samples
    batch = 1 if input.dim() == dims + 1 else input.size(0)
    return torch.rand([batch, input.size(-dims - 1), dims], dtype=input.dtype, device=input.device)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: BroadcastingList2[int], output_size: Optional[BroadcastingList2[int]] = None, output_ratio: Optional[BroadcastingList2[float]] = None, return_indices: bool = False, _random_samples: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    sizes = _fractional_output_size(input, 2, output_size, output_ratio, "fractional_max_pool2d")
    samples = _fractional_samples(input, 2, _random_samples)
    return torch.ops.aten.fractional_max_pool2d(input, kernel_size, sizes, samples)


def _fractional_max_pool2d(input: Tensor, kernel_size: BroadcastingList2[int], output_size: Optional[BroadcastingList2[int]] = None, output_ratio: Optional[BroadcastingList2[float]] = None, return_indices: bool = False, _random_samples: Optional[Tensor] = None) -> Tensor:
    return fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, return_indices, _random_samples)[0]


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: BroadcastingList3[int], output_size: Optional[BroadcastingList3[int]] = None, output_ratio: Optional[BroadcastingList3[float]] = None, return_indices: bool = False, _random_samples: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    sizes = _fractional_output_size(input, 3, output_size, output_ratio, "fractional_max_pool3d")
    samples = _fractional_samples(input, 3, _random_samples)
    return torch.ops.aten.fractional_max_pool3d(input, kernel_size, sizes, samples)


def _fractional_max_pool3d(input: Tensor, kernel_size: BroadcastingList3[int], output_size: Optional[BroadcastingList3[int]] = None, output_ratio: Optional[BroadcastingList3[float]] = None, return_indices: bool = False, _random_samples: Optional[Tensor] = None) -> Tensor:
    return fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, return_indices, _random_samples)[0]
