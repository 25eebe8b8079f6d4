def f(x, n: int):
    sizes = torch.jit.annotate(List[int], [])
    for i in range(n):
        sizes.append(i)
    o: Optional[int] = None
    if n > 2:
        o = n
    return sizes, o
