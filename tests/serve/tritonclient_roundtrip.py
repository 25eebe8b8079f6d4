"""The real-client round trip: NVIDIA's `tritonclient[http]` from PyPI talks to `ferrojit serve`
on loopback, and the results are checked against PyTorch's committed output for examples/mlp.pt.

Usage: python tests/serve/tritonclient_roundtrip.py FERROJIT_BINARY
Needs tritonclient[http] and numpy (not torch). Prints 'N passed, N failed'."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import tritonclient.http as httpclient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def load_case():
    with open(os.path.join(EXAMPLES, "mlp_inputs.json")) as f:
        inputs = json.load(f)["tuple"]
    with open(os.path.join(EXAMPLES, "mlp_expected.json")) as f:
        expected = json.load(f)["tensor"]
    x = np.array(inputs[0]["tensor"]["data"], dtype=np.float32).reshape(inputs[0]["tensor"]["shape"])
    scale = np.array([inputs[1]["float"]], dtype=np.float64)
    y = np.array(expected["data"], dtype=np.float32).reshape(expected["shape"])
    return x, scale, y


class Server:
    """`ferrojit serve` on a free loopback port; the port is read from its startup line."""

    def __init__(self, binary, *args):
        self.process = subprocess.Popen(
            [binary, "serve", os.path.join(EXAMPLES, "mlp.pt"), "--port", "0", *args],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines = []
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.process.stderr.readline()
            if not line:
                raise RuntimeError(f"the server exited: {''.join(self.lines)}")
            self.lines.append(line)
            found = re.search(r"http://([0-9.]+:[0-9]+)", line)
            if found:
                self.url = found.group(1)
                self.rest = threading.Thread(target=self._drain, daemon=True)
                self.rest.start()
                return
        raise RuntimeError("the server did not start in 120 s")

    def _drain(self):
        for line in self.process.stderr:
            self.lines.append(line)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self.rest.join(timeout=10)
        return code


def infer(client, x, scale, binary):
    inputs = [httpclient.InferInput("x", list(x.shape), "FP32"), httpclient.InferInput("scale", [1], "FP64")]
    inputs[0].set_data_from_numpy(x, binary_data=binary)
    inputs[1].set_data_from_numpy(scale, binary_data=binary)
    outputs = [httpclient.InferRequestedOutput("output__0", binary_data=binary)]
    return client.infer("mlp", inputs, outputs=outputs, request_id="42").as_numpy("output__0")


def main():
    binary = sys.argv[1]
    x, scale, y = load_case()
    results = []

    def check(name, condition, detail=""):
        results.append(bool(condition))
        print(f"{'ok  ' if condition else 'FAIL'} {name} {detail}")

    server = Server(binary)
    try:
        client = httpclient.InferenceServerClient(url=server.url)
        check("server live", client.is_server_live())
        check("server ready", client.is_server_ready())
        check("model ready", client.is_model_ready("mlp"))
        metadata = client.get_model_metadata("mlp")
        check("metadata names the inputs", [i["name"] for i in metadata["inputs"]] == ["x", "scale"], metadata)
        check("server metadata", client.get_server_metadata()["name"] == "ferrojit")
        for binary_data in (True, False):
            out = infer(client, x, scale, binary_data)
            check(
                f"infer (binary_data={binary_data}) matches PyTorch",
                out.shape == y.shape and np.allclose(out, y, rtol=1e-5, atol=1e-5),
                f"max diff {np.abs(out - y).max() if out.shape == y.shape else out.shape}",
            )
        try:
            client.get_model_metadata("missing")
            check("unknown model raises", False)
        except httpclient.InferenceServerException as error:
            check("unknown model raises", "no model 'missing'" in str(error), str(error))
    finally:
        code = server.stop()
    check("SIGTERM stops the server cleanly", code == 0, f"exit {code}")

    # Dynamic batching: concurrent single-row requests give the unbatched rows.
    server = Server(binary, "--max-batch-size", "8", "--max-queue-delay-ms", "50")
    try:
        client = httpclient.InferenceServerClient(url=server.url, concurrency=8)
        pending = [
            client.async_infer(
                "mlp",
                [
                    _input("x", x[i % 2 : i % 2 + 1], "FP32"),
                    _input("scale", scale, "FP64"),
                ],
            )
            for i in range(8)
        ]
        rows = [p.get_result().as_numpy("output__0") for p in pending]
        check(
            "8 concurrent requests, batched, match PyTorch row by row",
            all(np.allclose(r, y[i % 2 : i % 2 + 1], rtol=1e-5, atol=1e-5) for i, r in enumerate(rows)),
        )
    finally:
        code = server.stop()
    check("batching server stops cleanly", code == 0, f"exit {code}")

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


def _input(name, array, datatype):
    tensor = httpclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


if __name__ == "__main__":
    sys.exit(main())
