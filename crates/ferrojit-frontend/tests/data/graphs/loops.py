def f(x, xs: List[int], a: int, b: int, c: int):
    t = 0
    for v in xs:
        t += v
    while t > 0:
        t = t - 1
    for i in range(a, b):
        t = t + i
    for j in range(a, b, c):
        t = t + j
    return t
