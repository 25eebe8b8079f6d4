def f(x, n: int):
    for i in range(n):
        if i % 2 == 0:
            x = x * 2 + i
        else:
            x = x - 1.5
    return x
