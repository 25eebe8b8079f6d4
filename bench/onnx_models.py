"""The models of `bench/compare.py --onnx` (issue 22, item 4) beyond the ones that compare.py's
main benchmark already builds, and the Python drivers the ONNX runtimes need for them.

Every constructor seeds the generator, so calling it twice gives the same weights: the
TorchScript archive (for libtorch and ferrojit) and the ONNX file (exported from the eager copy
with `torch.onnx.export`) hold the same numbers, which compare.py checks by comparing results.
Nothing is downloaded: torchvision's models are built with `weights=None`.

The GPT-2-width decoder (`GptDecoder`) generates 32 tokens greedily with a key/value cache:
- libtorch and ferrojit run `torch.jit.script(GptDecoder)`, whose `forward(prompt)` holds the
  whole loop (one prefill step over the prompt, then 31 one-token steps) in TorchScript;
- ONNX Runtime and OpenVINO run `GptStep` (one step: new token ids and the cache in, the last
  position's logits and the grown cache out), exported with dynamic token and cache lengths,
  and `generate_with_steps` drives it from Python: the argmax, the loop and the copies between
  steps are Python and numpy, and that overhead is inside their timings.
"""

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional

# GPT-2 small's width (768 hidden, 12 heads, 3072 feed-forward, 50257-token vocabulary, 1024
# positions); 2 layers, as the BERT-width encoder has, to keep a 32-token generation short.
GPT_WIDTH = 768
GPT_HEADS = 12
GPT_LAYERS = 2
GPT_VOCAB = 50257
GPT_POSITIONS = 1024
GPT_PROMPT = 8
GPT_NEW_TOKENS = 32


def torchvision_model(name):
    """A torchvision classifier with random weights (seed 0) in eval mode, and its input: batch
    1 at 224x224."""
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    return model, (torch.randn(1, 3, 224, 224),)


def mobilenet_v3_large_model():
    return torchvision_model("mobilenet_v3_large")


def efficientnet_b0_model():
    return torchvision_model("efficientnet_b0")


def vit_b_16_model():
    return torchvision_model("vit_b_16")


class TwoLayerLstm(nn.Module):
    """`nn.LSTM` with 2 layers (input and hidden 256), returning the last layer's outputs."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(256, 256, num_layers=2)

    def forward(self, x):
        return self.lstm(x)[0]


def lstm_2layer_model():
    """`TwoLayerLstm` (seed 0) and its input: 100 steps, batch 1."""
    torch.manual_seed(0)
    model = TwoLayerLstm().eval()
    return model, (torch.randn(100, 1, 256),)


class LstmCellLoop(nn.Module):
    """The eager twin of compare.py's scripted `lstm_cell_loop`: an LSTM cell (hidden 32) over
    the steps of the input. Traced for ONNX, the Python loop unrolls into 100 cells."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(32, 32)

    def forward(self, xs):
        h = torch.zeros(xs.size(1), 32)
        c = torch.zeros(xs.size(1), 32)
        for t in range(xs.size(0)):
            h, c = self.cell(xs[t], (h, c))
        return h


def lstm_cell_loop_eager(archive):
    """`LstmCellLoop` holding the weights of the saved TorchScript `lstm_cell_loop` archive."""
    model = LstmCellLoop().eval()
    model.load_state_dict(torch.jit.load(str(archive)).state_dict())
    return model


class GptBlock(nn.Module):
    """One pre-norm GPT-2 block that appends this step's keys and values to the cache."""

    def __init__(self):
        super().__init__()
        self.heads = GPT_HEADS
        self.norm1 = nn.LayerNorm(GPT_WIDTH)
        self.qkv = nn.Linear(GPT_WIDTH, 3 * GPT_WIDTH)
        self.proj = nn.Linear(GPT_WIDTH, GPT_WIDTH)
        self.norm2 = nn.LayerNorm(GPT_WIDTH)
        self.fc = nn.Linear(GPT_WIDTH, 4 * GPT_WIDTH)
        self.fc_out = nn.Linear(4 * GPT_WIDTH, GPT_WIDTH)

    def forward(self, x, past_k, past_v):
        b, s, d = x.shape
        head = d // self.heads
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q = q.view(b, s, self.heads, head).transpose(1, 2)
        k = torch.cat([past_k, k.view(b, s, self.heads, head).transpose(1, 2)], dim=2)
        v = torch.cat([past_v, v.view(b, s, self.heads, head).transpose(1, 2)], dim=2)
        total = k.size(2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head)
        # Query i sits at position total - s + i and sees the keys up to that position.
        rows = torch.arange(s).unsqueeze(1) + (total - s)
        cols = torch.arange(total).unsqueeze(0)
        scores = scores.masked_fill(cols > rows, float("-inf"))
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        x = x + self.proj(context.transpose(1, 2).reshape(b, s, d))
        x = x + self.fc_out(functional.gelu(self.fc(self.norm2(x)), approximate="tanh"))
        return x, k, v


class GptDecoder(nn.Module):
    """A GPT-2-width decoder (tied output embedding); `forward(prompt)` generates
    `GPT_NEW_TOKENS` tokens greedily and returns them, [1, 32] int64."""

    def __init__(self):
        super().__init__()
        # Attributes rather than the module's globals, which TorchScript cannot read.
        self.layers = GPT_LAYERS
        self.heads = GPT_HEADS
        self.head_width = GPT_WIDTH // GPT_HEADS
        self.new_tokens = GPT_NEW_TOKENS
        self.tokens = nn.Embedding(GPT_VOCAB, GPT_WIDTH)
        self.positions = nn.Embedding(GPT_POSITIONS, GPT_WIDTH)
        self.blocks = nn.ModuleList([GptBlock() for _ in range(GPT_LAYERS)])
        self.norm = nn.LayerNorm(GPT_WIDTH)
        # GPT-2's initial scale for the embeddings: at nn.Embedding's N(0, 1) the token's own
        # embedding dominates the residual stream and greedy decoding repeats the prompt's
        # last token, which would make the comparison of generated tokens a weak check.
        nn.init.normal_(self.tokens.weight, std=0.02)
        nn.init.normal_(self.positions.weight, std=0.01)

    def step(self, ids, past_k, past_v):
        """ids [1, S]; past_k, past_v [layers, 1, heads, T, 64]. Returns the logits of the last
        position [1, vocab] and the caches grown to T + S."""
        start = past_k.size(3)
        positions = torch.arange(ids.size(1)).unsqueeze(0) + start
        x = self.tokens(ids) + self.positions(positions)
        keys = []
        values = []
        for index, block in enumerate(self.blocks):
            x, k, v = block(x, past_k[index], past_v[index])
            keys.append(k)
            values.append(v)
        last = self.norm(x[:, -1])
        return functional.linear(last, self.tokens.weight), torch.stack(keys), torch.stack(values)

    def forward(self, prompt):
        empty = torch.zeros(self.layers, 1, self.heads, 0, self.head_width)
        logits, past_k, past_v = self.step(prompt, empty, empty)
        token = logits.argmax(dim=-1, keepdim=True)
        generated = [token]
        for _ in range(self.new_tokens - 1):
            logits, past_k, past_v = self.step(token, past_k, past_v)
            token = logits.argmax(dim=-1, keepdim=True)
            generated.append(token)
        return torch.cat(generated, dim=1)


class GptStep(nn.Module):
    """One decode step of a `GptDecoder`, as a module to export to ONNX."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, ids, past_k, past_v):
        return self.decoder.step(ids, past_k, past_v)


def gpt2_decoder_model():
    """`GptDecoder` (seed 0) and its input: a prompt of 8 random token ids."""
    torch.manual_seed(0)
    model = GptDecoder().eval()
    return model, (torch.randint(0, GPT_VOCAB, (1, GPT_PROMPT)),)


def export_gpt_step(model, path):
    """Exports `GptStep(model)` with dynamic token count and cache length."""
    cache = torch.zeros(GPT_LAYERS, 1, GPT_HEADS, 3, GPT_WIDTH // GPT_HEADS)
    torch.onnx.export(
        GptStep(model), (torch.zeros(1, 1, dtype=torch.long), cache, cache), str(path),
        input_names=["ids", "past_k", "past_v"],
        output_names=["logits", "present_k", "present_v"],
        dynamic_axes={
            "ids": {1: "new"},
            "past_k": {3: "past"},
            "past_v": {3: "past"},
            "present_k": {3: "total"},
            "present_v": {3: "total"},
        },
        opset_version=17, dynamo=False,
    )


def generate_with_steps(call, arrays):
    """Greedy generation for a runtime that runs the exported `GptStep`: `call(list of arrays)`
    returns its outputs (logits, present_k, present_v) as numpy arrays. The prompt goes in as
    one prefill step on an empty cache, then each new token on its own."""
    (prompt,) = arrays
    cache = np.zeros((GPT_LAYERS, 1, GPT_HEADS, 0, GPT_WIDTH // GPT_HEADS), dtype=np.float32)
    logits, past_k, past_v = call([prompt, cache, cache])
    token = logits.argmax(axis=-1).reshape(1, 1).astype(np.int64)
    generated = [token]
    for _ in range(GPT_NEW_TOKENS - 1):
        logits, past_k, past_v = call([token, past_k, past_v])
        token = logits.argmax(axis=-1).reshape(1, 1).astype(np.int64)
        generated.append(token)
    return np.concatenate(generated, axis=1)
