def f(x, c: bool):
    if c:
        return x
    y = x + 1
    return y * 2
