def f(x, c: bool, n: int):
    y = x if c else x * 2
    m = n if n > 0 else -n
    return y, m
