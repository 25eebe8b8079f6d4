def f(x, c: bool):
    if c:
        y = x + 1
    else:
        raise Exception("bad")
    return y
