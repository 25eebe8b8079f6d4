# torch.nn.functional: resampling (interpolate, upsample, grid_sample, affine_grid),
# written for ferrojit in TorchScript. `interpolate` itself takes the list forms of `size`
# and `scale_factor` (one entry per spatial dimension).


def interpolate(input: Tensor, size: Optional[List[int]] = None, scale_factor: Optional[List[float]] = None, mode: str = "nearest", align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None, antialias: bool = False) -> Tensor:
    corners = False
    if mode == "nearest" or mode == "area" or mode == "nearest-exact":
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is not None:
        corners = align_corners
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    output_size = torch.jit.annotate(Optional[List[int]], None)
    scale_factors = torch.jit.annotate(Optional[List[float]], None)
    if size is not None:
        if len(size) != dim:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of {input.size()[2:]} and output size of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        output_size = size
    elif scale_factor is not None:
        if len(scale_factor) != dim:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions of {input.size()[2:]} and scale_factor of shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
        scale_factors = scale_factor
    else:
        raise ValueError("either size or scale_factor should be defined")
    recompute = False
    if recompute_scale_factor is not None:
        recompute = recompute_scale_factor
    if recompute and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    # Area interpolation is adaptive average pooling, which needs an output size.
    if mode == "area" and output_size is None:
        recompute = True
    if recompute:
        factors = scale_factors
        if factors is None:
            raise AssertionError("scale_factors is unexpectedly None")
        computed = torch.jit.annotate(List[int], [])
        for i in range(dim):
            computed.append(math.floor(float(input.size(i + 2)) * factors[i]))
        output_size = computed
        scale_factors = None
    if antialias and not ((mode == "bilinear" or mode == "bicubic" or mode == "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as input")
    rank = input.dim()
    if mode == "nearest":
        if rank == 3:
            return torch.ops.aten.upsample_nearest1d(input, output_size, scale_factors)
        if rank == 4:
            return torch.ops.aten.upsample_nearest2d(input, output_size, scale_factors)
        if rank == 5:
            return torch.ops.aten.upsample_nearest3d(input, output_size, scale_factors)
    if mode == "nearest-exact":
        if rank == 3:
            return torch.ops.aten._upsample_nearest_exact1d(input, output_size, scale_factors)
        if rank == 4:
            return torch.ops.aten._upsample_nearest_exact2d(input, output_size, scale_factors)
        if rank == 5:
            return torch.ops.aten._upsample_nearest_exact3d(input, output_size, scale_factors)
    if mode == "area" and rank >= 3 and rank <= 5:
        pooled_size = output_size
        if pooled_size is None:
            raise AssertionError("output_size is unexpectedly None")
        if rank == 3:
            return torch.adaptive_avg_pool1d(input, pooled_size)
        if rank == 4:
            return adaptive_avg_pool2d(input, pooled_size)
        return adaptive_avg_pool3d(input, pooled_size)
    if rank == 3 and mode == "linear":
        return torch.ops.aten.upsample_linear1d(input, output_size, corners, scale_factors)
    if rank == 4 and mode == "bilinear":
        if antialias:
            return torch.ops.aten._upsample_bilinear2d_aa(input, output_size, corners, scale_factors)
        return torch.ops.aten.upsample_bilinear2d(input, output_size, corners, scale_factors)
    if rank == 5 and mode == "trilinear":
        return torch.ops.aten.upsample_trilinear3d(input, output_size, corners, scale_factors)
    if rank == 4 and mode == "bicubic":
        if antialias:
            return torch.ops.aten._upsample_bicubic2d_aa(input, output_size, corners, scale_factors)
        return torch.ops.aten.upsample_bicubic2d(input, output_size, corners, scale_factors)
    if rank == 4 and mode == "lanczos":
        if corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        return torch.ops.aten._upsample_lanczos2d_aa(input, output_size, corners, scale_factors)
    # The mode exists but wants another rank.
    wanted = 0
    if mode == "linear":
        wanted = 3
    elif mode == "bilinear":
        wanted = 4
    elif mode == "trilinear":
        wanted = 5
    if wanted != 0 and rank >= 3 and rank <= 5:
        raise NotImplementedError(f"Got {rank}D input, but {mode} mode needs {wanted}D input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {rank}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")


# PyTorch declares `interpolate` and the `upsample*` functions with overloads (one int or a
# list for `size`, one float or a list for `scale_factor`); scripting calls the first that
# matches. Each overload here is its own function (functional_prelude.rs lists them in
# PyTorch's order) and hands the list forms to `interpolate` above.


def _spatial_ints(input: Tensor, value: Optional[int]) -> Optional[List[int]]:
    # One value for every spatial dimension.
    if value is None:
        return None
    values = torch.jit.annotate(List[int], [])
    for _ in range(input.dim() - 2):
        values.append(value)
    return values


def _spatial_floats(input: Tensor, value: Optional[float]) -> Optional[List[float]]:
    if value is None:
        return None
    values = torch.jit.annotate(List[float], [])
    for _ in range(input.dim() - 2):
        values.append(value)
    return values


def _interpolate_int_size(input: Tensor, size: Optional[int] = None, scale_factor: Optional[List[float]] = None, mode: str = "nearest", align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None, antialias: bool = False) -> Tensor:
    return interpolate(input, _spatial_ints(input, size), scale_factor, mode, align_corners, recompute_scale_factor, antialias)


def _interpolate_int_size_float_scale(input: Tensor, size: Optional[int] = None, scale_factor: Optional[float] = None, mode: str = "nearest", align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None, antialias: bool = False) -> Tensor:
    return interpolate(input, _spatial_ints(input, size), _spatial_floats(input, scale_factor), mode, align_corners, recompute_scale_factor, antialias)


def _interpolate_float_scale(input: Tensor, size: Optional[List[int]] = None, scale_factor: Optional[float] = None, mode: str = "nearest", align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None, antialias: bool = False) -> Tensor:
    return interpolate(input, size, _spatial_floats(input, scale_factor), mode, align_corners, recompute_scale_factor, antialias)


def _upsample_int_size(input: Tensor, size: Optional[int] = None, scale_factor: Optional[float] = None, mode: str = "nearest", align_corners: Optional[bool] = None) -> Tensor:
    return interpolate(input, _spatial_ints(input, size), _spatial_floats(input, scale_factor), mode, align_corners)


def upsample(input: Tensor, size: Optional[List[int]] = None, scale_factor: Optional[float] = None, mode: str = "nearest", align_corners: Optional[bool] = None) -> Tensor:
    return interpolate(input, size, _spatial_floats(input, scale_factor), mode, align_corners)


def _upsample_nearest_int_size(input: Tensor, size: Optional[int] = None, scale_factor: Optional[float] = None) -> Tensor:
    return interpolate(input, _spatial_ints(input, size), _spatial_floats(input, scale_factor), mode="nearest")


def upsample_nearest(input: Tensor, size: Optional[List[int]] = None, scale_factor: Optional[float] = None) -> Tensor:
    return interpolate(input, size, _spatial_floats(input, scale_factor), mode="nearest")


def _upsample_bilinear_int_size(input: Tensor, size: Optional[int] = None, scale_factor: Optional[float] = None) -> Tensor:
    return interpolate(input, _spatial_ints(input, size), _spatial_floats(input, scale_factor), mode="bilinear", align_corners=True)


def upsample_bilinear(input: Tensor, size: Optional[List[int]] = None, scale_factor: Optional[float] = None) -> Tensor:
    return interpolate(input, size, _spatial_floats(input, scale_factor), mode="bilinear", align_corners=True)


def _upsample_bilinear_int_size_list_scale(input: Tensor, size: Optional[int] = None, scale_factor: Optional[List[float]] = None) -> Tensor:
    return interpolate(input, _spatial_ints(input, size), scale_factor, mode="bilinear", align_corners=True)


def _upsample_bilinear_list_scale(input: Tensor, size: Optional[List[int]] = None, scale_factor: Optional[List[float]] = None) -> Tensor:
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: Optional[bool] = None) -> Tensor:
    if mode == "bilinear":
        mode_enum = 0
    elif mode == "nearest":
        mode_enum = 1
    elif mode == "bicubic":
        mode_enum = 2
    else:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode == "zeros":
        padding_enum = 0
    elif padding_mode == "border":
        padding_enum = 1
    elif padding_mode == "reflection":
        padding_enum = 2
    else:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '{padding_mode}'")
    corners = False if align_corners is None else align_corners
    return torch.grid_sampler(input, grid, mode_enum, padding_enum, corners)


def affine_grid(theta: Tensor, size: List[int], align_corners: Optional[bool] = None) -> Tensor:
    corners = False if align_corners is None else align_corners
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.size(-2) != 2 or theta.size(-1) != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {theta.size()}.")
    elif len(size) == 5:
        if theta.dim() != 3 or theta.size(-2) != 3 or theta.size(-1) != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got {theta.size()}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size {size}.")
    # A unit-size spatial grid with align_corners is allowed (with a warning in PyTorch);
    # otherwise every size must be positive.
    smallest_spatial = size[2]
    for i in range(2, len(size)):
        if size[i] < smallest_spatial:
            smallest_spatial = size[i]
    smallest = size[0]
    for i in range(len(size)):
        if size[i] < smallest:
            smallest = size[i]
    if not (corners and smallest_spatial == 1) and smallest <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return torch.affine_grid_generator(theta, size, corners)
