def f(x, c: bool):
    if c:
        return x
    else:
        return x + 1
