"""Side-by-side benchmark: ferrojit against PyTorch (libtorch under torch.jit) in one run.

Run from the repository root (needs the PyTorch venv and a release build):

    cargo build --release -p ferrojit-cli
    .venv/bin/python bench/compare.py [--rounds 5] [--iters 20] [--threads 2] [--only NAME,...] [--zoo]

(`FERROJIT_BIN=path` picks another ferrojit binary.)

Models (issue 7): a scalar control-flow loop (200000 iterations), an LSTM cell unrolled over
100 steps (hidden 32), resnet18 at batch 1 and 224x224, a 2-layer encoder of BERT-base width at
sequence 128; (issue 3) a 1024x1024 float32 matrix multiply and two ResNet-style 3x3 conv2d
shapes; `--zoo` adds the test zoo. Built with fixed seeds into target/bench/.
For each model it measures, in the same run and on the same inputs:
- load: `torch.jit.load(path)` in this process against `load_ms` of `ferrojit bench`;
- forward: the median time of one `forward` call after warm-up, in PyTorch (under
  `torch.no_grad()`, `torch.set_num_threads(T)`) against `median_ms` of `ferrojit bench
  --threads T`.
Each round measures both sides, alternating which goes first; the table reports the median over
rounds, and the ratio ferrojit / PyTorch (below 1: ferrojit is faster). Before timing, the
script checks that `ferrojit run` gives PyTorch's result on the same inputs; a model whose
results differ or that ferrojit cannot run is reported as such and not timed.
Results go to BENCHMARKS.md (the part between the generated-table markers).

`--pt2` (issue 18, item 8) times torch.export programs instead: resnet18 and the BERT-width
encoder above, exported from one module object with `torch.export.export` (eval mode) and saved
with `torch.export.save`, next to the TorchScript trace of the same module, in target/bench/pt2/.
It first compares `ep.module()`'s result with ferrojit's `.pt2` and `.pt` runs and AOTInductor's
(rtol 1e-4, atol 1e-5), then times, each round in a different order: `ferrojit bench X.pt2`,
`ferrojit bench X.pt`, `torch.export.load(X.pt2).module()` under no_grad, and AOTInductor
(`torch._inductor.aoti_compile_and_package` once, cached as NAME.aoti.pt2, then
`aoti_load_package`; a failure to compile is reported as text; `--pt2-skip-aoti` leaves it
out). Load: `torch.export.load` against ferrojit's `load_ms`. Its table goes between the
`--pt2` markers of BENCHMARKS.md.

`--onnx` (issue 22, item 4) times nine models in four runtimes in one run: resnet18, the
BERT-width encoder, mobilenet_v3_large, efficientnet_b0 and vit_b_16 at batch 1, a
GPT-2-width decoder generating 32 tokens greedily with a key/value cache, a 2-layer `nn.LSTM`,
and the scalar and LSTM-cell loops above (bench/onnx_models.py builds the new ones, with fixed
seeds and random weights). The runtimes: libtorch (the TorchScript archive under torch.jit),
ferrojit (`ferrojit bench` on the same archive), ONNX Runtime and OpenVINO (both on an ONNX
file exported with `torch.onnx.export` from an eager copy built with the same seed, so the
same weights; the LSTM cell loop's export unrolls its 100 steps, the scalar loop is exported
from the scripted function as an ONNX Loop, and the decoder's export is one decode step that
a Python loop drives, its overhead included in their time). Before timing, each runtime's
result on the same inputs is compared with PyTorch's (rtol 1e-4, the model's atol; the
decoder's 32 token ids exactly); a runtime that differs, fails, or is not installed is
reported and not timed. Each thread count in `--threads` (default for this mode "1,2") sets
`torch.set_num_threads`, `--threads`, ONNX Runtime's intra-op threads and OpenVINO's
`INFERENCE_NUM_THREADS`. The runners take turns in a different order each round; the ratio
table (ferrojit / each other runtime, with issue 22's item-5 targets) is printed, and written
between the `--onnx` markers of BENCHMARKS.md only with `--write-report`. It needs the
packages of bench/requirements.txt (`.venv/bin/pip install -r bench/requirements.txt`):
onnx, onnxscript, onnxruntime and openvino besides torch and torchvision. The documented run:

    .venv/bin/python bench/compare.py --onnx --rounds 3 --write-report

`--train` (issue 23, item 9) times one training step (forward, loss, `torch.autograd.grad`, SGD
update under no_grad) of a small batch-norm CNN and of the LSTM cell loop in PyTorch eager,
PyTorch's TorchScript runtime and ferrojit (`ferrojit bench --grad --method train_step`), after
checking that a few steps in each give eager's parameters; and ferrojit's forward with grad
recording against its inference forward. bench/train_step.py has the models and the details;
the table goes between the `--train` markers of BENCHMARKS.md only with `--write-report`.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
ZOO = REPO / "tests" / "fixtures" / "zoo"
WORK = REPO / "target" / "bench"
FERROJIT = Path(os.environ.get("FERROJIT_BIN", REPO / "target" / "release" / "ferrojit"))
REPORT = REPO / "BENCHMARKS.md"
BEGIN = "<!-- generated by bench/compare.py: begin -->"
END = "<!-- generated by bench/compare.py: end -->"


def resnet18_model():
    """torchvision's resnet18 with random weights (seed 0) in eval mode, and its input: batch 1
    at 224x224."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    return model, (torch.randn(1, 3, 224, 224),)


class BertLayer(nn.Module):
    """One encoder layer of BERT-base width (768 hidden, 12 heads, 3072 feed-forward), written
    out as BERT does it."""

    def __init__(self, d=768, heads=12, ff=3072):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        split = lambda t: t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / (d // self.heads) ** 0.5
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        context = context.transpose(1, 2).reshape(b, s, d)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


def bert_encoder_model():
    """Two BertLayers (random weights, seed 0) in eval mode, and the input: batch 1, sequence
    128."""
    torch.manual_seed(0)
    encoder = nn.Sequential(BertLayer(), BertLayer()).eval()
    return encoder, (torch.randn(1, 128, 768),)


def build_models():
    """The benchmark models of issue 7, built with fixed seeds into target/bench/."""
    WORK.mkdir(parents=True, exist_ok=True)
    models = {}

    def save(name, archive, inputs):
        path = WORK / f"{name}.pt"
        archive.save(str(path))
        torch.save(inputs, str(WORK / f"{name}.inputs.pt"))
        models[name] = (path, WORK / f"{name}.inputs.pt")

    def cached(name):
        path = WORK / f"{name}.pt"
        inputs = WORK / f"{name}.inputs.pt"
        if path.exists() and inputs.exists():
            models[name] = (path, inputs)
            return True
        return False

    # A scalar control-flow loop: interpreter dispatch with no tensors at all.
    if not cached("scalar_loop"):
        @torch.jit.script
        def scalar_loop(n: int) -> int:
            total = 0
            for i in range(n):
                if i % 3 == 0:
                    total += i * 2
                else:
                    total -= 1
            return total

        save("scalar_loop", scalar_loop, (200000,))

    # An LSTM cell unrolled over 100 steps, hidden size 32: small-tensor dispatch.
    if not cached("lstm_cell_loop"):
        class LstmLoop(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = nn.LSTMCell(32, 32)

            def forward(self, xs: torch.Tensor) -> torch.Tensor:
                h = torch.zeros(xs.size(1), 32)
                c = torch.zeros(xs.size(1), 32)
                for t in range(xs.size(0)):
                    h, c = self.cell(xs[t], (h, c))
                return h

        torch.manual_seed(0)
        save("lstm_cell_loop", torch.jit.script(LstmLoop().eval()), (torch.randn(100, 1, 32),))

    # resnet18, batch 1 at 224x224 (random weights, traced).
    if not cached("resnet18"):
        model, example = resnet18_model()
        with torch.no_grad():
            save("resnet18", torch.jit.trace(model, example), example)

    # A 2-layer encoder of BERT-base width at sequence length 128, traced.
    if not cached("bert_encoder"):
        encoder, example = bert_encoder_model()
        with torch.no_grad():
            save("bert_encoder", torch.jit.trace(encoder, example), example)
    # Issue 3's kernels: 1024x1024 float32 matrix multiply, and ResNet-style conv2d shapes.
    if not cached("matmul_1024"):
        @torch.jit.script
        def matmul_1024(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.mm(a, b)

        torch.manual_seed(0)
        save("matmul_1024", matmul_1024, (torch.randn(1024, 1024), torch.randn(1024, 1024)))
    for name, channels, size in [("conv2d_64x56", 64, 56), ("conv2d_256x14", 256, 14)]:
        if not cached(name):
            torch.manual_seed(0)
            conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False).eval()
            example = torch.randn(1, channels, size, size)
            with torch.no_grad():
                save(name, torch.jit.trace(conv, example), (example,))
    return models


def peak_memory(path, inputs):
    """Peak resident set (MiB) of one process that loads the model and runs it once:
    `ferrojit run`, and a Python process doing torch.jit.load + forward (its number includes
    the Python interpreter and libtorch's own libraries)."""
    script = (
        "import resource, sys, torch\n"
        "torch.set_num_threads(2)\n"
        "m = torch.jit.load(sys.argv[1]); a = torch.load(sys.argv[2])\n"
        "with torch.no_grad(): m(*a)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    pytorch = subprocess.run(
        [sys.executable, "-c", script, str(path), str(inputs)],
        capture_output=True, text=True, check=True,
    )
    pytorch_kib = int(pytorch.stdout.strip().splitlines()[-1])
    with tempfile.TemporaryDirectory() as scratch:
        measure = subprocess.run(
            [
                sys.executable, "-c",
                "import resource, subprocess, sys\n"
                "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n",
                str(FERROJIT), "run", str(path), "--inputs", str(inputs),
                "--output", str(Path(scratch) / "out.pt"),
            ],
            capture_output=True, text=True, check=True,
        )
    ferrojit_kib = int(measure.stdout.strip().splitlines()[-1])
    return ferrojit_kib / 1024, pytorch_kib / 1024


def zoo_models():
    models = {}
    for path in sorted(ZOO.glob("*.pt")):
        if path.name.count(".") != 1:
            continue
        inputs = path.with_name(path.stem + ".inputs.pt")
        if inputs.exists():
            models[path.stem] = (path, inputs)
    return models


# Absolute tolerance for models whose outputs are long float32 reductions (a 1024-term dot
# product of standard normals has magnitude ~32; summation order alone moves it by ~1e-5).
ATOL = {"matmul_1024": 1e-3, "bert_encoder": 1e-4}


def same(a, b, atol=1e-5):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.is_floating_point():
            return bool(torch.allclose(a, b, rtol=1e-4, atol=atol, equal_nan=True))
        return bool(torch.equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y, atol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], atol) for k in a)
    return a == b


def pytorch_result(path, inputs):
    module = torch.jit.load(str(path))
    args = torch.load(str(inputs))
    with torch.no_grad():
        return module(*args)


def check_ferrojit(path, inputs):
    """None when ferrojit gives PyTorch's result, else a short reason."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out.pt"
        run = subprocess.run(
            [str(FERROJIT), "run", str(path), "--inputs", str(inputs), "--output", str(out)],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            return "ferrojit fails: " + run.stderr.strip().splitlines()[-1][:160]
        ours = torch.load(str(out))
    theirs = pytorch_result(path, inputs)
    if isinstance(theirs, tuple) and hasattr(theirs, "_fields"):
        theirs = tuple(theirs)
    atol = ATOL.get(Path(path).stem, 1e-5)
    if same(ours, theirs, atol):
        return None
    if isinstance(ours, torch.Tensor) and isinstance(theirs, torch.Tensor) and ours.shape == theirs.shape:
        return f"results differ from PyTorch (max abs difference {(ours - theirs).abs().max():.3g})"
    return "results differ from PyTorch"


def time_pytorch(path, inputs, iters, warmup, threads):
    torch.set_num_threads(threads)
    start = time.perf_counter()
    module = torch.jit.load(str(path))
    load_ms = (time.perf_counter() - start) * 1000
    args = torch.load(str(inputs))
    times = []
    with torch.no_grad():
        for _ in range(max(warmup, 1)):
            module(*args)
        for _ in range(iters):
            start = time.perf_counter()
            module(*args)
            times.append((time.perf_counter() - start) * 1000)
    return load_ms, statistics.median(times)


def time_ferrojit(path, inputs, iters, warmup, threads):
    run = subprocess.run(
        [
            str(FERROJIT), "bench", str(path), "--inputs", str(inputs),
            "--iters", str(iters), "--warmup", str(warmup), "--threads", str(threads),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    values = dict(
        line.split("=", 1) for line in run.stdout.splitlines() if "=" in line
    )
    return float(values["load_ms"]), float(values["median_ms"])


# Issue 7's targets: ferrojit time / libtorch time (lower is better).
TARGETS = {
    "scalar_loop": 0.5,
    "lstm_cell_loop": 1.0,
    "resnet18": 1.5,
    "bert_encoder": 1.5,
    # Issue 3: GEMM at >= 70% of libtorch's GFLOPS means a time ratio <= 1 / 0.7.
    "matmul_1024": round(1 / 0.7, 2),
    "conv2d_64x56": 1.5,
    "conv2d_256x14": 1.5,
}
LOAD_TARGET = ("resnet18", 0.1)
MEMORY_TARGET = ("resnet18", 1.0)


# --- `--pt2`: torch.export programs (issue 18, item 8) -----------------------------------

PT2_WORK = WORK / "pt2"
PT2_BEGIN = "<!-- generated by bench/compare.py --pt2: begin -->"
PT2_END = "<!-- generated by bench/compare.py --pt2: end -->"
PT2_MODELS = {"resnet18": resnet18_model, "bert_encoder": bert_encoder_model}
# Issue 18's targets, as ratios of times (lower is better).
PT2_TARGETS = {"vs_torchscript": 1.0, "vs_ep_module": 0.8, "load": 0.05}
PT2_SIDES = ["ferrojit_pt2", "ferrojit_pt", "ep_module", "aoti"]


def build_pt2_models():
    """Each model once, from one module object: `torch.export.export` (eval mode) saved with
    `torch.export.save` as NAME.pt2, the same module traced as NAME.pt, and its inputs, in
    target/bench/pt2/. Rebuilt only when a file is missing."""
    PT2_WORK.mkdir(parents=True, exist_ok=True)
    models = {}
    for name, make in PT2_MODELS.items():
        files = {
            "pt2": PT2_WORK / f"{name}.pt2",
            "pt": PT2_WORK / f"{name}.pt",
            "inputs": PT2_WORK / f"{name}.inputs.pt",
        }
        if not all(path.exists() for path in files.values()):
            model, example = make()
            with torch.no_grad():
                torch.jit.trace(model, example).save(str(files["pt"]))
            torch.export.save(torch.export.export(model, example), str(files["pt2"]))
            torch.save(example, str(files["inputs"]))
        models[name] = files
    return models


def aoti_package(name, program):
    """Compiles the exported program with AOTInductor once (CPU; g++ builds a shared library
    that links libtorch) into target/bench/pt2/NAME.aoti.pt2: (path, None), or (None, the
    failure's text)."""
    import torch._inductor

    package = PT2_WORK / f"{name}.aoti.pt2"
    if package.exists():
        return package, None
    try:
        start = time.perf_counter()
        torch._inductor.aoti_compile_and_package(
            torch.export.load(str(program)), package_path=str(package)
        )
        print(f"{name}: AOTInductor compiled in {time.perf_counter() - start:.0f} s", flush=True)
        return package, None
    except Exception as error:  # the failure is a result to report, whatever it is
        lines = [line for line in str(error).splitlines() if line.strip()]
        text = f"{type(error).__name__}: " + (lines[-1] if lines else "")
        return None, text[:300]


def max_difference(a, b):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
        return f"max abs difference {(a.double() - b.double()).abs().max():.3g}"
    return "different structure"


def ferrojit_output(path, inputs):
    """`ferrojit run`'s result, or the text of its last error line."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out.pt"
        run = subprocess.run(
            [str(FERROJIT), "run", str(path), "--inputs", str(inputs), "--output", str(out)],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            lines = run.stderr.strip().splitlines() or ["(no message)"]
            return None, "ferrojit fails: " + lines[-1][:160]
        return torch.load(str(out)), None


def check_pt2_results(files, aoti):
    """PyTorch's result for the exported program (`ep.module()` under no_grad) against
    ferrojit's `.pt2` and `.pt` runs and AOTInductor's, at rtol 1e-4, atol 1e-5. Returns
    {side: None or the reason it differs}."""
    args = torch.load(str(files["inputs"]))
    with torch.no_grad():
        expected = torch.export.load(str(files["pt2"])).module()(*args)
    problems = {"ep_module": None}
    for side, path in [("ferrojit_pt2", files["pt2"]), ("ferrojit_pt", files["pt"])]:
        ours, failure = ferrojit_output(path, files["inputs"])
        if failure:
            problems[side] = failure
        elif not same(ours, expected):
            problems[side] = "results differ from PyTorch (" + max_difference(ours, expected) + ")"
        else:
            problems[side] = None
    if aoti is not None:
        with torch.no_grad():
            theirs = torch._inductor.aoti_load_package(str(aoti))(*args)
        if isinstance(theirs, (list, tuple)) and len(theirs) == 1:
            theirs = theirs[0]
        problems["aoti"] = (
            None if same(theirs, expected)
            else "results differ from ep.module() (" + max_difference(theirs, expected) + ")"
        )
    return problems


def time_in_process(load, inputs, iters, warmup, threads):
    """(load ms, median forward ms) of a PyTorch runner: `load()` returns the callable."""
    torch.set_num_threads(threads)
    start = time.perf_counter()
    model = load()
    load_ms = (time.perf_counter() - start) * 1000
    args = torch.load(str(inputs))
    times = []
    with torch.no_grad():
        for _ in range(max(warmup, 1)):
            model(*args)
        for _ in range(iters):
            start = time.perf_counter()
            model(*args)
            times.append((time.perf_counter() - start) * 1000)
    return load_ms, statistics.median(times)


def time_ep_module(files, iters, warmup, threads):
    """`torch.export.load` (timed as the load), then `.module()` called under no_grad."""
    start = time.perf_counter()
    program = torch.export.load(str(files["pt2"]))
    load_ms = (time.perf_counter() - start) * 1000
    _, run_ms = time_in_process(program.module, files["inputs"], iters, warmup, threads)
    return load_ms, run_ms


def main_pt2(args):
    threads = int(args.threads.split(",")[0])
    torch.set_num_threads(threads)
    models = build_pt2_models()
    if args.only:
        models = {k: v for k, v in models.items() if k in set(args.only.split(","))}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()
    rows = []
    notes = []
    for name, files in models.items():
        if args.pt2_skip_aoti:
            aoti, aoti_failure = None, None
            notes.append(f"{name}: AOTInductor left out (--pt2-skip-aoti)")
        else:
            aoti, aoti_failure = aoti_package(name, files["pt2"])
        if aoti_failure:
            notes.append(f"{name}: AOTInductor failed: {aoti_failure}")
            print(notes[-1], flush=True)
        problems = check_pt2_results(files, aoti)
        sides = [side for side in PT2_SIDES if side in problems and problems[side] is None]
        for side, problem in problems.items():
            if problem:
                notes.append(f"{name}: {side} not timed: {problem}")
                print(notes[-1], flush=True)
        timers = {
            "ferrojit_pt2": lambda: time_ferrojit(
                files["pt2"], files["inputs"], args.iters, args.warmup, threads
            ),
            "ferrojit_pt": lambda: time_ferrojit(
                files["pt"], files["inputs"], args.iters, args.warmup, threads
            ),
            "ep_module": lambda: time_ep_module(files, args.iters, args.warmup, threads),
            "aoti": lambda: time_in_process(
                lambda: torch._inductor.aoti_load_package(str(aoti)),
                files["inputs"], args.iters, args.warmup, threads,
            ),
        }
        loads = {side: [] for side in sides}
        runs = {side: [] for side in sides}
        for round_index in range(args.rounds):
            # Each round starts with a different side, so none is always first or last.
            shift = round_index % len(sides)
            for side in sides[shift:] + sides[:shift]:
                load_ms, run_ms = timers[side]()
                loads[side].append(load_ms)
                runs[side].append(run_ms)
        row = {"name": name}
        for side in sides:
            row[f"load_{side}"] = statistics.median(loads[side])
            row[f"run_{side}"] = statistics.median(runs[side])
            row[f"runs_{side}"] = runs[side]
        rows.append(row)
        print(
            f"{name}: forward ms "
            + ", ".join(f"{side} {row[f'run_{side}']:.3f}" for side in sides)
            + "; load ms "
            + ", ".join(f"{side} {row[f'load_{side}']:.2f}" for side in sides),
            flush=True,
        )
    load_after = os.getloadavg()
    write_pt2_report(args, threads, started, load_before, load_after, rows, notes)


def write_pt2_report(args, threads, started, load_before, load_after, rows, notes):
    def ms(row, key, digits=3):
        return f"{row[key]:.{digits}f}" if key in row else "—"

    def ratio(row, top, bottom, target=None):
        if top not in row or bottom not in row:
            return "—", ""
        value = row[top] / row[bottom]
        verdict = "" if target is None else ("met" if value <= target else "missed")
        return f"{value:.2f}", verdict

    lines = [
        PT2_BEGIN,
        "",
        f"Measured {started} with torch {torch.__version__} on {platform.machine()}, "
        f"{os.cpu_count()} cores, {threads} threads (`torch.set_num_threads({threads})`, "
        f"`--threads {threads}`); {args.rounds} rounds of {args.iters} timed forward calls after "
        f"{args.warmup} warm-up calls, the four runners in a different order each round; each "
        "number is the median over rounds of the per-round median. Load average "
        f"{load_before[0]:.1f} at the start and {load_after[0]:.1f} at the end"
        + (
            f"; OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}."
            if "OMP_WAIT_POLICY" in os.environ else "."
        ),
        "",
        "| model | ferrojit .pt2 ms | ferrojit .pt ms | ep.module() ms | AOTInductor ms "
        f"| .pt2 / .pt (≤ {PT2_TARGETS['vs_torchscript']}) "
        f"| .pt2 / ep.module() (≤ {PT2_TARGETS['vs_ep_module']}) | .pt2 / AOTInductor |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        own, own_verdict = ratio(row, "run_ferrojit_pt2", "run_ferrojit_pt",
                                 PT2_TARGETS["vs_torchscript"])
        eager, eager_verdict = ratio(row, "run_ferrojit_pt2", "run_ep_module",
                                     PT2_TARGETS["vs_ep_module"])
        aoti, _ = ratio(row, "run_ferrojit_pt2", "run_aoti")
        lines.append(
            f"| {row['name']} | {ms(row, 'run_ferrojit_pt2')} | {ms(row, 'run_ferrojit_pt')} "
            f"| {ms(row, 'run_ep_module')} | {ms(row, 'run_aoti')} "
            f"| {own} {own_verdict} | {eager} {eager_verdict} | {aoti} |"
        )
    lines += [
        "",
        "Load: ferrojit's `load_ms` (open the archive, read the weights, prepare the program) "
        "against `torch.export.load` in this process (AOTInductor's `aoti_load_package` for "
        "reference):",
        "",
        "| model | ferrojit .pt2 load ms | torch.export.load ms "
        f"| ratio (≤ {PT2_TARGETS['load']}) | ferrojit .pt load ms | aoti_load_package ms |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        value, verdict = ratio(row, "load_ferrojit_pt2", "load_ep_module", PT2_TARGETS["load"])
        lines.append(
            f"| {row['name']} | {ms(row, 'load_ferrojit_pt2', 2)} | {ms(row, 'load_ep_module', 2)} "
            f"| {value} {verdict} | {ms(row, 'load_ferrojit_pt', 2)} | {ms(row, 'load_aoti', 2)} |"
        )
    lines += [
        "",
        "The fastest round of each runner (the least disturbed by other processes on a busy "
        "machine; ms, and the same ratios):",
        "",
        "| model | ferrojit .pt2 | ferrojit .pt | ep.module() | AOTInductor | .pt2 / .pt "
        "| .pt2 / ep.module() | .pt2 / AOTInductor |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        fastest = {
            f"run_{side}": min(row[f"runs_{side}"]) for side in PT2_SIDES if f"runs_{side}" in row
        }
        cells = [ms(fastest, f"run_{side}", 1) for side in PT2_SIDES]
        ratios = [
            ratio(fastest, "run_ferrojit_pt2", f"run_{side}")[0] for side in PT2_SIDES[1:]
        ]
        lines.append(f"| {row['name']} | " + " | ".join(cells + ratios) + " |")
    lines += ["", "Per-round medians (ms), for the spread:", ""]
    for row in rows:
        for side in PT2_SIDES:
            if f"runs_{side}" in row:
                values = ", ".join(f"{v:.1f}" for v in row[f"runs_{side}"])
                lines.append(f"- {row['name']} {side}: {values}")
    if notes:
        lines += ["", "Not timed or failed:", ""]
        lines += [f"- {note}" for note in notes]
    lines += ["", PT2_END]
    table = "\n".join(lines)
    text = REPORT.read_text() if REPORT.exists() else ""
    if PT2_BEGIN in text and PT2_END in text:
        head, rest = text.split(PT2_BEGIN, 1)
        _, tail = rest.split(PT2_END, 1)
        text = head + table + tail
    else:
        text = text + "\n" + table + "\n"
    REPORT.write_text(text)
    print(f"wrote {REPORT}")


# --- `--onnx`: ONNX Runtime and OpenVINO next to libtorch and ferrojit (issue 22) ------------

ONNX_WORK = WORK / "onnx"
ONNX_BEGIN = "<!-- generated by bench/compare.py --onnx: begin -->"
ONNX_END = "<!-- generated by bench/compare.py --onnx: end -->"
ONNX_SIDES = ["libtorch", "ferrojit", "onnxruntime", "openvino"]
# The models, in table order. "main": the TorchScript archive is the one `build_models` writes
# for the main benchmark; "trace" / "script": written here into target/bench/onnx/. "generate":
# the ONNX runtimes run the exported decode step in a Python loop (bench/onnx_models.py).
ONNX_MODELS = {
    "resnet18": {"archive": "main"},
    "bert_encoder": {"archive": "main"},
    "mobilenet_v3_large": {"archive": "trace"},
    "efficientnet_b0": {"archive": "trace"},
    "vit_b_16": {"archive": "trace"},
    "gpt2_decoder": {"archive": "script", "driver": "generate"},
    "lstm_2layer": {"archive": "trace"},
    "lstm_cell_loop": {"archive": "main"},
    "scalar_loop": {"archive": "main"},
}
# Slow models time fewer calls so that `--rounds 3` of the whole table stays near 15 minutes
# on 2 cores: at most this many timed calls, after one warm-up call (two for libtorch, whose
# profiling executor optimizes the graph on its second call), per runner and round.
ONNX_ITERS = {
    "resnet18": 10,
    "bert_encoder": 10,
    "efficientnet_b0": 10,
    "vit_b_16": 3,
    "gpt2_decoder": 2,
    # ONNX Runtime's Loop takes about 1.4 s for the 200000 iterations.
    "scalar_loop": 5,
}
# Absolute tolerance of each model's comparison with PyTorch (rtol is 1e-4 for all): deep
# float32 networks summed in another order (another GEMM, Winograd, fused attention) drift by
# more than 1e-5 at outputs of magnitude ~1.
ONNX_ATOL = {
    "bert_encoder": 1e-4,
    "mobilenet_v3_large": 1e-4,
    "efficientnet_b0": 1e-4,
    "vit_b_16": 1e-4,
    "lstm_2layer": 1e-5,
}
# Issue 22, item 5's targets for ferrojit / the other runtime (lower is better). "fastest_onnx"
# is the faster of ONNX Runtime and OpenVINO; every model not named here has "≤ 1.0 ×
# libtorch".
ONNX_TARGETS = {
    ("resnet18", "libtorch"): 0.8,
    ("resnet18", "fastest_onnx"): 1.0,
    ("bert_encoder", "libtorch"): 0.8,
    ("bert_encoder", "onnxruntime"): 1.0,
    ("lstm_cell_loop", "libtorch"): 0.33,
    ("scalar_loop", "libtorch"): 0.2,
}


def onnx_target(name, other):
    if (name, other) in ONNX_TARGETS:
        return ONNX_TARGETS[(name, other)]
    if other == "libtorch":
        return 1.0
    return None


def onnx_eager_model(name, archive):
    """The eager module and example inputs of one `--onnx` model (seeded, so the same weights
    as its TorchScript archive)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import onnx_models

    if name == "resnet18":
        return resnet18_model()
    if name == "bert_encoder":
        return bert_encoder_model()
    if name == "lstm_cell_loop":
        return onnx_models.lstm_cell_loop_eager(archive), tuple(torch.load(str(archive.with_name(
            "lstm_cell_loop.inputs.pt"))))
    return getattr(onnx_models, f"{name}_model")()


def export_onnx(name, model, args, onnx_path):
    """Writes NAME.onnx from the eager model; returns None, or why it cannot be exported."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import onnx_models

    try:
        if name == "gpt2_decoder":
            onnx_models.export_gpt_step(model, onnx_path)
        else:
            torch.onnx.export(
                model, args, str(onnx_path), input_names=["input"],
                output_names=["output"], opset_version=17, dynamo=False,
            )
        return None
    except Exception as error:  # the exporter's refusal is the result to report
        if onnx_path.exists():
            onnx_path.unlink()
        lines = [line for line in str(error).splitlines() if line.strip()]
        return f"{type(error).__name__}: {lines[0] if lines else ''}"[:240]


def build_onnx_models():
    """Per model: the TorchScript archive and inputs (the main benchmark's, from
    `build_models`, or written here into target/bench/onnx/), and NAME.onnx beside them,
    exported from an eager copy made by the same constructor and seed. The eager copy's result
    is checked against the archive's, so the files hold the same weights. scalar_loop has no
    eager form (a traced loop would fold into its result): the scripted function itself is
    exported, which the TorchScript-based exporter turns into an ONNX Loop. A failed export is
    kept (NAME.onnx-failed.txt) as the reason the ONNX runtimes do not run the model."""
    ONNX_WORK.mkdir(parents=True, exist_ok=True)
    traced = build_models()
    models = {}
    for name, spec in ONNX_MODELS.items():
        onnx_path = ONNX_WORK / f"{name}.onnx"
        problem_path = ONNX_WORK / f"{name}.onnx-failed.txt"
        if spec["archive"] == "main":
            path, inputs = traced[name]
        else:
            path, inputs = ONNX_WORK / f"{name}.pt", ONNX_WORK / f"{name}.inputs.pt"
        files = {"pt": path, "inputs": inputs, "onnx": onnx_path, "spec": spec}
        models[name] = files
        if name == "scalar_loop":
            if not onnx_path.exists() and not problem_path.exists():
                problem = export_onnx(name, torch.jit.load(str(path)), tuple(torch.load(
                    str(inputs))), onnx_path)
                if problem:
                    problem_path.write_text(problem)
            if problem_path.exists():
                files["onnx_problem"] = "not exportable: " + problem_path.read_text()
            continue
        model, example = onnx_eager_model(name, path)
        with torch.no_grad():
            if not (path.exists() and inputs.exists()):
                archive = (
                    torch.jit.script(model) if spec["archive"] == "script"
                    else torch.jit.trace(model, example)
                )
                archive.save(str(path))
                torch.save(example, str(inputs))
            args = tuple(torch.load(str(inputs)))
            eager = model(*args)
            if not same(eager, pytorch_result(path, inputs), ONNX_ATOL.get(name, 1e-5)):
                raise SystemExit(f"{name}: the eager copy differs from the saved archive")
        # Exported with gradients on: under no_grad, nn.MultiheadAttention in eval mode takes
        # its fused fast path (aten::_native_multi_head_attention, as vit_b_16's trace holds),
        # which the ONNX exporter has no symbolic for.
        if not onnx_path.exists() and not problem_path.exists():
            problem = export_onnx(name, model, args, onnx_path)
            if problem:
                problem_path.write_text(problem)
        if problem_path.exists():
            files["onnx_problem"] = "export fails: " + problem_path.read_text()
    return models


def onnx_runners(files, threads):
    """{side: (load, run) or the reason it cannot run}: `load()` builds the runtime's model,
    `run(model, numpy inputs)` returns its result as a tensor (for gpt2_decoder, the whole
    32-token generation driven from Python)."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import onnx_models

    def drive(call, arrays):
        if files["spec"].get("driver") == "generate":
            return torch.from_numpy(onnx_models.generate_with_steps(call, arrays))
        return torch.from_numpy(np.asarray(call(arrays)[0]))

    runners = {}
    if "onnx_problem" in files:
        return {side: files["onnx_problem"] for side in ("onnxruntime", "openvino")}
    try:
        import onnxruntime

        def ort_load():
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
            session = onnxruntime.InferenceSession(
                str(files["onnx"]), options, providers=["CPUExecutionProvider"]
            )
            names = [i.name for i in session.get_inputs()]
            return lambda arrays: session.run(None, dict(zip(names, arrays)))

        runners["onnxruntime"] = (ort_load, drive)
    except ImportError as error:
        runners["onnxruntime"] = f"not installed ({error})"
    try:
        import openvino

        def ov_load():
            compiled = openvino.Core().compile_model(
                str(files["onnx"]), "CPU",
                # f32: on CPUs with bf16 or AMX OpenVINO would otherwise compute in bf16.
                {
                    "INFERENCE_NUM_THREADS": threads,
                    "PERFORMANCE_HINT": "LATENCY",
                    "INFERENCE_PRECISION_HINT": "f32",
                },
            )
            request = compiled.create_infer_request()

            def call(arrays):
                result = request.infer(list(arrays))
                return [result[output] for output in compiled.outputs]

            return call

        runners["openvino"] = (ov_load, drive)
    except ImportError as error:
        runners["openvino"] = f"not installed ({error})"
    return runners


def onnx_arrays(inputs):
    """The saved positional inputs as numpy arrays (an int, such as scalar_loop's count, as a
    0-d int64 array: the exported graph takes it as a tensor)."""
    import numpy as np

    return [
        a.numpy() if isinstance(a, torch.Tensor) else np.asarray(a, dtype=np.int64)
        for a in torch.load(str(inputs))
    ]


def time_runtime(load, run, inputs, iters, warmup):
    """(load ms, median forward ms) of an ONNX runtime on the benchmark inputs."""
    arrays = onnx_arrays(inputs)
    start = time.perf_counter()
    model = load()
    load_ms = (time.perf_counter() - start) * 1000
    for _ in range(max(warmup, 1)):
        run(model, arrays)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        run(model, arrays)
        times.append((time.perf_counter() - start) * 1000)
    return load_ms, statistics.median(times)


def onnx_check_ferrojit(files, expected, atol):
    """None when `ferrojit run` gives PyTorch's result, else a short reason."""
    ours, failure = ferrojit_output(files["pt"], files["inputs"])
    if failure:
        return failure
    if same(ours, expected, atol):
        return None
    return "results differ from PyTorch (" + max_difference(ours, expected) + ")"


def main_onnx(args):
    threads_list = [int(t) for t in (args.threads if args.threads_given else "1,2").split(",")]
    models = build_onnx_models()
    if args.only:
        models = {k: v for k, v in models.items() if k in set(args.only.split(","))}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()
    rows, notes = [], []
    for name, files in models.items():
        atol = ONNX_ATOL.get(name, 1e-5)
        iters = min(args.iters, ONNX_ITERS.get(name, args.iters))
        warmup = min(args.warmup, 1) if name in ONNX_ITERS else args.warmup
        expected = pytorch_result(files["pt"], files["inputs"])
        # The ONNX graphs return tensors: scalar_loop's int comes back as a 0-d int64 array.
        onnx_expected = torch.tensor(expected) if isinstance(expected, int) else expected
        ferrojit_problem = (
            onnx_check_ferrojit(files, expected, atol) if FERROJIT.exists()
            else f"no binary at {FERROJIT}"
        )
        for threads in threads_list:
            runners = onnx_runners(files, threads)
            timers = {
                "libtorch": lambda: time_pytorch(
                    files["pt"], files["inputs"], iters, max(warmup, 2), threads
                ),
            }
            if ferrojit_problem is None:
                timers["ferrojit"] = lambda: time_ferrojit(
                    files["pt"], files["inputs"], iters, warmup, threads
                )
            else:
                notes.append(f"{name}: ferrojit not timed: {ferrojit_problem}")
            for side in ["onnxruntime", "openvino"]:
                runner = runners[side]
                if isinstance(runner, str):
                    notes.append(f"{name}: {side} not timed: {runner}")
                    continue
                load, run = runner
                try:
                    theirs = run(load(), onnx_arrays(files["inputs"]))
                except Exception as error:  # a runtime's failure is a result to report
                    notes.append(f"{name}: {side} fails: {type(error).__name__}: {error}"[:300])
                    continue
                if not same(theirs, onnx_expected, atol):
                    notes.append(
                        f"{name} T={threads}: {side} not timed: results differ from PyTorch "
                        f"({max_difference(theirs, onnx_expected)})"
                    )
                    continue
                timers[side] = (
                    lambda load=load, run=run: time_runtime(
                        load, run, files["inputs"], iters, warmup
                    )
                )
            sides = [side for side in ONNX_SIDES if side in timers]
            runs = {side: [] for side in sides}
            for round_index in range(args.rounds):
                shift = round_index % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    runs[side].append(timers[side]()[1])
            row = {"name": name, "threads": threads, "iters": iters}
            for side in sides:
                row[side] = statistics.median(runs[side])
            rows.append(row)
            print(
                f"{name} T={threads}: forward ms "
                + ", ".join(f"{side} {row[side]:.3f}" for side in sides),
                flush=True,
            )
    notes = list(dict.fromkeys(notes))
    for note in notes:
        print(note, flush=True)
    load_after = os.getloadavg()
    table = onnx_table(args, started, load_before, load_after, rows, notes)
    print(table)
    if args.write_report:
        text = REPORT.read_text() if REPORT.exists() else ""
        if ONNX_BEGIN in text and ONNX_END in text:
            head, rest = text.split(ONNX_BEGIN, 1)
            _, tail = rest.split(ONNX_END, 1)
            text = head + table + tail
        else:
            text = text + "\n" + table + "\n"
        REPORT.write_text(text)
        print(f"wrote {REPORT}")


def onnx_table(args, started, load_before, load_after, rows, notes):
    """The `--onnx` report: forward times and ferrojit's ratio to each other runtime."""

    def cell(row, side):
        return f"{row[side]:.3f}" if side in row else "—"

    def ratio(row, other):
        if "ferrojit" not in row:
            return "—"
        if other == "fastest_onnx":
            present = [row[s] for s in ("onnxruntime", "openvino") if s in row]
            if not present:
                return "—"
            value = row["ferrojit"] / min(present)
        elif other in row:
            value = row["ferrojit"] / row[other]
        else:
            return "—"
        target = onnx_target(row["name"], other)
        if target is None:
            return f"{value:.2f}"
        return f"{value:.2f} ({'met' if value <= target else 'missed'} ≤ {target})"

    binary_note = ""
    if FERROJIT.exists():
        built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(FERROJIT.stat().st_mtime))
        binary_note = f"ferrojit binary: {FERROJIT} (built {built}). "
    reduced = ", ".join(
        f"{name} {count}" for name, count in ONNX_ITERS.items() if count < args.iters
    )
    lines = [
        ONNX_BEGIN,
        "",
        f"Measured {started} with torch {torch.__version__} on {platform.machine()}, "
        f"{os.cpu_count()} cores; {args.rounds} rounds of {args.iters} timed calls"
        + (f" (fewer for the slow models: {reduced}; one warm-up call for those, two for libtorch)" if reduced
           else "")
        + f" after {args.warmup} warm-up calls, the runners in a different order each round; "
        "each number is the median over rounds of the per-round median (ms). Load average "
        f"{load_before[0]:.1f} at the start and {load_after[0]:.1f} at the end. "
        + binary_note
        + "gpt2_decoder is one 32-token greedy generation: a TorchScript `forward` with the "
        "loop inside for libtorch and ferrojit; for ONNX Runtime and OpenVINO the exported "
        "decode step driven by a Python loop (its overhead included). Targets (issue 22, item "
        "5) in parentheses.",
        "",
        "| model | threads | libtorch | ferrojit | ONNX Runtime | OpenVINO "
        "| ferrojit / libtorch | ferrojit / ONNX Runtime | ferrojit / OpenVINO "
        "| ferrojit / fastest ONNX |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['threads']} | "
            + " | ".join(cell(row, side) for side in ONNX_SIDES)
            + " | "
            + " | ".join(
                ratio(row, other)
                for other in ("libtorch", "onnxruntime", "openvino", "fastest_onnx")
            )
            + " |"
        )
    if notes:
        lines += ["", "Not timed or failed:", ""] + [f"- {note}" for note in notes]
    lines += ["", ONNX_END]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", default=None)
    parser.add_argument("--only", default="")
    parser.add_argument("--zoo", action="store_true", help="also time the test zoo models")
    parser.add_argument(
        "--pt2", action="store_true",
        help="time resnet18 and bert_encoder exported with torch.export instead (issue 18)",
    )
    parser.add_argument(
        "--pt2-skip-aoti", action="store_true",
        help="with --pt2: leave AOTInductor out (compiling it takes minutes on 2 cores)",
    )
    parser.add_argument(
        "--onnx", action="store_true",
        help="time nine models in libtorch, ferrojit, ONNX Runtime and OpenVINO (issue 22; "
        "needs bench/requirements.txt)",
    )
    parser.add_argument(
        "--train", action="store_true",
        help="time a training step of a small CNN and the LSTM cell loop in PyTorch eager, "
        "PyTorch's TorchScript runtime and ferrojit (issue 23)",
    )
    parser.add_argument(
        "--write-report", action="store_true",
        help="with --onnx or --train: also write the table into BENCHMARKS.md",
    )
    args = parser.parse_args()
    args.threads_given = args.threads is not None
    if args.threads is None:
        args.threads = "2"
    if args.onnx:
        main_onnx(args)
        return
    if not FERROJIT.exists():
        sys.exit(f"build the CLI first: cargo build --release -p ferrojit-cli ({FERROJIT})")
    if args.pt2:
        main_pt2(args)
        return
    if args.train:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from train_step import main_train

        main_train(args, FERROJIT, WORK, REPORT)
        return
    thread_counts = [int(t) for t in args.threads.split(",")]

    models = build_models()
    if args.zoo:
        models.update(zoo_models())
    if args.only:
        wanted = set(args.only.split(","))
        models = {k: v for k, v in models.items() if k in wanted}

    rows = []
    skipped = []
    memory = None
    for name, (path, inputs) in models.items():
        problem = check_ferrojit(path, inputs)
        if problem:
            skipped.append((name, problem))
            print(f"{name}: not timed ({problem})", flush=True)
            continue
        for threads in thread_counts:
            loads = {"pytorch": [], "ferrojit": []}
            runs = {"pytorch": [], "ferrojit": []}
            for round_index in range(args.rounds):
                order = ["pytorch", "ferrojit"]
                if round_index % 2:
                    order.reverse()
                for side in order:
                    timer = time_pytorch if side == "pytorch" else time_ferrojit
                    load_ms, run_ms = timer(path, inputs, args.iters, args.warmup, threads)
                    loads[side].append(load_ms)
                    runs[side].append(run_ms)
            row = {
                "name": name,
                "threads": threads,
                "load_pt": statistics.median(loads["pytorch"]),
                "load_fj": statistics.median(loads["ferrojit"]),
                "run_pt": statistics.median(runs["pytorch"]),
                "run_fj": statistics.median(runs["ferrojit"]),
            }
            rows.append(row)
            print(
                f"{name} T={threads}: load {row['load_fj']:.2f} vs {row['load_pt']:.2f} ms, "
                f"forward {row['run_fj']:.3f} vs {row['run_pt']:.3f} ms",
                flush=True,
            )
        if name == MEMORY_TARGET[0]:
            samples = [peak_memory(path, inputs) for _ in range(3)]
            memory = (
                statistics.median(s[0] for s in samples),
                statistics.median(s[1] for s in samples),
            )
            print(f"{name} peak RSS: {memory[0]:.1f} vs {memory[1]:.1f} MiB", flush=True)

    def verdict(ratio, target):
        if target is None:
            return ""
        return "met" if ratio <= target else "missed"

    lines = [
        BEGIN,
        "",
        f"Measured with torch {torch.__version__} on {platform.machine()}, "
        f"{os.cpu_count()} cores; {args.rounds} rounds of {args.iters} timed forward calls "
        f"after {args.warmup} warm-up calls; each number is the median over rounds of the "
        "per-round median. Ratio = ferrojit / PyTorch (below 1: ferrojit faster).",
        "",
        "| model | threads | forward ferrojit ms | forward PyTorch ms | ratio | target | |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        ratio = row["run_fj"] / row["run_pt"]
        target = TARGETS.get(row["name"])
        lines.append(
            f"| {row['name']} | {row['threads']} | {row['run_fj']:.3f} | {row['run_pt']:.3f} "
            f"| {ratio:.2f} | {'' if target is None else f'≤ {target}'} "
            f"| {verdict(ratio, target)} |"
        )
    lines += [
        "",
        "Time to open the model (`torch.jit.load` against ferrojit's `load_module`; "
        "ferrojit compiles methods on first use, so its number excludes compilation):",
        "",
        "| model | threads | load ferrojit ms | load PyTorch ms | ratio | target | |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        ratio = row["load_fj"] / row["load_pt"]
        target = LOAD_TARGET[1] if row["name"] == LOAD_TARGET[0] else None
        lines.append(
            f"| {row['name']} | {row['threads']} | {row['load_fj']:.2f} | {row['load_pt']:.2f} "
            f"| {ratio:.2f} | {'' if target is None else f'≤ {target}'} "
            f"| {verdict(ratio, target)} |"
        )
    for row in rows:
        if row["name"] == "matmul_1024":
            flops = 2 * 1024 ** 3
            lines += [
                "",
                f"matmul_1024 at {row['threads']} threads: ferrojit "
                f"{flops / row['run_fj'] / 1e6:.1f} GFLOPS, PyTorch "
                f"{flops / row['run_pt'] / 1e6:.1f} GFLOPS "
                f"({row['run_pt'] / row['run_fj'] * 100:.0f}% of PyTorch's; target ≥ 70%).",
            ]
    if memory:
        ratio = memory[0] / memory[1]
        lines += [
            "",
            f"Peak resident memory of one process that loads {MEMORY_TARGET[0]} and runs it once "
            "(median of 3): ferrojit "
            f"{memory[0]:.1f} MiB, PyTorch {memory[1]:.1f} MiB (a Python process: its number "
            f"includes the interpreter and libtorch's libraries); ratio {ratio:.2f}, target "
            f"≤ {MEMORY_TARGET[1]}: {verdict(ratio, MEMORY_TARGET[1])}.",
        ]
    if skipped:
        lines += ["", "Not timed (ferrojit cannot run them yet, or gives other results):", ""]
        lines += [f"- {name}: {problem}" for name, problem in skipped]
    lines += ["", END]
    table = "\n".join(lines)

    text = REPORT.read_text() if REPORT.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + table + tail
    else:
        text = text + "\n" + table + "\n"
    REPORT.write_text(text)
    print(f"wrote {REPORT}")


if __name__ == "__main__":
    main()
