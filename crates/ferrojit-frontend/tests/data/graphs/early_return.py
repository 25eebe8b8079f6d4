def f(x, c: bool):
    y = x
    if c:
        y = x + 1
        return y
    else:
        y = x - 1
    z = y * 3
    return z
