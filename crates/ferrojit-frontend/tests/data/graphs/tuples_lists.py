def f(t: Tuple[int, int], l: List[int], x):
    a, b = t
    l.append(a)
    m = [x, x]
    y, z = m
    return t[0] + l[1] + b, len(l), y + z, torch.cat(m, 0)
