def f(n: int):
    a = 0
    b = 1
    c = 2
    for i in range(n):
        c = c + i
        a = a + 1
        b = b * 2
    return a + b + c
