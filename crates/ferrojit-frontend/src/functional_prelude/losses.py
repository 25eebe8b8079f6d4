# torch.nn.functional: loss functions, written for ferrojit in TorchScript.
# `reduction` is a string here and an enum (0 none, 1 mean, 2 sum) to the aten operators;
# the deprecated `size_average`/`reduce` flags, when either is given, decide it instead.


def _reduction_enum(reduction: str) -> int:
    if reduction == "none":
        return 0
    if reduction == "mean" or reduction == "elementwise_mean":
        return 1
    if reduction == "sum":
        return 2
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average: Optional[bool], reduce: Optional[bool]) -> str:
    # Either flag left out counts as True.
    averages = True if size_average is None else size_average
    reduces = True if reduce is None else reduce
    if reduces and averages:
        return "mean"
    if reduces:
        return "sum"
    return "none"


def _reduction_of(size_average: Optional[bool], reduce: Optional[bool], reduction: str) -> int:
    if size_average is not None or reduce is not None:
        return _reduction_enum(_legacy_reduction(size_average, reduce))
    return _reduction_enum(reduction)


def _weighted_reduction(weighted: Tensor, weight: Tensor, reduction: str) -> Tensor:
    # A weighted mean divides by the weights' total, not the element count.
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return torch.sum(weighted)
    if reduction == "mean":
        return torch.sum(weighted) / torch.sum(weight)
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    return torch.ops.aten.nll_loss_nd(input, target, weight, _reduction_of(size_average, reduce, reduction), ignore_index)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average: Optional[bool] = None, eps: float = 1e-08, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction != "none" and reduction != "mean" and reduction != "sum":
        raise ValueError(reduction + " is not a valid value for reduction")
    return torch.poisson_nll_loss(input, target, log_input, full, eps, _reduction_enum(reduction))


def kl_div(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean", log_target: bool = False) -> Tensor:
    if size_average is not None or reduce is not None:
        reduction_enum = _reduction_enum(_legacy_reduction(size_average, reduce))
    elif reduction == "batchmean":
        # The sum, divided by the batch size below.
        reduction_enum = 2
    else:
        reduction_enum = _reduction_enum(reduction)
    reduced = torch.kl_div(input, target, reduction_enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    return torch.ops.aten.cross_entropy_loss(input, target, weight, _reduction_of(size_average, reduce, reduction), ignore_index, label_smoothing)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        weight = torch.broadcast_tensors([weight, target])[0]
    return torch.ops.aten.binary_cross_entropy(input, target, weight, reduction_enum)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> Tensor:
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    if not target.size() == input.size():
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    return torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction_enum)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    expanded = torch.broadcast_tensors([input, target])
    # With beta 0 the quadratic part vanishes: the loss is L1.
    if beta == 0.0:
        return torch.ops.aten.l1_loss(expanded[0], expanded[1], reduction_enum)
    return torch.ops.aten.smooth_l1_loss(expanded[0], expanded[1], reduction_enum, beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Optional[Tensor] = None) -> Tensor:
    expanded = torch.broadcast_tensors([input, target])
    if weight is None:
        return torch.ops.aten.huber_loss(expanded[0], expanded[1], _reduction_enum(reduction), delta)
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    unweighted = torch.ops.aten.huber_loss(expanded[0], expanded[1], 0, delta)
    weighted = unweighted * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return torch.sum(weighted)
    if reduction == "mean":
        return weighted.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    expanded = torch.broadcast_tensors([input, target])
    if weight is None:
        return torch.ops.aten.l1_loss(expanded[0], expanded[1], _reduction_enum(reduction))
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    return _weighted_reduction(torch.abs(expanded[0] - expanded[1]) * weight, weight, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    expanded = torch.broadcast_tensors([input, target])
    if weight is None:
        return torch.ops.aten.mse_loss(expanded[0], expanded[1], _reduction_enum(reduction))
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    return _weighted_reduction(torch.pow(expanded[0] - expanded[1], 2) * weight, weight, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return torch.margin_ranking_loss(input1, input2, target, margin, reduction_enum)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    return torch.hinge_embedding_loss(input, target, margin, _reduction_of(size_average, reduce, reduction))


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    return torch.ops.aten.multilabel_margin_loss(input, target, _reduction_of(size_average, reduce, reduction))


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    return torch.ops.aten.soft_margin_loss(input, target, _reduction_of(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = torch.neg(target * torch.ops.aten.log_sigmoid(input) + (1 - target) * torch.ops.aten.log_sigmoid(torch.neg(input)))
    if weight is not None:
        loss = loss * weight
    # The mean over the class (last) dimension.
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    return torch.cosine_embedding_loss(input1, input2, target, margin, _reduction_of(size_average, reduce, reduction))


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None:
        if weight.dim() != 1:
            raise ValueError("weight must be one-dimensional")
    return torch.ops.aten.multi_margin_loss(input, target, p, margin, weight, reduction_enum)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0, eps: float = 1e-06, swap: bool = False, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return torch.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction_enum)




def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    return torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction_enum(reduction), zero_infinity)
