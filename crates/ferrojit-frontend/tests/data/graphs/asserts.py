def f(x, c: bool):
    assert c, "msg"
    assert c
    return x
