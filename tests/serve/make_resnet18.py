"""Writes torchvision's resnet18 (random weights, seed 0, eval mode) as a TorchScript archive
for the server's load test: `python tests/serve/make_resnet18.py OUT.pt`. Not committed (45 MB);
the same model bench/compare.py times."""

import sys

import torch
import torchvision


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    torch.jit.script(model).save(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
