def f(x, n: int, s: float):
    a = int(s)
    b = float(n)
    c = bool(x)
    d = str(n)
    print(a, b)
    return a + n, b * s, c, d, torch.relu(x), torch.zeros([2, 3])
