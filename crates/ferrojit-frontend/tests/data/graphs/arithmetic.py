def f(a: int, b: int, c: bool):
    d = a < b and c
    e = a > b or c
    g = not c
    return d, e, g, a / b, a // b, a % b, a ** b, a - b * 2
